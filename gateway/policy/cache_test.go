package policy_test

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/policies"
)

// heapAfterGC is the live heap once the garbage collector has run.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestCacheMemoryDoesNotGrowWithArgumentSize: the decision cache must not
// keep the arguments it keys on. 32 denied script.run calls with distinct
// 1 MiB slugs, from a profile that may not call script.run, once pinned
// 32 MiB of cache keys; what stays live afterwards must not depend on the
// slugs' size.
func TestCacheMemoryDoesNotGrowWithArgumentSize(t *testing.T) {
	e, refs := newEngine(t, gateway.EditionCommunity)
	p, c := agent("p-1"), caller([]string{"supacloud.read.*"}, "member")
	script := ref(refs, "script.run")
	const calls, size = 32, 1 << 20
	before := heapAfterGC()
	for i := range calls {
		slug := fmt.Sprintf("%08d", i) + strings.Repeat("x", size)
		d, err := e.Decide(context.Background(), p, c, script, map[string]any{"slug": slug})
		if err != nil || d.Allow {
			t.Fatalf("decision %+v %v, want a denial", d, err)
		}
	}
	after := heapAfterGC()
	if after > before && after-before > 4<<20 {
		t.Fatalf("%d decisions with %d-byte slugs left %d bytes live, want under 4 MiB", calls, size, after-before)
	}
	runtime.KeepAlive(e)
}

// TestCacheIsBoundedInBytes: a decision whose reasons quote a huge argument
// (the slug of script.slug_not_allowed) is not kept beyond the cache's byte
// budget, and every cached entry's key has a fixed size.
func TestCacheIsBoundedInBytes(t *testing.T) {
	refs := catalogRefs(t)
	const budget = 256 << 10
	e, err := policy.New(context.Background(), policy.Options{FS: policies.FS, Edition: gateway.EditionCommunity, Tools: refs, CacheBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	p, c := agent("p-1"), caller([]string{"supacloud.script.run"}, "member")
	c.Profile.ScriptAllowlist = []string{"nightly"}
	script := ref(refs, "script.run")
	for i := range 64 {
		slug := fmt.Sprintf("%08d", i) + strings.Repeat("x", 4<<10)
		d, err := e.Decide(context.Background(), p, c, script, map[string]any{"slug": slug})
		if err != nil || d.Allow || d.Reasons[0].Code != "script.slug_not_allowed" {
			t.Fatalf("decision %+v %v, want script.slug_not_allowed", d, err)
		}
	}
	st := e.CacheStats()
	if st.DecisionBytes > budget {
		t.Errorf("decision cache accounts %d bytes, over its budget of %d", st.DecisionBytes, budget)
	}
	if st.Decisions == 0 || st.Decisions >= 64 {
		t.Errorf("decision cache holds %d entries, want some but not all 64 (each is about 4 KiB)", st.Decisions)
	}
	// Small entries stay cached and cost the same whatever the argument size.
	small := func(slug string) int64 {
		e, _ := newEngine(t, gateway.EditionCommunity)
		if _, err := e.Decide(context.Background(), agent("p-1"), caller([]string{"supacloud.read.*"}, "member"), script, map[string]any{"slug": slug}); err != nil {
			t.Fatal(err)
		}
		return e.CacheStats().DecisionBytes
	}
	if a, b := small("a"), small(strings.Repeat("a", 1<<20)); a == 0 || a != b {
		t.Errorf("a cached denial costs %d bytes with a 1-byte slug and %d with a 1 MiB slug, want the same non-zero cost", a, b)
	}
}

// decisionOf is d without its id and whether it came from the cache, for
// comparing decisions.
func decisionOf(d *gateway.Decision) gateway.Decision {
	cp := *d
	cp.ID, cp.Cached = "", false
	return cp
}

// Issue 9, point 8: the cache key is derived from the evaluated input, so
// the cache never answers one input with another's decision. For each
// field that drives a redaction (the permission precedence chain) or the
// deploy role, two inputs that differ only in it get, from a caching
// engine and in either order, exactly the decisions an engine without a
// cache gives; and the field does change that decision, so the case
// tests something.
func TestCacheNeverAnswersAnotherInput(t *testing.T) {
	refs := catalogRefs(t)
	uncached, err := policy.New(context.Background(), policy.Options{FS: policies.FS, Edition: gateway.EditionCommunity, Tools: refs, CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	// redactBase: the developer seat says no to the budget, so
	// workspace.info's budget_remaining is redacted.
	redactBase := func() (*gateway.Principal, *gateway.Caller) {
		p, c := agent("p-1"), caller([]string{"supacloud.read.*"}, "member")
		c.SeatType = &gateway.SeatType{Name: "developer", Permissions: gateway.Permissions{"workspace.budget.view": false}}
		return p, c
	}
	// deployBase: an owner with the deploy grant may pause an app.
	deployBase := func() (*gateway.Principal, *gateway.Caller) {
		return agent("p-1"), caller([]string{"supacloud.deploy.*"}, "owner")
	}
	type mutation func(p *gateway.Principal, c *gateway.Caller)
	cases := []struct {
		note   string
		tool   string
		base   func() (*gateway.Principal, *gateway.Caller)
		mutate mutation
	}{
		{"seat type grants the key", "workspace.info", redactBase, func(_ *gateway.Principal, c *gateway.Caller) {
			c.SeatType.Permissions = gateway.Permissions{"workspace.budget.view": true}
		}},
		{"seat type enterprise-only on community", "workspace.info", redactBase, func(_ *gateway.Principal, c *gateway.Caller) { c.SeatType.EnterpriseOnly = true }},
		{"no seat type", "workspace.info", redactBase, func(_ *gateway.Principal, c *gateway.Caller) { c.SeatType = nil }},
		{"user override wins over the seat", "workspace.info", redactBase, func(_ *gateway.Principal, c *gateway.Caller) {
			c.UserOverrides = gateway.Permissions{"workspace.budget.view": true}
		}},
		{"user override of another key", "workspace.info", redactBase, func(_ *gateway.Principal, c *gateway.Caller) {
			c.UserOverrides = gateway.Permissions{"workspace.members.view": false}
		}},
		{"workspace override", "workspace.info", redactBase, func(_ *gateway.Principal, c *gateway.Caller) {
			c.WorkspaceOverrides = gateway.Permissions{"workspace.plan.view": false}
		}},
		{"org plan permission", "workspace.info", redactBase, func(_ *gateway.Principal, c *gateway.Caller) {
			c.OrgPlan.Permissions = gateway.Permissions{"workspace.members.view": false}
		}},
		{"seat type denies a second key", "workspace.info", redactBase, func(_ *gateway.Principal, c *gateway.Caller) {
			c.SeatType.Permissions = gateway.Permissions{"workspace.budget.view": false, "workspace.plan.view": false}
		}},
		{"role member", "app.pause", deployBase, func(_ *gateway.Principal, c *gateway.Caller) { c.Member.Role = gateway.RoleMember }},
		{"role viewer", "app.pause", deployBase, func(_ *gateway.Principal, c *gateway.Caller) { c.Member.Role = gateway.RoleViewer }},
		{"not a member", "app.pause", deployBase, func(_ *gateway.Principal, c *gateway.Caller) { c.Member = nil }},
		{"viewer made admin", "app.pause", func() (*gateway.Principal, *gateway.Caller) {
			return agent("p-1"), caller([]string{"supacloud.deploy.*"}, gateway.RoleViewer)
		}, func(_ *gateway.Principal, c *gateway.Caller) { c.Member.Role = gateway.RoleAdmin }},
		{"deploy grant from the default profile", "app.pause", deployBase, func(p *gateway.Principal, c *gateway.Caller) {
			p.ProfileID, c.ProfileRequested, c.Profile = "", "", nil
			c.DefaultProfile = &gateway.Profile{WorkspaceID: "ws-a", ID: "p-d", Name: "default", Allowlist: []string{"supacloud.read.*"}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.note, func(t *testing.T) {
			tool := ref(refs, tc.tool)
			inputs := [2]func() (*gateway.Principal, *gateway.Caller){tc.base, func() (*gateway.Principal, *gateway.Caller) {
				p, c := tc.base()
				tc.mutate(p, c)
				return p, c
			}}
			var want [2]gateway.Decision
			for i, in := range inputs {
				p, c := in()
				d, err := uncached.Decide(context.Background(), p, c, tool, nil)
				if err != nil {
					t.Fatal(err)
				}
				want[i] = decisionOf(d)
			}
			if reflect.DeepEqual(want[0], want[1]) {
				t.Fatalf("the mutation does not change the decision (%+v): the case tests nothing", want[0])
			}
			for _, order := range [][2]int{{0, 1}, {1, 0}} {
				e, _ := newEngine(t, gateway.EditionCommunity)
				for round := range 2 { // the second round is answered from the cache
					for _, i := range order {
						p, c := inputs[i]()
						d, err := e.Decide(context.Background(), p, c, tool, nil)
						if err != nil {
							t.Fatal(err)
						}
						if d.Cached != (round == 1) {
							t.Fatalf("order %v, round %d, input %d: Cached = %v, want %v", order, round, i, d.Cached, round == 1)
						}
						if got := decisionOf(d); !reflect.DeepEqual(got, want[i]) {
							t.Fatalf("order %v, input %d: cached engine decided %+v, want %+v", order, i, got, want[i])
						}
					}
				}
				if st := e.CacheStats(); st.Decisions != 2 {
					t.Errorf("order %v: %d cached decisions, want one per input", order, st.Decisions)
				}
			}
		})
	}
}

// The tools/list cache keys on the input too: a change of role or of the
// allowlist is a new entry, and each answer matches an uncached engine's.
func TestVisibleCacheNeverAnswersAnotherInput(t *testing.T) {
	refs := catalogRefs(t)
	uncached, err := policy.New(context.Background(), policy.Options{FS: policies.FS, Edition: gateway.EditionCommunity, Tools: refs, CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := newEngine(t, gateway.EditionCommunity)
	inputs := []func() (*gateway.Principal, *gateway.Caller){
		func() (*gateway.Principal, *gateway.Caller) {
			return agent("p-1"), caller([]string{"supacloud.deploy.*"}, "owner")
		},
		func() (*gateway.Principal, *gateway.Caller) {
			return agent("p-1"), caller([]string{"supacloud.deploy.*"}, "member")
		},
		func() (*gateway.Principal, *gateway.Caller) {
			return agent("p-1"), caller([]string{"supacloud.read.*"}, "owner")
		},
	}
	for round := range 2 {
		for i, in := range inputs {
			p, c := in()
			want, err := uncached.Visible(context.Background(), p, c)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Visible(context.Background(), p, c)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, want) {
				t.Fatalf("round %d, input %d: cached engine lists %v, want %v", round, i, got, want)
			}
		}
	}
	if st := e.CacheStats(); st.Visible != len(inputs) {
		t.Errorf("%d cached tool sets, want %d", st.Visible, len(inputs))
	}
}
