package policy_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/policies"
)

// TestExplainAgreesWithDecide: the explanation is evaluated on the input
// Decide used, and names the gate that denied and the grant that would
// allow.
func TestExplainAgreesWithDecide(t *testing.T) {
	refs := catalogRefs(t)
	x, err := policy.NewExplainer(context.Background(), policy.Options{FS: policies.FS, Edition: gateway.EditionCommunity, Tools: refs})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, tool, role string
		allowlist        []string
		allow            bool
		gate             any
		grantedBy        []any
	}{
		{"read allowed by the tier wildcard", "project.get", gateway.RoleMember, []string{"supacloud.read.*"}, true, nil, []any{"supacloud.read.*"}},
		{"ops denied, missing grant", "workflow.trigger", gateway.RoleMember, []string{"supacloud.read.*"}, false, "grant", []any{}},
		{"deploy denied by the role", "app.deploy", gateway.RoleMember, []string{"supacloud.full"}, false, "role", []any{"supacloud.full"}},
		{"non-member", "project.get", "", []string{"supacloud.read.*"}, false, "member", []any{"supacloud.read.*"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ex, err := x.Explain(context.Background(), agent("p-1"), caller(tc.allowlist, tc.role), ref(refs, tc.tool), nil)
			if err != nil {
				t.Fatal(err)
			}
			if ex.Decision.Allow != tc.allow || ex.Decision.ID == "" {
				t.Fatalf("decision %+v, want allow=%v with an id", ex.Decision, tc.allow)
			}
			doc := ex.Detail["decision"].(map[string]any)
			if doc["allow"] != ex.Decision.Allow {
				t.Fatalf("explain's decision %v disagrees with Decide's %v", doc["allow"], ex.Decision.Allow)
			}
			by := ex.Detail["decided_by"].(map[string]any)
			if by["gate"] != tc.gate {
				t.Errorf("decided_by %v, want gate %v", by, tc.gate)
			}
			grant := ex.Detail["grant"].(map[string]any)
			if got, _ := json.Marshal(grant["granted_by"]); string(got) != mustJSON(t, tc.grantedBy) {
				t.Errorf("granted_by %s, want %v", got, tc.grantedBy)
			}
			if ex.Input["tool"].(map[string]any)["name"] != tc.tool {
				t.Errorf("input %v does not name the tool", ex.Input)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExplainNeedsTheRule: a bundle without data.supacloud.explain is
// refused with a message that says what to add.
func TestExplainNeedsTheRule(t *testing.T) {
	fsys := fstest.MapFS{"supacloud/p.rego": {Data: []byte("package supacloud\ndecision := {\"allow\": false, \"visible\": false}\nvisible_tools := set()\n")}}
	_, err := policy.NewExplainer(context.Background(), policy.Options{FS: fsys, Edition: gateway.EditionCommunity})
	if err == nil || !strings.Contains(err.Error(), policy.ExplainQuery) {
		t.Fatalf("err %v, want one naming %s", err, policy.ExplainQuery)
	}
}

// TestDecideInput: a recorded input is re-decided as Decide decides the
// same call, and an input that is not an object is EInvalid.
func TestDecideInput(t *testing.T) {
	refs := catalogRefs(t)
	x, err := policy.NewExplainer(context.Background(), policy.Options{FS: policies.FS, Edition: gateway.EditionCommunity, Tools: refs})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"project.get", "workflow.trigger"} {
		ex, err := x.Explain(context.Background(), agent("p-1"), caller([]string{"supacloud.read.*"}, gateway.RoleMember), ref(refs, tool), nil)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(ex.Input)
		var in map[string]any
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		if err := dec.Decode(&in); err != nil {
			t.Fatal(err)
		}
		d, err := x.Engine().DecideInput(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allow != ex.Decision.Allow || mustJSON(t, d.Reasons) != mustJSON(t, ex.Decision.Reasons) {
			t.Errorf("%s: DecideInput %+v, Decide %+v", tool, d, ex.Decision)
		}
	}
	if _, err := x.Engine().DecideInput(context.Background(), map[string]any{"x": func() {}}); gateway.ErrorCodeOf(err) != gateway.EInvalid {
		t.Errorf("unconvertible input: %v, want EInvalid", err)
	}
}

// TestExplainReadsTheRulesThatDecided: an engine compiled from a folder
// explains with its own compiled rules and data, not with what the folder
// holds by the time of the first explanation (an edit not yet live): the
// explanation and the decision agree, under the engine's revision.
func TestExplainReadsTheRulesThatDecided(t *testing.T) {
	dir := t.TempDir()
	bundle := func(allow bool) map[string]string {
		files := tinyBundle("rev-1", allow, false)
		files["supacloud/explain.rego"] = "package supacloud\n\nexplain := {\"allow\": allow}\n"
		return files
	}
	writeBundle(t, dir, bundle(true))
	e, err := policy.New(context.Background(), policy.Options{FS: os.DirFS(dir), Edition: gateway.EditionCommunity, Tools: []policy.ToolRef{projectsList}, Revision: "rev-1"})
	if err != nil {
		t.Fatal(err)
	}
	writeBundle(t, dir, bundle(false)) // edited, not loaded
	x, err := e.Explainer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ex, err := x.Explain(context.Background(), agent(""), caller(nil, "member"), projectsList, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ex.Decision.Allow || ex.Detail["allow"] != true || ex.Decision.Revision != "rev-1" {
		t.Errorf("decision %+v, explanation %v: want both the compiled rev-1's allow", ex.Decision, ex.Detail)
	}
}
