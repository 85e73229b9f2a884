package storetest

import (
	"slices"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

var membershipTests = []test{
	{"UserWorkspaces", func(t *testing.T, s Store) {
		seedTwoWorkspaces(t, s)
		putWorkspace(t, s, "ws-c")
		got, err := s.UserWorkspaces(ctx(t), "u1")
		must(t, err, "u1")
		if want := []string{"ws-a", "ws-b"}; !slices.Equal(got, want) {
			t.Errorf("UserWorkspaces(u1) = %v, want %v (sorted, not ws-c)", got, want)
		}
		none, err := s.UserWorkspaces(ctx(t), "nobody")
		must(t, err, "nobody")
		if none == nil || len(none) != 0 {
			t.Errorf("UserWorkspaces(nobody) = %#v, want an empty list", none)
		}
		must(t, s.DeleteMember(ctx(t), "ws-b", "u1"), "delete u1@b")
		got, err = s.UserWorkspaces(ctx(t), "u1")
		must(t, err, "u1 after delete")
		if want := []string{"ws-a"}; !slices.Equal(got, want) {
			t.Errorf("after leaving ws-b, UserWorkspaces(u1) = %v, want %v", got, want)
		}
	}},
	{"LoadMemberships", func(t *testing.T, s Store) {
		seedTwoWorkspaces(t, s)
		c, err := s.LoadMemberships(ctx(t), &gateway.Principal{Kind: gateway.PrincipalUser, Subject: "u1"})
		must(t, err, "user")
		if want := []string{"ws-a", "ws-b"}; !slices.Equal(c.Memberships, want) {
			t.Errorf("a user's memberships = %v, want %v", c.Memberships, want)
		}
		c, err = s.LoadMemberships(ctx(t), &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "u1", WorkspaceID: "ws-a"})
		must(t, err, "pinned agent")
		if c.Memberships != nil {
			t.Errorf("a pinned agent's memberships = %v, want none read", c.Memberships)
		}
		if c.FlowRulesIn != nil {
			t.Errorf("flow rules on in %v before any workspace switched them on", c.FlowRulesIn)
		}
		// The switch shows for the pinned workspace, and for a user's
		// workspace among its memberships, only while on.
		must(t, s.SetWorkspaceFlowRules(ctx(t), "ws-b", true), "switch ws-b on")
		user := &gateway.Principal{Kind: gateway.PrincipalUser, Subject: "u1"}
		for _, tc := range []struct {
			p    *gateway.Principal
			want []string
		}{
			{user, []string{"ws-b"}},
			{&gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "u1", WorkspaceID: "ws-b"}, []string{"ws-b"}},
			{&gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "u1", WorkspaceID: "ws-a"}, nil},
		} {
			c, err = s.LoadMemberships(ctx(t), tc.p)
			must(t, err, "after the switch")
			if !slices.Equal(c.FlowRulesIn, tc.want) || c.FlowRulesOn("ws-b") != (tc.want != nil) {
				t.Errorf("%s in %q: FlowRulesIn = %v, want %v", tc.p.Subject, tc.p.WorkspaceID, c.FlowRulesIn, tc.want)
			}
		}
		must(t, s.SetWorkspaceFlowRules(ctx(t), "ws-b", false), "switch ws-b off")
		if c, err = s.LoadMemberships(ctx(t), user); err != nil || c.FlowRulesIn != nil {
			t.Errorf("switched off: FlowRulesIn = %v (%v), want none", c.FlowRulesIn, err)
		}
	}},
	{"AuditSurfaceModeApproval", func(t *testing.T, s Store) {
		ev := event(1, "ws-a", "", "close_ticket", gateway.AuditAllowed)
		ev.Tier, ev.PrincipalKind = "", gateway.PrincipalUser
		ev.Surface, ev.Mode, ev.ApprovalID = gateway.SurfaceCCServer, "plan", "apr-1"
		res, err := s.Reserve(ctx(t), gateway.Reservation{Event: ev})
		must(t, err, "reserve")
		ev.ID = res.AuditID
		ev.Open = true // a reservation's row is open until FinishAudit
		other := event(2, "ws-a", "t1", "app.list", gateway.AuditDenied)
		other.Surface = gateway.SurfaceSupaCloud
		must(t, s.RecordAudit(ctx(t), other), "record")
		list, err := s.ListAuditEvents(ctx(t), gateway.AuditFilter{WorkspaceID: "ws-a"})
		must(t, err, "list")
		if len(list) != 2 {
			t.Fatalf("listed %d events, want 2", len(list))
		}
		wantEvent(t, list[1], ev)
		wantEvent(t, list[0], other)
	}},
}
