package policies_test

import (
	"context"
	"io/fs"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"

	"github.com/mcpgate/mcpgate/policies"
)

// load compiles the embedded bundle the way the gateway does (the FS root
// holds supacloud/). withTests keeps
// the *_test.rego modules, which hold the shared fixtures.
func load(tb testing.TB, withTests bool) (*ast.Compiler, storage.Store) {
	tb.Helper()
	skip := func(path string, info fs.FileInfo, _ int) bool {
		return !withTests && !info.IsDir() && strings.HasSuffix(path, "_test.rego")
	}
	res, err := loader.NewFileLoader().WithFS(policies.FS).WithRegoVersion(ast.RegoV1).Filtered([]string{"."}, skip)
	if err != nil {
		tb.Fatalf("load embedded bundle: %v", err)
	}
	compiler, err := res.Compiler()
	if err != nil {
		tb.Fatalf("compile embedded bundle: %v", err)
	}
	store, err := res.Store()
	if err != nil {
		tb.Fatalf("data documents: %v", err)
	}
	return compiler, store
}

// fixture evaluates one of the inputs defined in supacloud/fixtures_test.rego,
// so the Go benchmarks and `opa bench` (bench.sh) measure the same inputs.
func fixture(tb testing.TB, name string) ast.Value {
	tb.Helper()
	compiler, store := load(tb, true)
	q := rego.New(rego.Query("data.supacloud_test."+name), rego.Compiler(compiler), rego.Store(store))
	rs, err := q.Eval(context.Background())
	if err != nil || len(rs) != 1 {
		tb.Fatalf("fixture %s: %v (%d results)", name, err, len(rs))
	}
	v, err := ast.InterfaceToValue(rs[0].Expressions[0].Value)
	if err != nil {
		tb.Fatalf("fixture %s: %v", name, err)
	}
	return v
}

// prepare compiles query against the bundle without its tests, once, with
// strict builtin errors as the gateway's engine does: a type error in the
// policy fails the evaluation instead of leaving a rule undefined.
func prepare(tb testing.TB, query string) rego.PreparedEvalQuery {
	tb.Helper()
	compiler, store := load(tb, false)
	q := rego.New(rego.Query(query), rego.Compiler(compiler), rego.Store(store), rego.StrictBuiltinErrors(true))
	pq, err := q.PrepareForEval(context.Background())
	if err != nil {
		tb.Fatalf("prepare %s: %v", query, err)
	}
	return pq
}

func eval(tb testing.TB, pq rego.PreparedEvalQuery, input ast.Value) any {
	tb.Helper()
	rs, err := pq.Eval(context.Background(), rego.EvalParsedInput(input))
	if err != nil || len(rs) != 1 {
		tb.Fatalf("eval: %v (%d results)", err, len(rs))
	}
	return rs[0].Expressions[0].Value
}

// TestEmbeddedBundle checks that the embedded copy, without its tests,
// answers both contract queries.
func TestEmbeddedBundle(t *testing.T) {
	tests := []struct {
		name, query, fixture string
		check                func(any) bool
	}{
		{"decision allows a granted script", "data.supacloud.decision", "bench_call", func(v any) bool {
			d, ok := v.(map[string]any)
			return ok && d["allow"] == true && d["tier"] == "ops"
		}},
		{"decision denies deploy without grant", "data.supacloud.decision", "bench_denied", func(v any) bool {
			d, ok := v.(map[string]any)
			reasons, _ := d["reasons"].([]any)
			return ok && d["allow"] == false && len(reasons) == 1
		}},
		{"full profile lists all 71 tools", "data.supacloud.visible_tools", "bench_list", func(v any) bool {
			s, ok := v.([]any)
			return ok && len(s) == 71
		}},
		{"read and ops profile lists 59 tools", "data.supacloud.visible_tools", "bench_list_read", func(v any) bool {
			s, ok := v.([]any)
			return ok && len(s) == 59
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := eval(t, prepare(t, tc.query), fixture(t, tc.fixture)); !tc.check(got) {
				t.Errorf("unexpected result %v", got)
			}
		})
	}
}

// TestConcurrentEval evaluates one prepared query from several goroutines,
// as the gateway does; run with -race.
func TestConcurrentEval(t *testing.T) {
	pq := prepare(t, "data.supacloud.decision")
	input := fixture(t, "bench_read")
	done := make(chan bool)
	for range 8 {
		go func() {
			ok := true
			for range 20 {
				rs, err := pq.Eval(context.Background(), rego.EvalParsedInput(input))
				ok = ok && err == nil && len(rs) == 1
			}
			done <- ok
		}()
	}
	for range 8 {
		if !<-done {
			t.Error("a concurrent evaluation failed")
		}
	}
}

// BenchmarkPolicy measures the prepared queries the gateway runs, including
// the Go API's overhead, on the inputs of fixtures_test.rego. "floor" is a
// one-comparison query: it tells the machine's cost from the policy's.
// Targets (on a typical machine): decision ≤ 25 µs, visible_tools ≤ 500 µs.
func BenchmarkPolicy(b *testing.B) {
	benchmarks := []struct{ name, query, fixture string }{
		{"floor", `input.edition == "community"`, "bench_read"},
		{"decision/read allowed", "data.supacloud.decision", "bench_read"},
		{"decision/script allowed", "data.supacloud.decision", "bench_call"},
		{"decision/deploy denied", "data.supacloud.decision", "bench_denied"},
		{"visible_tools/full", "data.supacloud.visible_tools", "bench_list"},
		{"visible_tools/read and ops", "data.supacloud.visible_tools", "bench_list_read"},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			pq := prepare(b, bm.query)
			input := fixture(b, bm.fixture)
			b.ReportAllocs()
			for b.Loop() {
				eval(b, pq, input)
			}
		})
	}
}
