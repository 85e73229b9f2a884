package policy_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/fstest"
	"time"

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
		{"baseline with empty allowlist", []string{}, "viewer", "memory.search", nil, true, ""},
		{"non-member gets no baseline", []string{}, "", "memory.search", nil, false, "actor.not_member"},
		{"non-member gets no grant", []string{"supacloud.full"}, "", "projects.list", nil, false, "actor.not_member"},
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

// TestListedEqualsCallable checks the invariant of docs/architecture.md ("Listed ⇔ callable") on the Go
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

// TestCacheKeySeparatesInputs: a cached decision is only reused for an
// identical input; changing any one input field must re-evaluate and can
// change the answer.
func TestCacheKeySeparatesInputs(t *testing.T) {
	e, refs := newEngine(t, gateway.EditionCommunity)
	deployer := func() (*gateway.Principal, *gateway.Caller) {
		return agent("p-1"), caller([]string{"supacloud.deploy.*"}, "owner")
	}
	tool := ref(refs, "app.pause")
	mutations := []struct {
		note   string
		mutate func(p *gateway.Principal, c *gateway.Caller)
	}{
		{"role", func(_ *gateway.Principal, c *gateway.Caller) { c.Member.Role = "member" }},
		{"no member", func(_ *gateway.Principal, c *gateway.Caller) { c.Member = nil }},
		{"allowlist", func(_ *gateway.Principal, c *gateway.Caller) { c.Profile.Allowlist = []string{"supacloud.read.*"} }},
		{"task status", func(_ *gateway.Principal, c *gateway.Caller) { c.Task.Status = gateway.TaskCompleted }},
		{"task id", func(p *gateway.Principal, _ *gateway.Caller) { p.TaskID = "t-2" }},
		{"profile requested", func(p *gateway.Principal, _ *gateway.Caller) { p.ProfileID = "p-9" }},
		{"principal kind", func(p *gateway.Principal, _ *gateway.Caller) { p.Kind = gateway.PrincipalCoordinator }},
	}
	for _, m := range mutations {
		t.Run(m.note, func(t *testing.T) {
			p, c := deployer()
			d1, err := e.Decide(context.Background(), p, c, tool, nil)
			if err != nil || !d1.Allow {
				t.Fatalf("baseline decision %+v %v", d1, err)
			}
			p, c = deployer()
			m.mutate(p, c)
			d2, err := e.Decide(context.Background(), p, c, tool, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d2.Allow {
				t.Fatalf("mutated input reused the cached allow: %+v", d2)
			}
			if d1.ID == d2.ID {
				t.Error("decision ids repeat")
			}
		})
	}
	// Arguments are part of the key: the script slug changes the answer.
	p, c := agent("p-1"), caller([]string{"supacloud.script.run"}, "member")
	c.Profile.ScriptAllowlist = []string{"ok"}
	script := ref(refs, "script.run")
	if d, _ := e.Decide(context.Background(), p, c, script, map[string]any{"slug": "ok"}); !d.Allow {
		t.Fatalf("allowed slug denied: %+v", d)
	}
	if d, _ := e.Decide(context.Background(), p, c, script, map[string]any{"slug": "other"}); d.Allow {
		t.Fatalf("other slug reused the cached allow: %+v", d)
	}
}

func benchEngine(b *testing.B, cacheSize int) (*policy.Engine, []policy.ToolRef) {
	refs := catalogRefs(b)
	e, err := policy.New(context.Background(), policy.Options{FS: policies.FS, Edition: gateway.EditionCommunity, Tools: refs, CacheSize: cacheSize})
	if err != nil {
		b.Fatal(err)
	}
	return e, refs
}

// BenchmarkDecideToolsCallUncached measures a full policy evaluation (the
// cost of the first call of a principal/tool/argument combination).
func BenchmarkDecideToolsCallUncached(b *testing.B) {
	e, refs := benchEngine(b, -1)
	p, c := agent("p-1"), caller([]string{"supacloud.read.*", "supacloud.ops.*"}, "member")
	tool := ref(refs, "workflow.trigger")
	args := map[string]any{"workflow_id": "wfl-1"}
	b.ReportAllocs()
	for b.Loop() {
		if d, err := e.Decide(context.Background(), p, c, tool, args); err != nil || !d.Allow {
			b.Fatal(err, d)
		}
	}
}

// BenchmarkVisibleToolsListUncached measures a full tools/list evaluation.
func BenchmarkVisibleToolsListUncached(b *testing.B) {
	e, _ := benchEngine(b, -1)
	p, c := agent("p-1"), caller([]string{"supacloud.read.*", "supacloud.ops.*"}, "member")
	b.ReportAllocs()
	for b.Loop() {
		if v, err := e.Visible(context.Background(), p, c); err != nil || len(v) == 0 {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecideWorkload replays an agent-like workload — 30 sessions with
// different profiles and roles, each calling 12 tools with varying
// arguments, 30 % of calls with arguments never seen before — and reports
// the median and 99th percentile of single decisions (p50-ns, p99-ns).
func BenchmarkDecideWorkload(b *testing.B) {
	e, refs := benchEngine(b, 0)
	allowlists := [][]string{{"supacloud.read.*"}, {"supacloud.read.*", "supacloud.ops.*"}, {"supacloud.full"}, {"supacloud.deploy.*"}, {"supacloud.scaffold.*", "project.get"}}
	roles := []string{"owner", "admin", "member", "viewer", ""}
	names := []string{"projects.list", "project.get", "workflow.trigger", "schedule.pause", "app.pause", "memory.search", "run.events", "script.run", "scaffold.app.propose", "workspace.info", "tasks.get", "approval.decide"}
	type call struct {
		p    *gateway.Principal
		c    *gateway.Caller
		tool policy.ToolRef
		args map[string]any
	}
	var calls []call
	for s := range 30 {
		p, c := agent("p-1"), caller(allowlists[s%len(allowlists)], roles[s%len(roles)])
		p.TaskID, c.Task.ID = fmt.Sprintf("t-%d", s), fmt.Sprintf("t-%d", s)
		for i, n := range names {
			calls = append(calls, call{p, c, ref(refs, n), map[string]any{"id": fmt.Sprintf("rec-%d", i%4)}})
		}
	}
	lat := make([]time.Duration, 0, b.N)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		cl := calls[i%len(calls)]
		args := cl.args
		if i%10 < 3 {
			args = map[string]any{"id": fmt.Sprintf("new-%d", i)}
		}
		start := time.Now()
		if _, err := e.Decide(ctx, cl.p, cl.c, cl.tool, args); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// TestBundleReadsOnlyTheSlug pins what the shipped bundle reads of the call
// arguments, per surface: input.arguments.slug on SupaCloud (the
// script.run carve-out), workspace_id and ticket_id on cc_server (the
// workspace rules and plan mode's own-ticket verbs); one surface's reads
// never widen the other's cache key. If a rule starts reading the whole
// input or other arguments this fails, as a reminder that the decision
// cache then keys on every argument (correct, but slower).
func TestBundleReadsOnlyTheSlug(t *testing.T) {
	e, _ := newEngine(t, gateway.EditionCommunity)
	cc, _ := newCCEngine(t, 0)
	for _, c := range []struct {
		e    *policy.Engine
		want []string
	}{{e, []string{"slug"}}, {cc, []string{"ticket_id", "workspace_id"}}} {
		all, keys := c.e.ArgumentKeys()
		slices.Sort(keys)
		if all || !slices.Equal(keys, c.want) {
			t.Errorf("bundle reads arguments all=%v keys=%v, want only %v", all, keys, c.want)
		}
	}
}

func TestGrantsComeFromTheBundle(t *testing.T) {
	e, _ := newEngine(t, gateway.EditionCommunity)
	entries, prefix := e.Grants()
	want := []string{"supacloud.*", "supacloud.conversation.*", "supacloud.deploy.*", "supacloud.full", "supacloud.ops.*", "supacloud.read.*", "supacloud.scaffold.*"}
	if !slices.Equal(entries, want) || prefix != "supacloud." {
		t.Fatalf("grants %v prefix %q, want %v and supacloud.", entries, prefix, want)
	}
}

// TestGrantsFromADataDocument: a bundle of MCPGATE_POLICY_DIR may still keep
// its grants in supacloud/data.json rather than in a Rego rule.
func TestGrantsFromADataDocument(t *testing.T) {
	src := "package supacloud\ndecision := {\"allow\": false, \"visible\": false}\nvisible_tools := set()\n"
	data := `{"grants": {"tiers": {"read": {"wildcard": "x.read.*"}}, "full": "x.full", "tool_prefix": "x."}}`
	e, err := policy.New(context.Background(), policy.Options{FS: fstest.MapFS{
		"supacloud/d.rego":    {Data: []byte(src)},
		"supacloud/data.json": {Data: []byte(data)},
	}, Edition: gateway.EditionCommunity})
	if err != nil {
		t.Fatal(err)
	}
	if entries, prefix := e.Grants(); !slices.Equal(entries, []string{"x.full", "x.read.*"}) || prefix != "x." {
		t.Fatalf("grants %v prefix %q, want [x.full x.read.*] and x.", entries, prefix)
	}
}

func TestNondeterministicBundleIsNotCached(t *testing.T) {
	src := "package supacloud\ndecision := {\"allow\": time.now_ns() > 0, \"visible\": true}\nvisible_tools := set()\n"
	e, err := policy.New(context.Background(), policy.Options{FS: fstest.MapFS{"supacloud/d.rego": {Data: []byte(src)}}, Edition: gateway.EditionCommunity})
	if err != nil {
		t.Fatal(err)
	}
	if e.Caching() {
		t.Fatal("a bundle calling time.now_ns is cached")
	}
	if shipped, _ := newEngine(t, gateway.EditionCommunity); !shipped.Caching() {
		t.Fatal("the shipped bundle is not cached")
	}
}

// TestDeletedProfileFallsBack: a caller whose requested profile was deleted
// (Caller.ProfileDeleted, input profile_deleted) is decided as a session
// without agent_profile_id, with the notice profile.deleted in the
// decision's reasons; the same caller without the flag, a profile the
// workspace never had, is refused. The flag is part of the cache key: the
// refusal decided first is not reused for the deleted profile.
func TestDeletedProfileFallsBack(t *testing.T) {
	e, refs := newEngine(t, gateway.EditionCommunity)
	gone := func(deleted bool, def *gateway.Profile) *gateway.Caller {
		c := caller(nil, "member")
		c.ProfileRequested, c.ProfileDeleted, c.DefaultProfile = "p-1", deleted, def
		return c
	}
	opsDefault := &gateway.Profile{WorkspaceID: "ws-a", ID: "p-def", Name: "ops", Allowlist: []string{"supacloud.ops.*"}}
	for _, tc := range []struct {
		note    string
		caller  *gateway.Caller
		tool    string
		allow   bool
		reasons []string
	}{
		{"never existed: refused", gone(false, nil), "projects.list", false, []string{"profile.not_in_workspace"}},
		{"deleted: the read-only fallback reads", gone(true, nil), "projects.list", true, []string{"profile.deleted"}},
		{"deleted: the read-only fallback has no ops", gone(true, nil), "workflow.trigger", false, []string{"allowlist.missing_grant", "profile.deleted"}},
		{"deleted: the default profile governs", gone(true, opsDefault), "workflow.trigger", true, []string{"profile.deleted"}},
		{"deleted: the default profile has no reads", gone(true, opsDefault), "projects.list", false, []string{"allowlist.missing_grant", "profile.deleted"}},
	} {
		t.Run(tc.note, func(t *testing.T) {
			d, err := e.Decide(context.Background(), agent("p-1"), tc.caller, ref(refs, tc.tool), nil)
			if err != nil {
				t.Fatal(err)
			}
			var codes []string
			for _, r := range d.Reasons {
				codes = append(codes, r.Code)
			}
			if d.Allow != tc.allow || !slices.Equal(codes, tc.reasons) {
				t.Fatalf("allow=%v reasons %v, want allow=%v reasons %v", d.Allow, d.Reasons, tc.allow, tc.reasons)
			}
			visible, err := e.Visible(context.Background(), agent("p-1"), tc.caller)
			if err != nil {
				t.Fatal(err)
			}
			if visible[tc.tool] != tc.allow {
				t.Errorf("tools/list shows %s = %v, want %v (listed ⇔ callable)", tc.tool, visible[tc.tool], tc.allow)
			}
		})
	}
}

// TestSlowDecisionIsCutOff: a bundle whose rules run away on some input
// (it passed its own tests, which never reach that input) is cut off at
// Options.EvalTimeout and fails closed with an Internal error, for
// tools/call and tools/list alike, instead of holding the call and a core
// for as long as the rule runs.
func TestSlowDecisionIsCutOff(t *testing.T) {
	const src = `package supacloud

slow if {
	n := count(input.principal.sub) * 500
	count([1 | some x in numbers.range(1, n); some y in numbers.range(1, n); x == y + n]) >= 0
}

decision := {"allow": true, "visible": true, "tier": "read", "reasons": [], "obligations": {}} if slow

visible_tools := {t.name | some t in input.tools; slow}
`
	e, err := policy.New(context.Background(), policy.Options{FS: fstest.MapFS{"supacloud/d.rego": {Data: []byte(src)}},
		Edition: gateway.EditionCommunity, CacheSize: -1, EvalTimeout: 100 * time.Millisecond,
		Tools: []policy.ToolRef{{Name: "projects.list", Tier: gateway.TierRead}}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, err := e.Decide(context.Background(), agent(""), caller(nil, ""), policy.ToolRef{Name: "projects.list", Tier: gateway.TierRead}, nil)
	if took := time.Since(start); err == nil || gateway.ErrorCodeOf(err) != gateway.EInternal || took > 5*time.Second {
		t.Fatalf("slow decision: %+v, %v after %v; want an Internal error within about 100ms", d, err, took)
	}
	start = time.Now()
	v, err := e.Visible(context.Background(), agent(""), caller(nil, ""))
	if took := time.Since(start); err == nil || gateway.ErrorCodeOf(err) != gateway.EInternal || took > 5*time.Second {
		t.Fatalf("slow tools/list: %v, %v after %v; want an Internal error within about 100ms", v, err, took)
	}
}
