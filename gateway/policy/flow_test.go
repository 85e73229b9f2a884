package policy_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"testing/fstest"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/policy"
)

// flowEngine compiles a small bundle whose decision asks for an approval
// once the session has read private data; extra is added to its module.
func flowEngine(t *testing.T, extra string) *policy.Engine {
	t.Helper()
	mod := `package supacloud

flow_rules := {"workspaces": ["ws-a"]}

default tainted := false

tainted if "private" in input.session.labels_read

decision := {"allow": true, "visible": true, "reasons": [], "obligations": {"approval_required": tainted, "flow_reads": ["private"]}}

visible_tools := set()
` + extra
	e, err := policy.New(context.Background(), policy.Options{FS: fstest.MapFS{"supacloud/flow.rego": {Data: []byte(mod)}}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestFlowRulesPerWorkspace(t *testing.T) {
	e := flowEngine(t, "")
	if !e.FlowRules("ws-a") || e.FlowRules("ws-b") || e.FlowRules("") {
		t.Fatalf("FlowRules(ws-a, ws-b, \"\") = %v %v %v; want true false false", e.FlowRules("ws-a"), e.FlowRules("ws-b"), e.FlowRules(""))
	}
	if _, err := policy.New(context.Background(), policy.Options{FS: fstest.MapFS{"supacloud/p.rego": {Data: []byte(
		"package supacloud\nflow_rules := {\"workspaces\": [1]}\ndecision := {}\nvisible_tools := set()\n")}}}); err == nil {
		t.Fatal("a bundle whose flow_rules.workspaces holds a number compiled; want an error naming it")
	}
}

// A decision cached for a clean session is never served once the session
// has read private data: the cache keys on input.session.
func TestFlowNoStaleAllowAfterTaint(t *testing.T) {
	e := flowEngine(t, "")
	p := &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "u", WorkspaceID: "ws-a", TaskID: "t"}
	c := &gateway.Caller{Workspace: &gateway.Workspace{ID: "ws-a"}}
	tool := policy.ToolRef{Name: "pr.create", Tier: gateway.TierOps}
	decide := func(s *gateway.FlowSession) *gateway.Decision {
		t.Helper()
		tool.Session = s
		d, err := e.Decide(context.Background(), p, c, tool, nil)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	clean := &gateway.FlowSession{Key: "k"}
	tainted := &gateway.FlowSession{Key: "k", Reads: []gateway.FlowRead{{Label: "private", Tool: "app.files.get", AuditID: 7, Time: time.Now()}}}
	for i, tc := range []struct {
		s    *gateway.FlowSession
		want bool
	}{{clean, false}, {clean, false}, {tainted, true}, {clean, false}, {tainted, true}} {
		if d := decide(tc.s); d.Obligations.ApprovalRequired != tc.want {
			t.Fatalf("decision %d: approval_required = %v, want %v", i, d.Obligations.ApprovalRequired, tc.want)
		}
	}
	if d := decide(clean); len(d.Obligations.FlowReads) != 1 || d.Obligations.FlowReads[0] != "private" {
		t.Fatalf("flow_reads = %v, want [private]", d.Obligations.FlowReads)
	}
}

// tools_called enters the input, and the cache key, only for a bundle
// that reads it: a session calling one more tool shares the cached
// decision otherwise.
func TestFlowToolsCalledOnlyWhenRead(t *testing.T) {
	p := &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "u", WorkspaceID: "ws-a", TaskID: "t"}
	c := &gateway.Caller{Workspace: &gateway.Workspace{ID: "ws-a"}}
	for _, tc := range []struct {
		extra   string
		entries int
	}{
		{"", 1},
		{"twice if count(input.session.tools_called) > 1\n", 2},
	} {
		e := flowEngine(t, tc.extra)
		for _, tools := range [][]string{{"a"}, {"a", "b"}} {
			s := &gateway.FlowSession{Key: "k", Tools: tools}
			if _, err := e.Decide(context.Background(), p, c, policy.ToolRef{Name: "x", Tier: gateway.TierRead, Session: s}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if got := e.CacheStats().Decisions; got != tc.entries {
			t.Errorf("bundle %q: %d cached decisions after two tool lists, want %d", tc.extra, got, tc.entries)
		}
	}
}

// The workspace's own switch (gateway.Workspace.FlowRules, set through the
// admin API; on cc_server gateway.Caller.FlowRulesIn) is
// input.workspace.flow_rules, true, only while on, on both surfaces: the
// cache keys on it, so a decision made before the switch is never served
// after it, and the input of a workspace left off is as it was.
func TestFlowWorkspaceSwitchInTheInput(t *testing.T) {
	const mod = `package %s

default switched := false

switched if input.workspace.flow_rules == true

decision := {"allow": true, "visible": true, "reasons": [], "obligations": {"approval_required": switched}}

visible_tools := set()
`
	for _, surface := range []string{gateway.SurfaceSupaCloud, gateway.SurfaceCCServer} {
		t.Run(surface, func(t *testing.T) {
			bundle := fstest.MapFS{surface + "/p.rego": {Data: fmt.Appendf(nil, mod, surface)}}
			e, err := policy.New(context.Background(), policy.Options{FS: bundle, Surface: surface, KeepInput: true})
			if err != nil {
				t.Fatal(err)
			}
			p := &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "u", WorkspaceID: "ws-b", TaskID: "t"}
			for i, on := range []bool{false, true, true, false} {
				c := &gateway.Caller{Workspace: &gateway.Workspace{ID: "ws-b", FlowRules: on}}
				if surface == gateway.SurfaceCCServer {
					c = &gateway.Caller{}
					if on {
						c.FlowRulesIn = []string{"ws-b"}
					}
				}
				tool := policy.ToolRef{Name: "pr.create", Tier: gateway.TierOps, Session: &gateway.FlowSession{Key: "k"}, FlowRules: c.FlowRulesOn(p.WorkspaceID)}
				d, err := e.Decide(context.Background(), p, c, tool, nil)
				if err != nil {
					t.Fatal(err)
				}
				if d.Obligations.ApprovalRequired != on {
					t.Errorf("decision %d (switch %v): approval_required = %v", i, on, d.Obligations.ApprovalRequired)
				}
				in, _ := d.Input.(map[string]any)
				if ws, ok := in["workspace"]; ok != on || (on && !reflect.DeepEqual(ws, map[string]any{"flow_rules": true})) {
					t.Errorf("decision %d (switch %v): input.workspace = %v (present %v); want {\"flow_rules\": true} only while on", i, on, ws, ok)
				}
			}
			if got := e.CacheStats().Decisions; got != 2 {
				t.Errorf("%d cached decisions for two inputs, want 2", got)
			}
		})
	}
}
