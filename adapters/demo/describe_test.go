package demo

import (
	"strings"
	"testing"
)

// Issue 30, point 4: a workspace the gateway's store declares (the dev
// seed's ws-demo) is described by workspace.info with the store's values,
// not with invented ones, whether it was described before its first call
// or after; what the store does not hold (budget, region) stays generated.
func TestDescribeWorkspace(t *testing.T) {
	facts := WorkspaceFacts{Name: "Acme Robotics", Slug: "acme", PlanTier: "team", MemberCount: 2}
	check := func(t *testing.T, b *Backend, ws string) {
		t.Helper()
		out := mustOK(t, call(t, b, ws, "", "workspace.info", nil))
		if out["name"] != facts.Name || out["slug"] != facts.Slug || out["plan_tier"] != facts.PlanTier || out["member_count"] != float64(facts.MemberCount) {
			t.Errorf("workspace.info of %s = %v, want the described %+v", ws, out, facts)
		}
		if out["region"] == "" || out["budget_currency"] != "USD" {
			t.Errorf("workspace.info of %s lost its generated fields: %v", ws, out)
		}
	}
	t.Run("before the first call", func(t *testing.T) {
		b := newTestBackend()
		b.Describe("ws-demo", facts)
		check(t, b, "ws-demo")
		projects := mustOK(t, call(t, b, "ws-demo", "", "projects.list", nil))
		for _, p := range projects["projects"].([]any) {
			if repo := p.(map[string]any)["repository"].(string); !strings.HasPrefix(repo, "acme/") {
				t.Errorf("project repository %q is not under the described slug acme/", repo)
			}
		}
	})
	t.Run("after it", func(t *testing.T) {
		b := newTestBackend()
		mustOK(t, call(t, b, "ws-demo", "", "workspace.info", nil))
		b.Describe("ws-demo", facts)
		check(t, b, "ws-demo")
	})
	t.Run("other workspaces keep their generated story", func(t *testing.T) {
		b := newTestBackend()
		b.Describe("ws-demo", facts)
		want := mustOK(t, call(t, newTestBackend(), "ws-b", "", "workspace.info", nil))
		if got := mustOK(t, call(t, b, "ws-b", "", "workspace.info", nil)); got["name"] != want["name"] {
			t.Errorf("describing ws-demo changed ws-b: %v, want %v", got["name"], want["name"])
		}
	})
}
