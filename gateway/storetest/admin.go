package storetest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

var adminTests = []test{
	{"PutWorkspaceCreatesAndReplaces", func(t *testing.T, s Store) {
		w := &gateway.Workspace{ID: "ws-a", Name: "Alpha", Slug: "alpha", OrgPlan: "team"}
		must(t, s.PutWorkspace(ctx(t), w), "create")
		if w.CreatedAt.IsZero() {
			t.Fatal("PutWorkspace did not set CreatedAt")
		}
		created := w.CreatedAt
		w2 := &gateway.Workspace{ID: "ws-a", Name: "Alpha 2", Slug: "alpha-2", OrgPlan: "enterprise"}
		must(t, s.PutWorkspace(ctx(t), w2), "replace")
		if !w2.CreatedAt.Equal(created) {
			t.Errorf("replace changed CreatedAt from %v to %v", created, w2.CreatedAt)
		}
		got := loadAs(t, s, "ws-a", "", "", "").Workspace
		want := gateway.Workspace{ID: "ws-a", Name: "Alpha 2", Slug: "alpha-2", OrgPlan: "enterprise"}
		if got.ID != want.ID || got.Name != want.Name || got.Slug != want.Slug || got.OrgPlan != want.OrgPlan {
			t.Errorf("workspace = %+v, want %+v", *got, want)
		}
		if !got.CreatedAt.Equal(created) {
			t.Errorf("loaded CreatedAt %v, want %v", got.CreatedAt, created)
		}
	}},
	{"PutWorkspaceRejectsBadInput", func(t *testing.T, s Store) {
		must(t, s.PutWorkspace(ctx(t), &gateway.Workspace{ID: "ws-a", Name: "Alpha", Slug: "shared"}), "ws-a")
		must(t, s.PutWorkspace(ctx(t), &gateway.Workspace{ID: "ws-b", Name: "Beta", Slug: "beta"}), "ws-b")
		for _, tc := range []struct {
			name string
			w    gateway.Workspace
			code gateway.ErrorCode
		}{
			{"empty id", gateway.Workspace{ID: "", Name: "x"}, gateway.EInvalid},
			{"slug of another workspace", gateway.Workspace{ID: "ws-b", Name: "Beta 2", Slug: "shared"}, gateway.EConflict},
			{"new workspace with a taken slug", gateway.Workspace{ID: "ws-c", Slug: "shared"}, gateway.EConflict},
			{"two workspaces without slug", gateway.Workspace{ID: "ws-d", Slug: ""}, ""},
			{"another without slug", gateway.Workspace{ID: "ws-e", Slug: ""}, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wantCode(t, s.PutWorkspace(ctx(t), &tc.w), tc.code, "PutWorkspace")
			})
		}
		got := loadAs(t, s, "ws-b", "", "", "").Workspace
		if got.Name != "Beta" || got.Slug != "beta" {
			t.Errorf("refused replace changed ws-b to %+v", *got)
		}
	}},
	{"WorkspaceFlowRules", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		putWorkspace(t, s, "ws-b")
		// flowRules reads the switch every way the store returns a workspace.
		flowRules := func(ws string) [3]bool {
			t.Helper()
			w, err := s.Workspace(ctx(t), ws)
			must(t, err, "Workspace")
			list, err := s.ListWorkspaces(ctx(t), "", 10)
			must(t, err, "ListWorkspaces")
			listed := false
			for _, l := range list {
				if l.ID == ws {
					listed = l.FlowRules
				}
			}
			return [3]bool{w.FlowRules, listed, loadAs(t, s, ws, "", "", "").Workspace.FlowRules}
		}
		if got := flowRules("ws-a"); got != [3]bool{} {
			t.Fatalf("a new workspace's flow rules (Workspace, ListWorkspaces, LoadCaller) = %v, want all off", got)
		}
		must(t, s.SetWorkspaceFlowRules(ctx(t), "ws-a", true), "switch on")
		if got := flowRules("ws-a"); got != [3]bool{true, true, true} {
			t.Fatalf("after switching on: %v, want all on", got)
		}
		if got := flowRules("ws-b"); got != [3]bool{} {
			t.Errorf("switching ws-a on changed ws-b: %v", got)
		}
		w := &gateway.Workspace{ID: "ws-a", Name: "Renamed", OrgPlan: "team"}
		must(t, s.PutWorkspace(ctx(t), w), "replace")
		if !w.FlowRules || flowRules("ws-a") != [3]bool{true, true, true} {
			t.Errorf("PutWorkspace dropped the switch: returned %v, stored %v", w.FlowRules, flowRules("ws-a"))
		}
		must(t, s.SetWorkspaceFlowRules(ctx(t), "ws-a", false), "switch off")
		if got := flowRules("ws-a"); got != [3]bool{} {
			t.Errorf("after switching off: %v, want all off", got)
		}
		wantNotFound(t, s.SetWorkspaceFlowRules(ctx(t), "ws-9", true), "SetWorkspaceFlowRules", "workspace")
	}},
	{"PutMember", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		m := &gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: gateway.RoleMember, SeatType: "standard"}
		must(t, s.PutMember(ctx(t), m), "create")
		must(t, s.PutMember(ctx(t), &gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: gateway.RoleAdmin,
			SeatType: "power"}), "replace")
		got := loadAs(t, s, "ws-a", "u1", "", "").Member
		want := gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: gateway.RoleAdmin, SeatType: "power"}
		if got == nil || *got != want {
			t.Fatalf("member = %+v, want %+v", got, want)
		}
		for _, tc := range []struct {
			name string
			m    gateway.Member
			code gateway.ErrorCode
		}{
			{"unknown workspace", gateway.Member{WorkspaceID: "ws-9", UserID: "u1", Role: "owner"}, gateway.ENotFound},
			{"invalid role", gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: "superuser"}, gateway.EInvalid},
			{"empty role", gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: ""}, gateway.EInvalid},
			{"empty user", gateway.Member{WorkspaceID: "ws-a", UserID: "", Role: "owner"}, gateway.EInvalid},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wantCode(t, s.PutMember(ctx(t), &tc.m), tc.code, "PutMember")
			})
		}
		if got := loadAs(t, s, "ws-a", "u1", "", "").Member; got == nil || *got != want {
			t.Errorf("after refused writes member = %+v, want it intact: %+v", got, want)
		}
	}},
	{"NotFoundNamesTheParent", func(t *testing.T, s Store) {
		err := s.PutMember(ctx(t), &gateway.Member{WorkspaceID: "ws-9", UserID: "u1", Role: "owner"})
		wantCode(t, err, gateway.ENotFound, "PutMember")
		msg := gateway.ErrorMessageOf(err)
		for _, part := range []string{"ws-9", "PUT /admin/v1/workspaces/ws-9"} {
			if !strings.Contains(msg, part) {
				t.Errorf("message %q does not mention %q", msg, part)
			}
		}
	}},
	{"PermissionOverrides", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		putWorkspace(t, s, "ws-b")
		must(t, s.PutMember(ctx(t), &gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: "member"}), "member")
		must(t, s.PutMember(ctx(t), &gateway.Member{WorkspaceID: "ws-b", UserID: "u1", Role: "member"}), "member b")
		must(t, s.PutWorkspaceOverrides(ctx(t), "ws-a", gateway.Permissions{"a": true, "b": false}), "ws first")
		must(t, s.PutWorkspaceOverrides(ctx(t), "ws-a", gateway.Permissions{"b": true, "c": false}), "ws replace")
		must(t, s.PutMemberOverrides(ctx(t), "ws-a", "u1", gateway.Permissions{"x": true}), "member first")
		must(t, s.PutMemberOverrides(ctx(t), "ws-a", "u1", gateway.Permissions{"y": false, "z": true}), "member replace")
		must(t, s.PutMemberOverrides(ctx(t), "ws-b", "u1", gateway.Permissions{"other": true}), "member of ws-b")

		c := loadAs(t, s, "ws-a", "u1", "", "")
		wantPerms(t, "workspace overrides", c.WorkspaceOverrides, gateway.Permissions{"b": true, "c": false})
		wantPerms(t, "member overrides", c.UserOverrides, gateway.Permissions{"y": false, "z": true})
		wantPerms(t, "ws-b workspace overrides", loadAs(t, s, "ws-b", "u1", "", "").WorkspaceOverrides, nil)
		wantPerms(t, "another user's overrides", loadAs(t, s, "ws-a", "u2", "", "").UserOverrides, nil)

		for _, tc := range []struct {
			name string
			err  error
			code gateway.ErrorCode
		}{
			{"workspace overrides of unknown workspace", s.PutWorkspaceOverrides(ctx(t), "ws-9", gateway.Permissions{"a": true}), gateway.ENotFound},
			{"empty overrides of unknown workspace", s.PutWorkspaceOverrides(ctx(t), "ws-9", nil), gateway.ENotFound},
			{"member overrides of unknown member", s.PutMemberOverrides(ctx(t), "ws-a", "u9", gateway.Permissions{"a": true}), gateway.ENotFound},
			{"empty overrides of unknown member", s.PutMemberOverrides(ctx(t), "ws-a", "u9", gateway.Permissions{}), gateway.ENotFound},
			{"member overrides of unknown workspace", s.PutMemberOverrides(ctx(t), "ws-9", "u1", gateway.Permissions{"a": true}), gateway.ENotFound},
			{"empty permission key", s.PutWorkspaceOverrides(ctx(t), "ws-a", gateway.Permissions{"": true}), gateway.EInvalid},
		} {
			t.Run(tc.name, func(t *testing.T) { wantCode(t, tc.err, tc.code, tc.name) })
		}
		c = loadAs(t, s, "ws-a", "u1", "", "")
		wantPerms(t, "workspace overrides after refused writes", c.WorkspaceOverrides, gateway.Permissions{"b": true, "c": false})

		must(t, s.PutWorkspaceOverrides(ctx(t), "ws-a", gateway.Permissions{}), "clear ws")
		must(t, s.PutMemberOverrides(ctx(t), "ws-a", "u1", nil), "clear member")
		c = loadAs(t, s, "ws-a", "u1", "", "")
		wantPerms(t, "cleared workspace overrides", c.WorkspaceOverrides, nil)
		wantPerms(t, "cleared member overrides", c.UserOverrides, nil)
	}},
	{"SeatTypesAndOrgPlans", func(t *testing.T, s Store) {
		must(t, s.PutWorkspace(ctx(t), &gateway.Workspace{ID: "ws-a", OrgPlan: "team"}), "ws")
		must(t, s.PutMember(ctx(t), &gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: "member", SeatType: "analyst"}), "member")
		must(t, s.PutSeatType(ctx(t), &gateway.SeatType{Name: "analyst", Permissions: gateway.Permissions{"p": true}}), "seat")
		must(t, s.PutSeatType(ctx(t), &gateway.SeatType{Name: "analyst", EnterpriseOnly: true,
			Permissions: gateway.Permissions{"q": false}}), "seat replace")
		must(t, s.PutOrgPlan(ctx(t), &gateway.OrgPlan{Name: "team", Permissions: gateway.Permissions{"r": true}}), "plan")
		must(t, s.PutOrgPlan(ctx(t), &gateway.OrgPlan{Name: "team"}), "plan replace with no permissions")

		c := loadAs(t, s, "ws-a", "u1", "", "")
		if c.SeatType == nil || c.SeatType.Name != "analyst" || !c.SeatType.EnterpriseOnly {
			t.Fatalf("seat type = %+v, want analyst, enterprise only", c.SeatType)
		}
		wantPerms(t, "seat permissions", c.SeatType.Permissions, gateway.Permissions{"q": false})
		if c.OrgPlan == nil || c.OrgPlan.Name != "team" {
			t.Fatalf("org plan = %+v, want team", c.OrgPlan)
		}
		wantPerms(t, "plan permissions", c.OrgPlan.Permissions, nil)

		wantCode(t, s.PutSeatType(ctx(t), &gateway.SeatType{Name: ""}), gateway.EInvalid, "seat without name")
		wantCode(t, s.PutOrgPlan(ctx(t), &gateway.OrgPlan{Name: ""}), gateway.EInvalid, "plan without name")
	}},
	{"Tasks", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		putWorkspace(t, s, "ws-b")
		task := &gateway.Task{WorkspaceID: "ws-a", ID: "t1", Status: gateway.TaskRunning}
		must(t, s.PutTask(ctx(t), task), "create")
		first := task.UpdatedAt
		if first.IsZero() {
			t.Fatal("PutTask did not set UpdatedAt")
		}
		time.Sleep(2 * time.Millisecond)
		task = &gateway.Task{WorkspaceID: "ws-a", ID: "t1", Status: gateway.TaskCompleted}
		must(t, s.PutTask(ctx(t), task), "replace")
		if !task.UpdatedAt.After(first) {
			t.Errorf("replace kept UpdatedAt %v (first %v)", task.UpdatedAt, first)
		}
		for _, tc := range []struct {
			name string
			t    gateway.Task
			code gateway.ErrorCode
		}{
			{"invalid status", gateway.Task{WorkspaceID: "ws-a", ID: "t1", Status: "paused"}, gateway.EInvalid},
			{"unknown workspace", gateway.Task{WorkspaceID: "ws-9", ID: "t1", Status: "running"}, gateway.ENotFound},
			{"empty id", gateway.Task{WorkspaceID: "ws-a", ID: "", Status: "running"}, gateway.EInvalid},
			{"same id in another workspace", gateway.Task{WorkspaceID: "ws-b", ID: "t1", Status: "failed"}, ""},
		} {
			t.Run(tc.name, func(t *testing.T) { wantCode(t, s.PutTask(ctx(t), &tc.t), tc.code, "PutTask") })
		}
		got := loadAs(t, s, "ws-a", "", "", "t1").Task
		if got == nil || got.ID != "t1" || got.WorkspaceID != "ws-a" || got.Status != gateway.TaskCompleted {
			t.Fatalf("task = %+v, want t1 of ws-a completed", got)
		}
		if !got.UpdatedAt.Equal(task.UpdatedAt) {
			t.Errorf("loaded UpdatedAt %v, want %v", got.UpdatedAt, task.UpdatedAt)
		}
		if got := loadAs(t, s, "ws-b", "", "", "t1").Task; got == nil || got.Status != gateway.TaskFailed {
			t.Errorf("ws-b task = %+v, want its own t1 (failed)", got)
		}
	}},
	{"ExternalLimits", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		l, err := s.ExternalLimits(ctx(t), "ws-a")
		must(t, err, "get before put")
		if l.ReadsPerToolHourly != nil || l.OpsPerTokenHourly != nil {
			t.Errorf("limits before any put = %+v, want both nil (defaults)", l)
		}
		must(t, s.PutExternalLimits(ctx(t), "ws-a", gateway.ExternalLimits{ReadsPerToolHourly: ptr(20), OpsPerTokenHourly: ptr(5)}), "put")
		must(t, s.PutExternalLimits(ctx(t), "ws-a", gateway.ExternalLimits{OpsPerTokenHourly: ptr(0)}), "replace")
		for _, tc := range []struct {
			name string
			ws   string
			l    gateway.ExternalLimits
			code gateway.ErrorCode
		}{
			{"negative reads", "ws-a", gateway.ExternalLimits{ReadsPerToolHourly: ptr(-1)}, gateway.EInvalid},
			{"negative ops", "ws-a", gateway.ExternalLimits{OpsPerTokenHourly: ptr(-5)}, gateway.EInvalid},
			{"unknown workspace", "ws-9", gateway.ExternalLimits{}, gateway.ENotFound},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wantCode(t, s.PutExternalLimits(ctx(t), tc.ws, tc.l), tc.code, "PutExternalLimits")
			})
		}
		l, err = s.ExternalLimits(ctx(t), "ws-a")
		must(t, err, "get")
		if l.ReadsPerToolHourly != nil || l.OpsPerTokenHourly == nil || *l.OpsPerTokenHourly != 0 {
			t.Errorf("limits = reads %v ops %v, want reads nil, ops 0", l.ReadsPerToolHourly, l.OpsPerTokenHourly)
		}
		_, err = s.ExternalLimits(ctx(t), "ws-9")
		wantCode(t, err, gateway.ENotFound, "get of unknown workspace")
	}},
	{"ReadBackWorkspaces", func(t *testing.T, s Store) {
		for _, id := range []string{"ws-c", "ws-a", "ws-b"} {
			must(t, s.PutWorkspace(ctx(t), &gateway.Workspace{ID: id, Name: "W " + id, Slug: id, OrgPlan: "team"}), id)
		}
		w, err := s.Workspace(ctx(t), "ws-b")
		must(t, err, "Workspace")
		if w.ID != "ws-b" || w.Name != "W ws-b" || w.Slug != "ws-b" || w.OrgPlan != "team" || w.CreatedAt.IsZero() {
			t.Errorf("Workspace = %+v", *w)
		}
		_, err = s.Workspace(ctx(t), "ws-9")
		wantNotFound(t, err, "Workspace of unknown", "PUT /admin/v1/workspaces/ws-9")
		first, err := s.ListWorkspaces(ctx(t), "", 2)
		must(t, err, "first page")
		rest, err := s.ListWorkspaces(ctx(t), "ws-b", 2)
		must(t, err, "second page")
		if got := append(workspaceIDs(first), workspaceIDs(rest)...); !slices.Equal(got, []string{"ws-a", "ws-b", "ws-c"}) {
			t.Errorf("pages = %v, want ws-a ws-b | ws-c", got)
		}
	}},
	{"ReadBackMembers", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		putWorkspace(t, s, "ws-b")
		putWorkspace(t, s, "ws-empty")
		for _, u := range []string{"u2", "u1"} {
			must(t, s.PutMember(ctx(t), &gateway.Member{WorkspaceID: "ws-a", UserID: u, Role: "member", SeatType: "analyst"}), u)
		}
		must(t, s.PutMember(ctx(t), &gateway.Member{WorkspaceID: "ws-b", UserID: "u9", Role: "owner"}), "u9")
		list, err := s.ListMembers(ctx(t), "ws-a")
		must(t, err, "ListMembers")
		want := []gateway.Member{{WorkspaceID: "ws-a", UserID: "u1", Role: "member", SeatType: "analyst"},
			{WorkspaceID: "ws-a", UserID: "u2", Role: "member", SeatType: "analyst"}}
		if !slices.Equal(list, want) {
			t.Errorf("ListMembers = %+v, want %+v", list, want)
		}
		if list, err := s.ListMembers(ctx(t), "ws-empty"); err != nil || len(list) != 0 {
			t.Errorf("members of an empty workspace = %v, %v; want none, no error", list, err)
		}
		_, err = s.ListMembers(ctx(t), "ws-9")
		wantNotFound(t, err, "ListMembers of unknown workspace", "PUT /admin/v1/workspaces/ws-9")
		m, err := s.Member(ctx(t), "ws-a", "u2")
		must(t, err, "Member")
		if *m != want[1] {
			t.Errorf("Member = %+v, want %+v", *m, want[1])
		}
		_, err = s.Member(ctx(t), "ws-a", "u9")
		wantNotFound(t, err, "member of another workspace", "PUT /admin/v1/workspaces/ws-a/members/u9")
		_, err = s.Member(ctx(t), "ws-9", "u1")
		wantNotFound(t, err, "member of unknown workspace", "PUT /admin/v1/workspaces/ws-9")
	}},
	{"DeleteMember", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		putWorkspace(t, s, "ws-b")
		for _, ws := range []string{"ws-a", "ws-b"} {
			must(t, s.PutMember(ctx(t), &gateway.Member{WorkspaceID: ws, UserID: "u1", Role: "admin"}), ws)
			must(t, s.PutMemberOverrides(ctx(t), ws, "u1", gateway.Permissions{"x": true}), ws)
		}
		must(t, s.DeleteMember(ctx(t), "ws-a", "u1"), "DeleteMember")
		if c := loadAs(t, s, "ws-a", "u1", "", ""); c.Member != nil || len(c.UserOverrides) != 0 {
			t.Errorf("after delete: member %+v, overrides %v; want both gone", c.Member, c.UserOverrides)
		}
		if c := loadAs(t, s, "ws-b", "u1", "", ""); c.Member == nil || !c.UserOverrides["x"] {
			t.Errorf("ws-b's u1 was touched: %+v %v", c.Member, c.UserOverrides)
		}
		wantNotFound(t, s.DeleteMember(ctx(t), "ws-a", "u1"), "delete again", "members/u1")
		wantNotFound(t, s.DeleteMember(ctx(t), "ws-9", "u1"), "unknown workspace", "PUT /admin/v1/workspaces/ws-9")
		// Adding the member back starts with no overrides.
		must(t, s.PutMember(ctx(t), &gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: "member"}), "re-add")
		if o, err := s.MemberOverrides(ctx(t), "ws-a", "u1"); err != nil || len(o) != 0 {
			t.Errorf("re-added member's overrides = %v, %v; want {}", o, err)
		}
	}},
	{"ReadAndDeleteOverrides", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		must(t, s.PutMember(ctx(t), &gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: "member"}), "member")
		o, err := s.WorkspaceOverrides(ctx(t), "ws-a")
		must(t, err, "empty workspace overrides")
		if o == nil || len(o) != 0 {
			t.Errorf("overrides before any = %#v, want an empty map", o)
		}
		must(t, s.PutWorkspaceOverrides(ctx(t), "ws-a", gateway.Permissions{"a.b": true, "c": false}), "put ws")
		must(t, s.PutMemberOverrides(ctx(t), "ws-a", "u1", gateway.Permissions{"x.*": false, "y": true}), "put member")
		o, err = s.WorkspaceOverrides(ctx(t), "ws-a")
		must(t, err, "WorkspaceOverrides")
		wantPerms(t, "workspace overrides", o, gateway.Permissions{"a.b": true, "c": false})
		o, err = s.MemberOverrides(ctx(t), "ws-a", "u1")
		must(t, err, "MemberOverrides")
		wantPerms(t, "member overrides", o, gateway.Permissions{"x.*": false, "y": true})

		must(t, s.DeleteWorkspaceOverride(ctx(t), "ws-a", "c"), "delete ws key")
		must(t, s.DeleteMemberOverride(ctx(t), "ws-a", "u1", "x.*"), "delete member key")
		c := loadAs(t, s, "ws-a", "u1", "", "")
		wantPerms(t, "workspace overrides after delete", c.WorkspaceOverrides, gateway.Permissions{"a.b": true})
		wantPerms(t, "member overrides after delete", c.UserOverrides, gateway.Permissions{"y": true})

		wantNotFound(t, s.DeleteWorkspaceOverride(ctx(t), "ws-a", "c"), "deleted key", "GET /admin/v1/workspaces/ws-a/permission-overrides")
		wantNotFound(t, s.DeleteWorkspaceOverride(ctx(t), "ws-9", "a.b"), "unknown workspace", "PUT /admin/v1/workspaces/ws-9")
		wantNotFound(t, s.DeleteMemberOverride(ctx(t), "ws-a", "u1", "x.*"), "deleted member key", "members/u1/permission-overrides")
		wantNotFound(t, s.DeleteMemberOverride(ctx(t), "ws-a", "u9", "y"), "unknown member", "PUT /admin/v1/workspaces/ws-a/members/u9")
		_, err = s.WorkspaceOverrides(ctx(t), "ws-9")
		wantNotFound(t, err, "overrides of unknown workspace", "PUT /admin/v1/workspaces/ws-9")
		_, err = s.MemberOverrides(ctx(t), "ws-a", "u9")
		wantNotFound(t, err, "overrides of unknown member", "members/u9")
	}},
	{"ReadAndDeleteSeatTypes", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		must(t, s.PutSeatType(ctx(t), &gateway.SeatType{Name: "viewer", Permissions: gateway.Permissions{"v": true}}), "viewer")
		must(t, s.PutSeatType(ctx(t), &gateway.SeatType{Name: "analyst", EnterpriseOnly: true}), "analyst")
		must(t, s.PutMember(ctx(t), &gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: "member", SeatType: "analyst"}), "u1")
		list, err := s.ListSeatTypes(ctx(t))
		must(t, err, "ListSeatTypes")
		if len(list) != 2 || list[0].Name != "analyst" || !list[0].EnterpriseOnly || list[1].Name != "viewer" {
			t.Fatalf("ListSeatTypes = %+v, want analyst (enterprise only), viewer", list)
		}
		wantPerms(t, "viewer permissions", list[1].Permissions, gateway.Permissions{"v": true})
		if list[0].Permissions == nil {
			t.Error("seat type without permissions has nil Permissions; want {}")
		}
		st, err := s.SeatType(ctx(t), "viewer")
		must(t, err, "SeatType")
		if st.Name != "viewer" || st.EnterpriseOnly || !st.Permissions["v"] {
			t.Errorf("SeatType = %+v", *st)
		}
		_, err = s.SeatType(ctx(t), "gold")
		wantNotFound(t, err, "unknown seat type", "PUT /admin/v1/seat-types/gold")

		err = s.DeleteSeatType(ctx(t), "analyst")
		wantCode(t, err, gateway.EConflict, "delete a held seat type")
		for _, part := range []string{"1 member", "ws-a/u1", "PUT /admin/v1/workspaces/{ws}/members/{user}"} {
			if !strings.Contains(gateway.ErrorMessageOf(err), part) {
				t.Errorf("refusal %q does not mention %q", gateway.ErrorMessageOf(err), part)
			}
		}
		if _, err := s.SeatType(ctx(t), "analyst"); err != nil {
			t.Errorf("refused delete removed the seat type: %v", err)
		}
		must(t, s.DeleteSeatType(ctx(t), "viewer"), "delete unused")
		wantNotFound(t, s.DeleteSeatType(ctx(t), "viewer"), "delete again", "PUT /admin/v1/seat-types/viewer")
		must(t, s.PutMember(ctx(t), &gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: "member"}), "move u1 off")
		must(t, s.DeleteSeatType(ctx(t), "analyst"), "delete once unused")
		if list, err := s.ListSeatTypes(ctx(t)); err != nil || len(list) != 0 {
			t.Errorf("seat types after deletes = %v, %v; want none", list, err)
		}
	}},
	{"ReadAndDeleteOrgPlans", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a") // on plan "team"
		putWorkspace(t, s, "ws-b")
		must(t, s.PutOrgPlan(ctx(t), &gateway.OrgPlan{Name: "team", Permissions: gateway.Permissions{"t": true}}), "team")
		must(t, s.PutOrgPlan(ctx(t), &gateway.OrgPlan{Name: "free"}), "free")
		list, err := s.ListOrgPlans(ctx(t))
		must(t, err, "ListOrgPlans")
		if len(list) != 2 || list[0].Name != "free" || list[1].Name != "team" || !list[1].Permissions["t"] || list[0].Permissions == nil {
			t.Fatalf("ListOrgPlans = %+v, want free ({}), team", list)
		}
		o, err := s.OrgPlan(ctx(t), "team")
		must(t, err, "OrgPlan")
		wantPerms(t, "team permissions", o.Permissions, gateway.Permissions{"t": true})
		_, err = s.OrgPlan(ctx(t), "gold")
		wantNotFound(t, err, "unknown plan", "PUT /admin/v1/org-plans/gold")

		err = s.DeleteOrgPlan(ctx(t), "team")
		wantCode(t, err, gateway.EConflict, "delete a plan in use")
		for _, part := range []string{"2 workspaces", "ws-a, ws-b", "org_plan"} {
			if !strings.Contains(gateway.ErrorMessageOf(err), part) {
				t.Errorf("refusal %q does not mention %q", gateway.ErrorMessageOf(err), part)
			}
		}
		must(t, s.DeleteOrgPlan(ctx(t), "free"), "delete unused")
		wantNotFound(t, s.DeleteOrgPlan(ctx(t), "free"), "delete again", "PUT /admin/v1/org-plans/free")
		if _, err := s.OrgPlan(ctx(t), "team"); err != nil {
			t.Errorf("refused delete removed the plan: %v", err)
		}
	}},
	{"ReadBackTasks", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		putWorkspace(t, s, "ws-b")
		putWorkspace(t, s, "ws-empty")
		for i, st := range []string{"running", "completed", "running", "failed"} {
			must(t, s.PutTask(ctx(t), &gateway.Task{WorkspaceID: "ws-a", ID: fmt.Sprintf("t%d", 4-i), Status: st}), "task")
		}
		put := &gateway.Task{WorkspaceID: "ws-b", ID: "t1", Status: "cancelled"}
		must(t, s.PutTask(ctx(t), put), "ws-b task")
		got, err := s.Task(ctx(t), "ws-b", "t1")
		must(t, err, "Task")
		if got.WorkspaceID != "ws-b" || got.ID != "t1" || got.Status != "cancelled" || !got.UpdatedAt.Equal(put.UpdatedAt) {
			t.Errorf("Task = %+v, want %+v", *got, *put)
		}
		_, err = s.Task(ctx(t), "ws-a", "t9")
		wantNotFound(t, err, "unknown task", "PUT /admin/v1/workspaces/ws-a/tasks/t9")
		_, err = s.Task(ctx(t), "ws-9", "t1")
		wantNotFound(t, err, "task of unknown workspace", "PUT /admin/v1/workspaces/ws-9")

		for _, tc := range []struct {
			status, after string
			limit         int
			want          []string
		}{
			{"", "", 100, []string{"t1", "t2", "t3", "t4"}},
			{"", "", 2, []string{"t1", "t2"}},
			{"", "t2", 2, []string{"t3", "t4"}},
			{"running", "", 100, []string{"t2", "t4"}},
			{"running", "t2", 100, []string{"t4"}},
			{"cancelled", "", 100, nil},
		} {
			list, err := s.ListTasks(ctx(t), "ws-a", tc.status, tc.after, tc.limit)
			must(t, err, "ListTasks")
			var ids []string
			for _, tk := range list {
				if tk.WorkspaceID != "ws-a" || tk.UpdatedAt.IsZero() {
					t.Errorf("listed %+v", tk)
				}
				ids = append(ids, tk.ID)
			}
			if !slices.Equal(ids, tc.want) {
				t.Errorf("ListTasks(status %q, after %q, limit %d) = %v, want %v", tc.status, tc.after, tc.limit, ids, tc.want)
			}
		}
		if list, err := s.ListTasks(ctx(t), "ws-empty", "", "", 10); err != nil || len(list) != 0 {
			t.Errorf("tasks of an empty workspace = %v, %v", list, err)
		}
		_, err = s.ListTasks(ctx(t), "ws-9", "", "", 10)
		wantNotFound(t, err, "tasks of unknown workspace", "PUT /admin/v1/workspaces/ws-9")
	}},
	{"Ping", func(t *testing.T, s Store) { must(t, s.Ping(ctx(t)), "Ping") }},
}

// wantPerms compares permission sets, treating nil and empty as equal.
func wantPerms(t *testing.T, what string, got, want gateway.Permissions) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !maps.Equal(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// wantNotFound fails t unless err is ENotFound with a message naming part
// (what to create or where to look).
func wantNotFound(t *testing.T, err error, what, part string) {
	t.Helper()
	wantCode(t, err, gateway.ENotFound, what)
	if msg := gateway.ErrorMessageOf(err); !strings.Contains(msg, part) {
		t.Errorf("%s: message %q does not mention %q", what, msg, part)
	}
}

// workspaceIDs returns the ids of ws, in order.
func workspaceIDs(ws []gateway.Workspace) []string {
	ids := make([]string, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	return ids
}
