package interop

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// coordinatorGateway is the second gateway of the stack, for the external
// coordinators (docs/requirements.md#external-gateway) on /api/mcp: `mcpgate serve --dev` with the demo
// backend instead of the fixture upstream. The tools an API token's scopes
// reach (the read and control levels) are SupaCloud tools, which the
// fixture does not implement (it replaces the demo backend when
// MCPGATE_UPSTREAM_URL is set), and no scope reaches the fixture's tools;
// so allowed coordinator calls need the demo backend. It starts on first
// use, with its own database.
type coordinatorGateway struct {
	once   sync.Once
	base   string // http://127.0.0.1:PORT
	log    string
	err    error
	tokens atomic.Int64
}

// apiPath is the coordinators' MCP endpoint (docs/requirements.md#external-gateway).
const apiPath = "/api/mcp"

// coordinatorURL returns the /api/mcp endpoint of the coordinator gateway,
// starting it on first use.
func (s *stack) coordinatorURL(t *testing.T) string {
	t.Helper()
	c := &s.coord
	c.once.Do(func() {
		c.log = filepath.Join(s.dir, "coordinator-gateway.log")
		c.base, c.err = s.launchGateway(c.log, s.gatewayEnv("coordinator.db"))
	})
	if c.err != nil {
		t.Fatalf("coordinator gateway did not start: %v\n%s", c.err, s.logs())
	}
	return c.base + apiPath
}

// apiToken creates an scmt_ token of the dev workspace with scopes through
// the admin API of the coordinator gateway (as an owner would) and returns
// its value. Every client and scenario run gets a token of its own, so each
// has the per-token hourly limits of docs/requirements.md#external-limits to itself.
func (s *stack) apiToken(t *testing.T, scopes ...string) string {
	t.Helper()
	s.coordinatorURL(t)
	body, _ := json.Marshal(map[string]any{"label": fmt.Sprintf("interop-%d", s.coord.tokens.Add(1)), "scopes": scopes})
	var out struct{ Token, Fingerprint string }
	if err := json.Unmarshal(adminCall(t, s.coord.base, http.MethodPost, "/workspaces/"+devWorkspace+"/api-tokens", string(body)), &out); err != nil || !strings.HasPrefix(out.Token, "scmt_") {
		t.Fatalf("created token %+v (%v), want an scmt_ value", out, err)
	}
	return out.Token
}

// The tools mcp:read and mcp:ops reach (docs/requirements.md#api-tokens; docs.* and
// spec.get are the documentation and contract reads of docs/requirements.md#external-tools-list).
var (
	readLevel = []string{
		"run.list", "run.get", "run.events", "tasks.list_active", "tasks.get",
		"backlog.list", "backlog.get", "approvals.list",
		"memory.search", "memory.get", "memory.list_recent",
		"docs.search", "docs.get", "spec.get",
	}
	opsLevel = []string{
		"workflow.trigger", "task.create", "task.cancel", "task.intervene",
		"approval.decide", "run.rerun_node",
		"schedule.create", "schedule.update", "schedule.pause", "schedule.resume",
	}
)

// hiddenTools are tools of the catalog no coordinator scope reaches: a read
// tool outside the read level and a deploy tool. /api/mcp answers both
// -32601, as it answers a name that does not exist.
var hiddenTools = []string{"projects.list", "app.deploy"}

// coordinatorCase is what a client with an mcp:read + mcp:ops token must
// see on /api/mcp, as the gateway answers it over plain HTTP (rawCall):
// exactly the two levels in tools/list, approvals.list allowed (it lists
// gate), -32601 with the gateway's message for hiddenTools, and
// approval.decide of gate refused by policy as a tool execution error
// (approval.person_required: a tool gate is for a person to decide).
type coordinatorCase struct {
	endpoint, token string
	tools           []string          // sorted
	gate            string            // a waiting tool-class approval of the dev workspace
	denial          gatewayDenial     // approval.decide of gate
	hidden          map[string]string // tool → the gateway's -32601 message
}

func (s *stack) coordinatorCase(t *testing.T) coordinatorCase {
	t.Helper()
	c := coordinatorCase{endpoint: s.coordinatorURL(t), token: s.apiToken(t, "mcp:read", "mcp:ops"), hidden: map[string]string{}}
	c.tools = append(slices.Clone(readLevel), opsLevel...)
	slices.Sort(c.tools)
	r := rawCall(t, c.endpoint, c.token, "approvals.list", map[string]any{})
	if r.Result == nil || r.Result.IsError {
		t.Fatalf("raw approvals.list: HTTP %d %+v %+v", r.status, r.Result, r.Error)
	}
	approvals, _ := r.Result.StructuredContent["approvals"].([]any)
	for _, a := range approvals {
		if m, _ := a.(map[string]any); m["class"] == "tool" && m["status"] == "waiting" {
			c.gate, _ = m["id"].(string)
			break
		}
	}
	if c.gate == "" {
		t.Fatalf("the demo backend has no waiting tool gate in %s: %v", devWorkspace, approvals)
	}
	c.denial = rawDenial(t, c.endpoint, c.token, "approval.decide", c.decideArgs(), "approval.person_required")
	if !strings.Contains(c.denial.Text, "a person must decide") || !strings.Contains(c.denial.Text, c.gate) {
		t.Errorf("raw denial %q does not say that a person must decide %s", c.denial.Text, c.gate)
	}
	for _, tool := range hiddenTools {
		r := rawCall(t, c.endpoint, c.token, tool, map[string]any{})
		if r.status != http.StatusOK || r.Error == nil || r.Error.Code != -32601 || !strings.Contains(r.Error.Message, `tool "`+tool+`" not found`) {
			t.Fatalf("raw %s: HTTP %d %+v %+v, want -32601 as for an unknown tool", tool, r.status, r.Error, r.Result)
		}
		c.hidden[tool] = r.Error.Message
	}
	return c
}

// decideArgs approve the tool gate, which a coordinator may not.
func (c coordinatorCase) decideArgs() map[string]any {
	return map[string]any{"approval_id": c.gate, "decision": "approve"}
}

// checkTools requires tools/list to show exactly the scopes' tools.
func (c coordinatorCase) checkTools(t *testing.T, names []string) {
	t.Helper()
	got := slices.Clone(names)
	slices.Sort(got)
	if !slices.Equal(got, c.tools) {
		t.Errorf("tools/list on /api/mcp = %v, want exactly the read and control levels %v", got, c.tools)
	}
}

// checkAllowed requires the approvals.list a client made to be allowed and
// to show the tool gate.
func (c coordinatorCase) checkAllowed(t *testing.T, isError bool, text string) {
	t.Helper()
	if isError || !strings.Contains(text, c.gate) {
		t.Errorf("approvals.list = isError %v, %.200q; want the approvals, %s among them", isError, text, c.gate)
	}
}

// checkHidden requires a client's error for a hidden tool to be -32601 with
// the gateway's message.
func (c coordinatorCase) checkHidden(t *testing.T, tool string, methodNotFound bool, shown string) {
	t.Helper()
	if !methodNotFound || !strings.Contains(shown, c.hidden[tool]) {
		t.Errorf("%s: the client shows %q (method not found: %v); want -32601 with the gateway's %q", tool, shown, methodNotFound, c.hidden[tool])
	}
}

// checkDenial requires a client to show the refused approval.decide as a
// tool execution error: isError, one block with the gateway's text
// verbatim, and the denial in _meta.
func (c coordinatorCase) checkDenial(t *testing.T, isError bool, blocks int, text string, denial map[string]any) {
	t.Helper()
	if !isError || blocks != 1 || text != c.denial.Text {
		t.Errorf("approval.decide of a tool gate = isError %v, %d blocks, %q; want isError and the gateway's text %q verbatim", isError, blocks, text, c.denial.Text)
	}
	if id, _ := denial["decision_id"].(string); denial["class"] != "Forbidden" || denial["code"] != c.denial.Denial.Code || id == "" {
		t.Errorf("_meta denial = %v, want class Forbidden, code %s and a decision id", denial, c.denial.Denial.Code)
	}
}
