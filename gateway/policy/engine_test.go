package policy_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/policies"
	"github.com/mcpgate/mcpgate/tools"
)

func catalogRefs(t testing.TB) []policy.ToolRef {
	cat, err := tools.Load()
	if err != nil {
		t.Fatal(err)
	}
	refs := make([]policy.ToolRef, 0, cat.Len())
	for _, tl := range cat.Tools() {
		refs = append(refs, policy.ToolRef{Name: tl.Name, Tier: tl.Tier, CarveOut: tl.CarveOut})
	}
	return refs
}

func newEngine(t testing.TB, edition gateway.Edition) (*policy.Engine, []policy.ToolRef) {
	refs := catalogRefs(t)
	e, err := policy.New(context.Background(), policy.Options{FS: policies.FS, Edition: edition, Tools: refs})
	if err != nil {
		t.Fatal(err)
	}
	return e, refs
}

func agent(profile string) *gateway.Principal {
	return &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "olivia", WorkspaceID: "ws-a", TaskID: "t-1", ProfileID: profile}
}

func caller(allowlist []string, role string) *gateway.Caller {
	c := &gateway.Caller{
		Workspace: &gateway.Workspace{ID: "ws-a", OrgPlan: "team"},
		Task:      &gateway.Task{WorkspaceID: "ws-a", ID: "t-1", Status: gateway.TaskRunning},
		OrgPlan:   &gateway.OrgPlan{Name: "team", Permissions: gateway.Permissions{"workspace.budget.view": true}},
	}
	if role != "" {
		c.Member = &gateway.Member{WorkspaceID: "ws-a", UserID: "olivia", Role: role, SeatType: "developer"}
	}
	if allowlist != nil {
		c.ProfileRequested = "p-1"
		c.Profile = &gateway.Profile{WorkspaceID: "ws-a", ID: "p-1", Name: "ci-bot", Allowlist: allowlist}
	}
	return c
}

func ref(refs []policy.ToolRef, name string) policy.ToolRef {
	for _, r := range refs {
		if r.Name == name {
			return r
		}
	}
	panic("no tool " + name)
}

func TestDecide(t *testing.T) {
	e, refs := newEngine(t, gateway.EditionCommunity)
	cases := []struct {
		note      string
		allowlist []string
		role      string
		tool      string
		args      map[string]any
		allow     bool
		reason    string
	}{
		{"read grant", []string{"supacloud.read.*"}, "member", "projects.list", nil, true, ""},
		{"read grant lacks ops", []string{"supacloud.read.*"}, "member", "workflow.trigger", nil, false, "allowlist.missing_grant"},
		{"ops lacks script.run", []string{"supacloud.ops.*"}, "member", "script.run", map[string]any{"slug": "x"}, false, "script.not_granted"},
		{"deploy needs role", []string{"supacloud.deploy.*"}, "member", "app.pause", nil, false, "deploy.role_required"},
		{"deploy with owner", []string{"supacloud.deploy.*"}, "owner", "app.pause", nil, true, ""},
		{"baseline with empty allowlist", []string{}, "", "memory.search", nil, true, ""},
	}
	for _, c := range cases {
		t.Run(c.note, func(t *testing.T) {
			d, err := e.Decide(context.Background(), agent("p-1"), caller(c.allowlist, c.role), ref(refs, c.tool), c.args)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allow != c.allow || d.ID == "" {
				t.Fatalf("allow=%v id=%q, want allow=%v; reasons %+v", d.Allow, d.ID, c.allow, d.Reasons)
			}
			if c.reason != "" && (len(d.Reasons) == 0 || d.Reasons[0].Code != c.reason) {
				t.Errorf("reasons %+v, want %s first", d.Reasons, c.reason)
			}
		})
	}
}

// TestListedEqualsCallable checks the invariant of DESIGN.md §1 on the Go
// side: Visible and Decide agree for every catalog tool and several profiles.
func TestListedEqualsCallable(t *testing.T) {
	e, refs := newEngine(t, gateway.EditionCommunity)
	profiles := [][]string{nil, {}, {"supacloud.read.*"}, {"supacloud.ops.*"}, {"supacloud.full"}, {"supacloud.deploy.*"}, {"project.get", "supacloud.script.run"}}
	for _, role := range []string{"", "member", "owner"} {
		for _, al := range profiles {
			p, c := agent(""), caller(al, role)
			if al != nil {
				p = agent("p-1")
			}
			visible, err := e.Visible(context.Background(), p, c)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range refs {
				d, err := e.Decide(context.Background(), p, c, r, map[string]any{"slug": "any"})
				if err != nil {
					t.Fatal(err)
				}
				if d.Visible != visible[r.Name] {
					t.Errorf("role %q allowlist %v tool %s: listed=%v decision.visible=%v", role, al, r.Name, visible[r.Name], d.Visible)
				}
			}
		}
	}
}

func TestBadBundlesRefuseToStart(t *testing.T) {
	cases := []struct {
		note string
		fs   fstest.MapFS
	}{
		{"empty", fstest.MapFS{}},
		{"syntax error", fstest.MapFS{"supacloud/x.rego": {Data: []byte("package supacloud\nallow if {")}}},
		{"no decision rule", fstest.MapFS{"supacloud/x.rego": {Data: []byte("package supacloud\nfoo := 1\n")}}},
		{"unsafe variable", fstest.MapFS{"supacloud/x.rego": {Data: []byte("package supacloud\ndecision := x if { y := 1 }\nvisible_tools := set()\n")}}},
	}
	for _, c := range cases {
		t.Run(c.note, func(t *testing.T) {
			if _, err := policy.New(context.Background(), policy.Options{FS: c.fs, Edition: gateway.EditionCommunity}); err == nil {
				t.Fatal("bundle accepted, want an error")
			}
		})
	}
}

// TestUndefinedOrMalformedDecisionDenies: a bundle that compiles but yields
// no usable decision fails closed with an Internal error.
func TestUndefinedOrMalformedDecisionDenies(t *testing.T) {
	cases := map[string]string{
		"undefined":  "package supacloud\ndecision := {\"allow\": true, \"visible\": true} if input.never\nvisible_tools := set()\n",
		"not bool":   "package supacloud\ndecision := {\"allow\": \"yes\", \"visible\": true}\nvisible_tools := set()\n",
		"eval error": "package supacloud\ndecision := {\"allow\": to_number(\"x\") == 1, \"visible\": true}\nvisible_tools := set()\n",
	}
	for note, src := range cases {
		t.Run(note, func(t *testing.T) {
			e, err := policy.New(context.Background(), policy.Options{FS: fstest.MapFS{"supacloud/d.rego": {Data: []byte(src)}}, Edition: gateway.EditionCommunity})
			if err != nil {
				t.Fatal(err)
			}
			d, err := e.Decide(context.Background(), agent(""), caller(nil, ""), policy.ToolRef{Name: "projects.list", Tier: gateway.TierRead}, nil)
			if err == nil || gateway.ErrorCodeOf(err) != gateway.EInternal {
				t.Fatalf("decision %+v err %v, want an Internal error", d, err)
			}
		})
	}
}

func BenchmarkDecideToolsCall(b *testing.B) {
	e, refs := newEngine(b, gateway.EditionCommunity)
	p, c := agent("p-1"), caller([]string{"supacloud.read.*", "supacloud.ops.*"}, "member")
	tool := ref(refs, "workflow.trigger")
	args := map[string]any{"workflow_id": "wfl-1", "inputs": map[string]any{"date": "2026-11-30"}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d, err := e.Decide(ctx, p, c, tool, args)
		if err != nil || !d.Allow {
			b.Fatal(err, d)
		}
	}
}

func BenchmarkVisibleToolsList(b *testing.B) {
	e, _ := newEngine(b, gateway.EditionCommunity)
	p, c := agent("p-1"), caller([]string{"supacloud.read.*", "supacloud.ops.*"}, "member")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		v, err := e.Visible(ctx, p, c)
		if err != nil || len(v) == 0 {
			b.Fatal(err)
		}
	}
}
