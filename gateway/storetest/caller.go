package storetest

import (
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

// seedTwoWorkspaces writes a fixture with two workspaces that reuse ids:
// both have a profile "shared" and a task "t1"; only ws-b has profile
// "b-only"; u1 is an admin of ws-a (seat "analyst") and a viewer of ws-b.
func seedTwoWorkspaces(t testing.TB, s Store) {
	t.Helper()
	c := ctx(t)
	must(t, s.PutOrgPlan(c, &gateway.OrgPlan{Name: "team", Permissions: gateway.Permissions{"plan.perm": true}}), "plan")
	must(t, s.PutSeatType(c, &gateway.SeatType{Name: "analyst", Permissions: gateway.Permissions{"seat.perm": true}}), "seat")
	must(t, s.PutWorkspace(c, &gateway.Workspace{ID: "ws-a", Name: "A", Slug: "a", OrgPlan: "team"}), "ws-a")
	must(t, s.PutWorkspace(c, &gateway.Workspace{ID: "ws-b", Name: "B", Slug: "b", OrgPlan: "unknown-plan"}), "ws-b")
	must(t, s.PutMember(c, &gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: "admin", SeatType: "analyst"}), "u1@a")
	must(t, s.PutMember(c, &gateway.Member{WorkspaceID: "ws-b", UserID: "u1", Role: "viewer", SeatType: "no-such-seat"}), "u1@b")
	must(t, s.PutProfile(c, &gateway.Profile{WorkspaceID: "ws-a", ID: "shared", Name: "A shared",
		Allowlist: []string{"supacloud.read.*"}}), "shared@a")
	must(t, s.PutProfile(c, &gateway.Profile{WorkspaceID: "ws-a", ID: "a-default", Name: "A default",
		Allowlist: []string{"supacloud.ops.*"}, ScriptAllowlist: []string{"backup"}}), "default@a")
	must(t, s.PutProfile(c, &gateway.Profile{WorkspaceID: "ws-b", ID: "shared", Name: "B shared",
		Allowlist: []string{"supacloud.full"}}), "shared@b")
	must(t, s.PutProfile(c, &gateway.Profile{WorkspaceID: "ws-b", ID: "b-only", Name: "B only",
		Allowlist: []string{"supacloud.deploy.*"}}), "b-only@b")
	must(t, s.SetDefaultProfile(c, "ws-a", ptr("a-default")), "default a")
	must(t, s.PutWorkspaceOverrides(c, "ws-a", gateway.Permissions{"ws.perm": false}), "ws overrides")
	must(t, s.PutMemberOverrides(c, "ws-a", "u1", gateway.Permissions{"user.perm": true}), "user overrides")
	must(t, s.PutTask(c, &gateway.Task{WorkspaceID: "ws-a", ID: "t1", Status: "running"}), "t1@a")
	must(t, s.PutTask(c, &gateway.Task{WorkspaceID: "ws-b", ID: "t1", Status: "cancelled"}), "t1@b")
}

// callerWant is what one LoadCaller case must return; "" / nil = absent.
type callerWant struct {
	member, profile, profileName, dflt, seat, plan, task, taskStatus string
	userOverrides, wsOverrides                                       gateway.Permissions
}

var callerTests = []test{
	{"Matrix", func(t *testing.T, s Store) {
		seedTwoWorkspaces(t, s)
		for _, tc := range []struct {
			name string
			p    gateway.Principal
			want callerWant
		}{
			{"everything", gateway.Principal{Subject: "u1", WorkspaceID: "ws-a", ProfileID: "shared", TaskID: "t1"},
				callerWant{member: "admin", profile: "shared", profileName: "A shared", dflt: "a-default", seat: "analyst",
					plan: "team", task: "t1", taskStatus: "running",
					userOverrides: gateway.Permissions{"user.perm": true}, wsOverrides: gateway.Permissions{"ws.perm": false}}},
			{"no profile claim falls to the default", gateway.Principal{Subject: "u1", WorkspaceID: "ws-a"},
				callerWant{member: "admin", dflt: "a-default", seat: "analyst", plan: "team",
					userOverrides: gateway.Permissions{"user.perm": true}, wsOverrides: gateway.Permissions{"ws.perm": false}}},
			{"not a member", gateway.Principal{Subject: "stranger", WorkspaceID: "ws-a", ProfileID: "a-default"},
				callerWant{profile: "a-default", profileName: "A default", dflt: "a-default", plan: "team",
					wsOverrides: gateway.Permissions{"ws.perm": false}}},
			{"coordinator", gateway.Principal{Kind: gateway.PrincipalCoordinator, Subject: "token:fp1", WorkspaceID: "ws-b"},
				callerWant{}},
			{"same ids resolve inside the principal's workspace", gateway.Principal{Subject: "u1", WorkspaceID: "ws-b", ProfileID: "shared", TaskID: "t1"},
				callerWant{member: "viewer", profile: "shared", profileName: "B shared", task: "t1", taskStatus: "cancelled"}},
			{"profile of another workspace is not found", gateway.Principal{Subject: "u1", WorkspaceID: "ws-a", ProfileID: "b-only"},
				callerWant{member: "admin", dflt: "a-default", seat: "analyst", plan: "team",
					userOverrides: gateway.Permissions{"user.perm": true}, wsOverrides: gateway.Permissions{"ws.perm": false}}},
			{"unknown task and profile", gateway.Principal{Subject: "u1", WorkspaceID: "ws-b", ProfileID: "ghost", TaskID: "ghost"},
				callerWant{member: "viewer"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c, err := s.LoadCaller(ctx(t), &tc.p)
				must(t, err, "LoadCaller")
				checkCaller(t, c, &tc.p, tc.want)
			})
		}
	}},
	{"UnknownWorkspace", func(t *testing.T, s Store) {
		seedTwoWorkspaces(t, s)
		c, err := s.LoadCaller(ctx(t), &gateway.Principal{Subject: "u1", WorkspaceID: "ws-9"})
		wantCode(t, err, gateway.ENotFound, "LoadCaller of ws-9")
		if c != nil {
			t.Errorf("caller = %+v, want nil with the error", c)
		}
	}},
	{"ProfileDetails", func(t *testing.T, s Store) {
		seedTwoWorkspaces(t, s)
		c := loadAs(t, s, "ws-a", "u1", "a-default", "")
		want := &gateway.Profile{WorkspaceID: "ws-a", ID: "a-default", Name: "A default",
			Allowlist: []string{"supacloud.ops.*"}, ScriptAllowlist: []string{"backup"}, IsDefault: true}
		wantProfile(t, "requested profile", c.Profile, want)
		wantProfile(t, "default profile", c.DefaultProfile, want)
	}},
}

// checkCaller compares c with want part by part.
func checkCaller(t *testing.T, c *gateway.Caller, p *gateway.Principal, want callerWant) {
	t.Helper()
	if c.Workspace == nil || c.Workspace.ID != p.WorkspaceID {
		t.Fatalf("workspace = %+v, want %s", c.Workspace, p.WorkspaceID)
	}
	if c.ProfileRequested != p.ProfileID {
		t.Errorf("ProfileRequested = %q, want %q", c.ProfileRequested, p.ProfileID)
	}
	got := callerWant{
		profile: profileID(c.Profile), dflt: profileID(c.DefaultProfile),
		userOverrides: c.UserOverrides, wsOverrides: c.WorkspaceOverrides,
	}
	if c.Member != nil {
		got.member = c.Member.Role
		if c.Member.UserID != p.Subject || c.Member.WorkspaceID != p.WorkspaceID {
			t.Errorf("member = %+v, want %s of %s", *c.Member, p.Subject, p.WorkspaceID)
		}
	}
	if c.Profile != nil {
		got.profileName = c.Profile.Name
		if c.Profile.WorkspaceID != p.WorkspaceID {
			t.Errorf("profile of workspace %s returned to a principal of %s", c.Profile.WorkspaceID, p.WorkspaceID)
		}
	}
	if c.SeatType != nil {
		got.seat = c.SeatType.Name
	}
	if c.OrgPlan != nil {
		got.plan = c.OrgPlan.Name
	}
	if c.Task != nil {
		got.task, got.taskStatus = c.Task.ID, c.Task.Status
	}
	for _, f := range []struct{ name, got, want string }{
		{"member role", got.member, want.member}, {"profile", got.profile, want.profile},
		{"profile name", got.profileName, want.profileName}, {"default profile", got.dflt, want.dflt},
		{"seat type", got.seat, want.seat}, {"org plan", got.plan, want.plan},
		{"task", got.task, want.task}, {"task status", got.taskStatus, want.taskStatus},
	} {
		if f.got != f.want {
			t.Errorf("%s = %q, want %q", f.name, f.got, f.want)
		}
	}
	wantPerms(t, "user overrides", got.userOverrides, want.userOverrides)
	wantPerms(t, "workspace overrides", got.wsOverrides, want.wsOverrides)
}
