package storetest

import (
	"maps"
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
