package policy_test

import (
	"context"
	"fmt"
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
