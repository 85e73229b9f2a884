package policy

import (
	"slices"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpgate/mcpgate/gateway"
)

func TestAnalyseArguments(t *testing.T) {
	cases := []struct {
		note string
		src  string
		all  bool
		keys []string
	}{
		{"constant key", `package p
x if input.arguments.slug == "a"`, false, []string{"slug"}},
		{"nested constant", `package p
x if input.arguments.inputs.env == "prod"`, false, []string{"inputs"}},
		{"no arguments", `package p
x if input.tool.name == "a"`, false, nil},
		{"whole arguments", `package p
x := input.arguments`, true, nil},
		{"variable key", `package p
x if input.arguments[k] == "a"`, true, nil},
		{"bare input", `package p
x := object.get(input, "arguments", {})`, true, nil},
		{"variable top-level", `package p
x if input[k].slug == "a"`, true, nil},
	}
	for _, c := range cases {
		t.Run(c.note, func(t *testing.T) {
			comp := ast.MustCompileModules(map[string]string{"p.rego": c.src})
			got := analyseArguments(comp, gateway.SurfaceSupaCloud)
			if got.all != c.all || !slices.Equal(got.keys, c.keys) {
				t.Fatalf("got %+v, want all=%v keys=%v", got, c.all, c.keys)
			}
		})
	}
}

// TestAnalyseArgumentsPerSurface: what another surface's package reads
// stays out of the key; a shared package's reads stay in.
func TestAnalyseArgumentsPerSurface(t *testing.T) {
	comp := ast.MustCompileModules(map[string]string{
		"s.rego":   "package supacloud\nx if input.arguments.slug == \"a\"",
		"c.rego":   "package ccserver\nx if input.arguments.workspace_id == \"a\"",
		"lib.rego": "package lib\nx if input.arguments.shared == \"a\"",
	})
	for surface, want := range map[string][]string{
		gateway.SurfaceSupaCloud: {"shared", "slug"},
		gateway.SurfaceCCServer:  {"shared", "workspace_id"},
	} {
		got := analyseArguments(comp, surface)
		slices.Sort(got.keys)
		if got.all || !slices.Equal(got.keys, want) {
			t.Errorf("%s: got %+v, want keys %v", surface, got, want)
		}
	}
}

func TestUsesNondeterministic(t *testing.T) {
	cases := map[string]bool{
		"package p\nx if time.now_ns() > 0":                                               true,
		"package p\nx := http.send({\"method\": \"get\", \"url\": \"http://127.0.0.1\"})": true,
		"package p\nx := count(input.tools)":                                              false,
		"package p\nf(y) := rand.intn(\"k\", y)\nx := f(3)":                               true,
	}
	for src, want := range cases {
		if got := usesNondeterministic(ast.MustCompileModules(map[string]string{"p.rego": src})); got != want {
			t.Errorf("%q: got %v, want %v", src, got, want)
		}
	}
}
