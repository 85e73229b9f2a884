package policy_test

import (
	"context"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/mcpgate/mcpgate/policies"
	"github.com/mcpgate/mcpgate/tools"
)

// ccQuery prepares query over the shipped bundle, loaded as the engine
// loads it (the whole root, both surfaces, tests skipped).
func ccQuery(t *testing.T, query string) rego.PreparedEvalQuery {
	t.Helper()
	skip := func(_ string, info fs.FileInfo, _ int) bool {
		return !info.IsDir() && strings.HasSuffix(info.Name(), "_test.rego")
	}
	res, err := loader.NewFileLoader().WithFS(policies.FS).WithRegoVersion(ast.RegoV1).Filtered([]string{"."}, skip)
	if err != nil {
		t.Fatal(err)
	}
	c, err := res.Compiler()
	if err != nil {
		t.Fatal(err)
	}
	pq, err := rego.New(rego.Query(query), rego.Compiler(c), rego.StrictBuiltinErrors(true)).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return pq
}

func ccEval(t *testing.T, pq rego.PreparedEvalQuery, input any) any {
	t.Helper()
	rs, err := pq.Eval(context.Background(), rego.EvalInput(input))
	if err != nil || len(rs) != 1 {
		t.Fatalf("eval: %v (%d results)", err, len(rs))
	}
	return rs[0].Expressions[0].Value
}

func ccToolInput(tool tools.Tool) map[string]any {
	classes := []any{}
	for _, a := range tool.ActionClasses {
		classes = append(classes, a)
	}
	return map[string]any{"name": tool.Name, "group": tool.Group, "requires_approval": tool.RequiresApproval, "action_classes": classes}
}

// TestCCServerBundleNamesOnlyCatalogTools: every tool name the mode policy
// and the workspace data list is in the cc_server catalog.
func TestCCServerBundleNamesOnlyCatalogTools(t *testing.T) {
	cat, err := tools.LoadCCServer()
	if err != nil {
		t.Fatal(err)
	}
	pq := ccQuery(t, "x := data.ccserver")
	rs, err := pq.Eval(context.Background())
	if err != nil || len(rs) != 1 {
		t.Fatalf("eval: %v", err)
	}
	data := rs[0].Bindings["x"].(map[string]any)
	var names []string
	collect := func(v any) {
		for _, n := range v.([]any) {
			names = append(names, n.(string))
		}
	}
	for _, m := range data["mode_tool_policy"].(map[string]any) {
		collect(m.(map[string]any)["tools"])
		collect(m.(map[string]any)["own_ticket_tools"])
	}
	for _, s := range data["always_allowed"].(map[string]any) {
		collect(s)
	}
	ws := data["workspace"].(map[string]any)
	collect(ws["global_tools"])
	collect(ws["optional_tools"])
	if len(names) < 100 {
		t.Fatalf("collected only %d names; the data layout changed", len(names))
	}
	for _, n := range names {
		if _, ok := cat.Lookup(n); !ok {
			t.Errorf("policies/ccserver names %q, which the cc_server catalog does not hold", n)
		}
	}
}

// TestCCServerCallableEqualsAllowed: for every catalog tool and every mode,
// visible_tools reports the tool callable iff a call with the tool's
// example arguments in a member workspace is allowed.
func TestCCServerCallableEqualsAllowed(t *testing.T) {
	cat, err := tools.LoadCCServer()
	if err != nil {
		t.Fatal(err)
	}
	decide := ccQuery(t, "data.ccserver.decision")
	visible := ccQuery(t, "data.ccserver.visible_tools")
	var all []any
	for _, tool := range cat.Tools() {
		all = append(all, ccToolInput(tool))
	}
	members := []any{"ws-acme"}
	for _, mode := range []string{"chat", "plan", "review", "orchestrate"} {
		principal := map[string]any{"kind": "agent", "sub": "u-ada", "mode": mode, "ticket_id": "TCK-7"}
		vis := map[string]bool{}
		for _, n := range ccEval(t, visible, map[string]any{"principal": principal, "memberships": members, "tools": all}).([]any) {
			vis[n.(string)] = true
		}
		callable := 0
		for _, tool := range cat.Tools() {
			args, _ := cat.ExampleArguments(tool.Name)
			if _, scoped := args["workspace_id"]; scoped || slices.Contains([]string{"search_tool_bm25", "list_my_tools"}, tool.Name) {
				args["workspace_id"] = "ws-acme"
			}
			if _, ok := args["ticket_id"]; ok {
				args["ticket_id"] = "TCK-7"
			}
			in := map[string]any{"principal": principal, "memberships": members, "tool": ccToolInput(tool), "arguments": args, "guard": map[string]any{"decision": "allow"}}
			d := ccEval(t, decide, in).(map[string]any)
			if d["allow"] != vis[tool.Name] {
				t.Errorf("%s mode, %s: allow %v, callable %v (%v)", mode, tool.Name, d["allow"], vis[tool.Name], d["reasons"])
			}
			if d["allow"] == true {
				callable++
			}
			if want := tool.RequiresApproval && d["allow"] == true; d["obligations"].(map[string]any)["approval_required"] != want {
				t.Errorf("%s mode, %s: approval_required %v, want %v", mode, tool.Name, d["obligations"], want)
			}
		}
		if mode == "chat" && callable != cat.Len() {
			t.Errorf("chat reaches %d tools, want every one of %d", callable, cat.Len())
		}
		if mode != "chat" && (callable < 23 || callable > 80) {
			t.Errorf("%s mode reaches %d tools; a curated list should be between the always-allowed sets and most of the catalog", mode, callable)
		}
	}
}
