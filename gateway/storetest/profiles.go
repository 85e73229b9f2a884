package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

var profileTests = []test{
	{"PutProfileCreatesAndReplaces", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		p := &gateway.Profile{WorkspaceID: "ws-a", ID: "ops", Name: "Ops", Allowlist: []string{"supacloud.read.*"}}
		must(t, s.PutProfile(ctx(t), p), "create")
		must(t, s.PutProfile(ctx(t), &gateway.Profile{WorkspaceID: "ws-a", ID: "ops", Name: "Ops 2",
			Allowlist: []string{"supacloud.ops.*", "supacloud.read.*"}}), "replace")
		got := loadAs(t, s, "ws-a", "", "ops", "").Profile
		want := &gateway.Profile{WorkspaceID: "ws-a", ID: "ops", Name: "Ops 2",
			Allowlist: []string{"supacloud.ops.*", "supacloud.read.*"}}
		wantProfile(t, "replaced profile", got, want)
		wantCode(t, s.PutProfile(ctx(t), &gateway.Profile{WorkspaceID: "ws-9", ID: "ops"}), gateway.ENotFound, "unknown workspace")
		wantCode(t, s.PutProfile(ctx(t), &gateway.Profile{WorkspaceID: "ws-a", ID: ""}), gateway.EInvalid, "empty id")
		must(t, s.PutProfile(ctx(t), &gateway.Profile{WorkspaceID: "ws-a", ID: "bare"}), "nil allowlist")
		if got := loadAs(t, s, "ws-a", "", "bare", "").Profile; got == nil || len(got.Allowlist) != 0 {
			t.Errorf("profile with nil allowlist = %+v, want an empty allowlist", got)
		}
	}},
	{"ScriptAllowlistNilEmptyValues", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		for _, tc := range []struct {
			name string
			list []string
		}{
			{"nil means no restriction", nil},
			{"empty means no script", []string{}},
			{"values", []string{"backup-db", "rotate-logs"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := &gateway.Profile{WorkspaceID: "ws-a", ID: "p-" + tc.name, ScriptAllowlist: tc.list}
				must(t, s.PutProfile(ctx(t), p), "PutProfile")
				got := loadAs(t, s, "ws-a", "", p.ID, "").Profile
				if got == nil {
					t.Fatal("profile not found")
				}
				if (got.ScriptAllowlist == nil) != (tc.list == nil) || !slices.Equal(got.ScriptAllowlist, tc.list) {
					t.Errorf("script_allowlist = %#v, want %#v", got.ScriptAllowlist, tc.list)
				}
			})
		}
		// Replacing a restricted profile with nil lifts the restriction.
		must(t, s.PutProfile(ctx(t), &gateway.Profile{WorkspaceID: "ws-a", ID: "p-values"}), "lift")
		if got := loadAs(t, s, "ws-a", "", "p-values", "").Profile; got.ScriptAllowlist != nil {
			t.Errorf("after replace with nil, script_allowlist = %#v, want nil", got.ScriptAllowlist)
		}
	}},
	{"DefaultProfileAtMostOne", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		for _, id := range []string{"p1", "p2"} {
			must(t, s.PutProfile(ctx(t), &gateway.Profile{WorkspaceID: "ws-a", ID: id, Allowlist: []string{id}}), id)
		}
		if c := loadAs(t, s, "ws-a", "", "", ""); c.DefaultProfile != nil {
			t.Fatalf("default before any set = %+v, want nil", c.DefaultProfile)
		}
		steps := []struct {
			name    string
			set     *string
			want    string // "" = no default
			p1IsDef bool
		}{
			{"set p1", ptr("p1"), "p1", true},
			{"set p1 again", ptr("p1"), "p1", true},
			{"set p2 clears p1", ptr("p2"), "p2", false},
			{"nil clears", nil, "", false},
			{"set p1 after clear", ptr("p1"), "p1", true},
		}
		for _, st := range steps {
			must(t, s.SetDefaultProfile(ctx(t), "ws-a", st.set), st.name)
			c := loadAs(t, s, "ws-a", "", "p1", "")
			if got := profileID(c.DefaultProfile); got != st.want {
				t.Fatalf("%s: default = %q, want %q", st.name, got, st.want)
			}
			if c.Profile.IsDefault != st.p1IsDef {
				t.Fatalf("%s: p1.IsDefault = %v, want %v", st.name, c.Profile.IsDefault, st.p1IsDef)
			}
		}
	}},
	{"DefaultProfileErrorsChangeNothing", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		putWorkspace(t, s, "ws-b")
		must(t, s.PutProfile(ctx(t), &gateway.Profile{WorkspaceID: "ws-a", ID: "pa"}), "pa")
		must(t, s.PutProfile(ctx(t), &gateway.Profile{WorkspaceID: "ws-b", ID: "pb"}), "pb")
		must(t, s.SetDefaultProfile(ctx(t), "ws-a", ptr("pa")), "set pa")
		for _, tc := range []struct {
			name    string
			ws      string
			profile *string
		}{
			{"profile of another workspace", "ws-a", ptr("pb")},
			{"unknown profile", "ws-a", ptr("nope")},
			{"unknown workspace", "ws-9", ptr("pa")},
			{"clear on unknown workspace", "ws-9", nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wantCode(t, s.SetDefaultProfile(ctx(t), tc.ws, tc.profile), gateway.ENotFound, "SetDefaultProfile")
			})
		}
		if got := profileID(loadAs(t, s, "ws-a", "", "", "").DefaultProfile); got != "pa" {
			t.Errorf("after refused changes default of ws-a = %q, want pa", got)
		}
		if got := loadAs(t, s, "ws-b", "", "", "").DefaultProfile; got != nil {
			t.Errorf("ws-b default = %+v, want none", got)
		}
	}},
	{"ConcurrentDefaultChanges", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		const n = 20
		for i := range n {
			must(t, s.PutProfile(ctx(t), &gateway.Profile{WorkspaceID: "ws-a", ID: fmt.Sprintf("p%d", i)}), "profile")
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = s.SetDefaultProfile(ctx(t), "ws-a", ptr(fmt.Sprintf("p%d", i))) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("concurrent SetDefaultProfile(p%d): %v; concurrent changes must queue, not fail", i, err)
			}
		}
		defaults := 0
		for i := range n {
			if loadAs(t, s, "ws-a", "", fmt.Sprintf("p%d", i), "").Profile.IsDefault {
				defaults++
			}
		}
		if defaults != 1 {
			t.Errorf("%d default profiles after concurrent changes, want exactly 1", defaults)
		}
	}},
	{"PutProfileKeepsDefaultFlag", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		must(t, s.PutProfile(ctx(t), &gateway.Profile{WorkspaceID: "ws-a", ID: "p1"}), "p1")
		must(t, s.SetDefaultProfile(ctx(t), "ws-a", ptr("p1")), "default")
		p := &gateway.Profile{WorkspaceID: "ws-a", ID: "p1", Name: "renamed", IsDefault: false}
		must(t, s.PutProfile(ctx(t), p), "replace")
		if !p.IsDefault {
			t.Error("PutProfile did not report the kept default flag in p.IsDefault")
		}
		if got := loadAs(t, s, "ws-a", "", "", "").DefaultProfile; got == nil || got.Name != "renamed" {
			t.Errorf("default after replace = %+v, want p1 renamed", got)
		}
		p2 := &gateway.Profile{WorkspaceID: "ws-a", ID: "p2", IsDefault: true}
		must(t, s.PutProfile(ctx(t), p2), "new profile claiming default")
		if p2.IsDefault {
			t.Error("a new profile became default through PutProfile; only SetDefaultProfile may do that")
		}
		if got := profileID(loadAs(t, s, "ws-a", "", "", "").DefaultProfile); got != "p1" {
			t.Errorf("default = %q, want p1", got)
		}
	}},
	{"ReadBackProfiles", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		putWorkspace(t, s, "ws-b")
		putWorkspace(t, s, "ws-empty")
		put := []*gateway.Profile{
			{WorkspaceID: "ws-a", ID: "p2", Name: "Two", Allowlist: []string{"supacloud.read.*"}},
			{WorkspaceID: "ws-a", ID: "p1", Name: "One", Allowlist: []string{"supacloud.ops.*"}, ScriptAllowlist: []string{}},
			{WorkspaceID: "ws-a", ID: "p3", Name: "Three", ScriptAllowlist: []string{"backup"}},
			{WorkspaceID: "ws-b", ID: "p1", Name: "Other"},
		}
		for _, p := range put {
			must(t, s.PutProfile(ctx(t), p), p.ID)
		}
		must(t, s.SetDefaultProfile(ctx(t), "ws-a", ptr("p2")), "default")
		list, err := s.ListProfiles(ctx(t), "ws-a")
		must(t, err, "ListProfiles")
		if len(list) != 3 {
			t.Fatalf("ListProfiles = %+v, want p1 p2 p3", list)
		}
		want := []*gateway.Profile{
			{WorkspaceID: "ws-a", ID: "p1", Name: "One", Allowlist: []string{"supacloud.ops.*"}, ScriptAllowlist: []string{}},
			{WorkspaceID: "ws-a", ID: "p2", Name: "Two", Allowlist: []string{"supacloud.read.*"}, IsDefault: true},
			{WorkspaceID: "ws-a", ID: "p3", Name: "Three", Allowlist: []string{}, ScriptAllowlist: []string{"backup"}},
		}
		for i := range list {
			wantProfile(t, "listed "+want[i].ID, &list[i], want[i])
			if list[i].Allowlist == nil {
				t.Errorf("%s: nil allowlist, want []", list[i].ID)
			}
		}
		got, err := s.Profile(ctx(t), "ws-a", "p1")
		must(t, err, "Profile")
		wantProfile(t, "Profile p1", got, want[0])
		_, err = s.Profile(ctx(t), "ws-a", "p9")
		wantNotFound(t, err, "unknown profile", "PUT /admin/v1/workspaces/ws-a/profiles/p9")
		_, err = s.Profile(ctx(t), "ws-9", "p1")
		wantNotFound(t, err, "profile of unknown workspace", "PUT /admin/v1/workspaces/ws-9")
		if list, err := s.ListProfiles(ctx(t), "ws-empty"); err != nil || len(list) != 0 {
			t.Errorf("profiles of an empty workspace = %v, %v", list, err)
		}
		_, err = s.ListProfiles(ctx(t), "ws-9")
		wantNotFound(t, err, "profiles of unknown workspace", "PUT /admin/v1/workspaces/ws-9")

		def, err := s.DefaultProfile(ctx(t), "ws-a")
		must(t, err, "DefaultProfile")
		if def == nil || *def != "p2" {
			t.Errorf("DefaultProfile = %v, want p2", def)
		}
		if def, err := s.DefaultProfile(ctx(t), "ws-b"); err != nil || def != nil {
			t.Errorf("DefaultProfile of ws-b = %v, %v; want nil, no error", def, err)
		}
		_, err = s.DefaultProfile(ctx(t), "ws-9")
		wantNotFound(t, err, "default of unknown workspace", "PUT /admin/v1/workspaces/ws-9")
	}},
	{"DeleteProfile", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		putWorkspace(t, s, "ws-b")
		for _, p := range []*gateway.Profile{{WorkspaceID: "ws-a", ID: "p1"}, {WorkspaceID: "ws-a", ID: "p2"}, {WorkspaceID: "ws-b", ID: "p1"}} {
			must(t, s.PutProfile(ctx(t), p), p.ID)
		}
		must(t, s.SetDefaultProfile(ctx(t), "ws-a", ptr("p1")), "default ws-a")
		must(t, s.SetDefaultProfile(ctx(t), "ws-b", ptr("p1")), "default ws-b")
		// Calls under p1: running t1 and t3, completed t2; ws-b's t1 and a
		// call of t4 under p2 must not be named.
		for _, tk := range []gateway.Task{{WorkspaceID: "ws-a", ID: "t1", Status: "running"}, {WorkspaceID: "ws-a", ID: "t2", Status: "completed"},
			{WorkspaceID: "ws-a", ID: "t3", Status: "running"}, {WorkspaceID: "ws-a", ID: "t4", Status: "running"},
			{WorkspaceID: "ws-b", ID: "t1", Status: "running"}} {
			must(t, s.PutTask(ctx(t), &tk), "task")
		}
		for i, c := range []struct{ ws, task, profile string }{
			{"ws-a", "t3", "p1"}, {"ws-a", "t1", "p1"}, {"ws-a", "t1", "p1"}, {"ws-a", "t2", "p1"}, {"ws-a", "t4", "p2"}, {"ws-b", "t1", "p1"},
		} {
			ev := event(i, c.ws, c.task, "app.list", gateway.AuditAllowed)
			ev.ProfileID = c.profile
			must(t, s.RecordAudit(ctx(t), ev), "audit")
		}
		wasDefault, tasks, total, err := s.DeleteProfile(ctx(t), "ws-a", "p1")
		must(t, err, "DeleteProfile")
		if !wasDefault || total != 2 || !slices.Equal(tasks, []string{"t1", "t3"}) {
			t.Errorf("DeleteProfile = default %v, tasks %v (total %d); want true, [t1 t3] (2)", wasDefault, tasks, total)
		}
		c := loadAs(t, s, "ws-a", "", "p1", "")
		if c.Profile != nil || c.DefaultProfile != nil {
			t.Errorf("after delete: profile %+v, default %+v; want both nil", c.Profile, c.DefaultProfile)
		}
		if def, err := s.DefaultProfile(ctx(t), "ws-a"); err != nil || def != nil {
			t.Errorf("DefaultProfile after deleting it = %v, %v; want nil", def, err)
		}
		if c := loadAs(t, s, "ws-b", "", "p1", ""); c.Profile == nil || profileID(c.DefaultProfile) != "p1" {
			t.Errorf("ws-b's p1 was touched: %+v, default %+v", c.Profile, c.DefaultProfile)
		}
		wasDefault, tasks, total, err = s.DeleteProfile(ctx(t), "ws-a", "p2")
		must(t, err, "delete p2")
		if wasDefault || total != 1 || !slices.Equal(tasks, []string{"t4"}) {
			t.Errorf("DeleteProfile(p2) = %v, %v, %d; want false, [t4], 1", wasDefault, tasks, total)
		}
		_, _, _, err = s.DeleteProfile(ctx(t), "ws-a", "p1")
		wantNotFound(t, err, "delete again", "PUT /admin/v1/workspaces/ws-a/profiles/p1")
		_, _, _, err = s.DeleteProfile(ctx(t), "ws-9", "p1")
		wantNotFound(t, err, "unknown workspace", "PUT /admin/v1/workspaces/ws-9")
		// The id can be used again, and starts as no default.
		p := &gateway.Profile{WorkspaceID: "ws-a", ID: "p1"}
		must(t, s.PutProfile(ctx(t), p), "re-create")
		if p.IsDefault {
			t.Error("a re-created profile came back as the default")
		}
	}},
	{"DeletedProfileIsRemembered", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		putWorkspace(t, s, "ws-b")
		for _, p := range []*gateway.Profile{{WorkspaceID: "ws-a", ID: "p1"}, {WorkspaceID: "ws-a", ID: "p2"}, {WorkspaceID: "ws-b", ID: "p1"}} {
			must(t, s.PutProfile(ctx(t), p), p.ID)
		}
		deleted := func(what, ws, profile string, want bool) {
			t.Helper()
			c := loadAs(t, s, ws, "", profile, "")
			if c.ProfileDeleted != want {
				t.Errorf("%s: ProfileDeleted of %s/%q = %v, want %v", what, ws, profile, c.ProfileDeleted, want)
			}
			if want && c.Profile != nil {
				t.Errorf("%s: a deleted profile loaded as %+v", what, c.Profile)
			}
		}
		deleted("before any delete", "ws-a", "p1", false)
		deleted("never existed", "ws-a", "nope", false)
		_, _, _, err := s.DeleteProfile(ctx(t), "ws-a", "p1")
		must(t, err, "delete p1")
		deleted("after delete", "ws-a", "p1", true)
		deleted("another profile of the workspace", "ws-a", "p2", false)
		deleted("the same id in another workspace", "ws-b", "p1", false)
		deleted("no profile requested", "ws-a", "", false)
		deleted("an id that never existed", "ws-a", "nope", false)
		// A failed delete (unknown id) remembers nothing.
		_, _, _, err = s.DeleteProfile(ctx(t), "ws-a", "nope")
		wantNotFound(t, err, "delete unknown", "PUT /admin/v1/workspaces/ws-a/profiles/nope")
		deleted("after refusing to delete an unknown id", "ws-a", "nope", false)

		// Re-creating the id clears the deletion; deleting it again
		// remembers it again.
		must(t, s.PutProfile(ctx(t), &gateway.Profile{WorkspaceID: "ws-a", ID: "p1", Allowlist: []string{"supacloud.read.*"}}), "re-create")
		deleted("after re-create", "ws-a", "p1", false)
		if c := loadAs(t, s, "ws-a", "", "p1", ""); c.Profile == nil || !slices.Equal(c.Profile.Allowlist, []string{"supacloud.read.*"}) {
			t.Errorf("re-created profile = %+v", c.Profile)
		}
		_, _, _, err = s.DeleteProfile(ctx(t), "ws-a", "p1")
		must(t, err, "delete p1 again")
		deleted("after the second delete", "ws-a", "p1", true)
		// Replacing another profile clears nothing else.
		must(t, s.PutProfile(ctx(t), &gateway.Profile{WorkspaceID: "ws-a", ID: "p2", Name: "renamed"}), "replace p2")
		deleted("after replacing p2", "ws-a", "p1", true)
	}},
}

// profileID returns p's id, or "" for nil.
func profileID(p *gateway.Profile) string {
	if p == nil {
		return ""
	}
	return p.ID
}

// wantProfile compares profiles field by field (allowlists as lists).
func wantProfile(t *testing.T, what string, got, want *gateway.Profile) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Fatalf("%s = %+v, want %+v", what, got, want)
	}
	if got == nil {
		return
	}
	if got.WorkspaceID != want.WorkspaceID || got.ID != want.ID || got.Name != want.Name ||
		got.IsDefault != want.IsDefault || !slices.Equal(got.Allowlist, want.Allowlist) ||
		(got.ScriptAllowlist == nil) != (want.ScriptAllowlist == nil) ||
		!slices.Equal(got.ScriptAllowlist, want.ScriptAllowlist) {
		t.Fatalf("%s = %+v, want %+v", what, *got, *want)
	}
}
