package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// The external MCP gateway (docs/requirements.md#external-gateway: /api/mcp, scmt_ API tokens) through
// the real wiring, with the official Go SDK client, on both stores.

const apiPath = "/api/mcp"

// readLevel and opsLevel are the tools mcp:read and mcp:ops reach
// (docs/requirements.md#api-tokens; docs.* and spec.get: docs/requirements.md#external-tools-list).
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

// createToken creates an scmt_ token through the admin API and returns its
// value and fingerprint.
func createToken(t *testing.T, g *gatewayUnderTest, ws, label string, scopes ...string) (string, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"label": label, "scopes": scopes})
	status, reply := adminDo(t, g, http.MethodPost, "/workspaces/"+ws+"/api-tokens", "e2e-admin-token", string(body))
	if status != http.StatusCreated {
		t.Fatalf("create token %v: %d %s", scopes, status, reply)
	}
	var out struct{ Token, Fingerprint string }
	must(t, json.Unmarshal([]byte(reply), &out))
	return out.Token, out.Fingerprint
}

// coordinatorAudit returns the newest audit row of tool in ws made with the
// token fp.
func (g *gatewayUnderTest) coordinatorAudit(t *testing.T, ws, fp, tool string) gateway.AuditEvent {
	t.Helper()
	evs, err := g.app.Store.ListAuditEvents(context.Background(), gateway.AuditFilter{WorkspaceID: ws, Tool: tool, Limit: 1000})
	must(t, err)
	for _, ev := range evs {
		if ev.TokenFP == fp {
			return ev
		}
	}
	t.Fatalf("no audit row of token %s for %s in %s", fp, tool, ws)
	return gateway.AuditEvent{}
}

// rpcCode is the JSON-RPC error code of err, 0 when it has none.
func rpcCode(err error) int64 {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return werr.Code
	}
	return 0
}

// refusal is what a refused tools/call said, whichever wire shape the
// gateway uses for it: a JSON-RPC error or a tool execution error
// (isError: true).
func refusal(res *mcp.CallToolResult, err error) (string, bool) {
	if err != nil {
		return err.Error(), true
	}
	if res != nil && res.IsError {
		return textOf(res), true
	}
	return "", false
}

func TestCoordinatorScopeMatrix(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, dbURL(t), nil)
			ids := seedFixtures(t, g)["ws-a"]
			readTok, readFP := createToken(t, g, "ws-a", "reader", "mcp:read")
			opsTok, opsFP := createToken(t, g, "ws-a", "ops", "mcp:ops")
			bothTok, bothFP := createToken(t, g, "ws-a", "both", "mcp:read", "mcp:ops")
			mgmtTok, mgmtFP := createToken(t, g, "ws-a", "management", "management:read")
			// A token with no scopes cannot be created through the API (400,
			// TestCoordinatorBadInput); one stored that way reaches nothing.
			noneTok := "scmt_" + strings.Repeat("n", 43)
			must(t, g.app.Store.CreateAPIToken(context.Background(), &gateway.APIToken{
				Fingerprint: "00000000deadbeef", WorkspaceID: "ws-a", Label: "none", Scopes: []string{}, Status: "active",
				Hash: auth.HashAPIToken(noneTok), CreatedAt: time.Now().UTC(),
			}))
			cases := []struct {
				name, token, fp string
				tools           []string
			}{
				{"read only", readTok, readFP, readLevel},
				{"ops only", opsTok, opsFP, opsLevel},
				{"read and ops", bothTok, bothFP, append(slices.Clone(readLevel), opsLevel...)},
				{"management:read only", mgmtTok, mgmtFP, nil},
				{"no scopes", noneTok, "00000000deadbeef", nil},
			}
			// One call per level, plus tools no token reaches.
			probes := map[string]map[string]any{
				"run.list":       {},
				"docs.search":    {"query": "approve"},
				"schedule.pause": {"schedule_id": ids["$schedule"]},
				"projects.list":  {},                       // read tier, not the coordinator read level
				"app.deploy":     {"app_id": ids["$app"]},  // deploy: never external
				"script.run":     {"slug": ids["$script"]}, // carve-out
				"no.such.tool":   {},                       // does not exist
				"workspace.info": {"workspace_id": "ws-b"}, // hidden: its arguments do not matter
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					cs := g.connectAt(t, apiPath, c.token)
					got := listed(t, cs)
					want := map[string]bool{}
					for _, n := range c.tools {
						want[n] = true
					}
					if len(got) != len(want) {
						t.Errorf("tools/list shows %d tools, want %d: %v", len(got), len(want), got)
					}
					for n := range want {
						if !got[n] {
							t.Errorf("tools/list lacks %s", n)
						}
					}
					for tool, args := range probes {
						res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
						if want[tool] {
							if err != nil || res.IsError {
								t.Errorf("%s: want allowed, got %v %+v", tool, err, res)
								continue
							}
							ev := g.coordinatorAudit(t, "ws-a", c.fp, tool)
							if ev.Status != gateway.AuditAllowed || ev.PrincipalKind != gateway.PrincipalCoordinator || ev.Actor != "token:"+c.fp || ev.TaskID != "" {
								t.Errorf("%s audit row %+v", tool, ev)
							}
							continue
						}
						if rpcCode(err) != wire.RPCMethodNotFound {
							t.Errorf("%s: want -32601, got %v %+v", tool, err, res)
						}
						if !contains(err.Error(), `tool "`+tool+`" not found`) {
							t.Errorf("%s: message %q, want the unknown-tool text", tool, err)
						}
					}
				})
			}
			// Hidden and nonexistent tools get byte-identical errors (but
			// the name), so hidden tools cannot be enumerated.
			s := g.rawAt(t, apiPath, readTok)
			hidden := s.post(callBody("app.deploy", `{"app_id":"x"}`))
			unknown := s.post(callBody("app.deploz", `{"app_id":"x"}`))
			if hidden.status != 200 || hidden.Error == nil || unknown.Error == nil {
				t.Fatalf("raw replies: %+v / %+v", hidden, unknown)
			}
			h := strings.ReplaceAll(hidden.Error.Message, "app.deploy", "NAME") + string(hidden.Error.Data)
			u := strings.ReplaceAll(unknown.Error.Message, "app.deploz", "NAME") + string(unknown.Error.Data)
			if h != u || hidden.Error.Code != unknown.Error.Code || hidden.Error.Code != wire.RPCMethodNotFound {
				t.Errorf("hidden and unknown differ:\n %d %s\n %d %s", hidden.Error.Code, h, unknown.Error.Code, u)
			}
			// The hidden call is audited as a denial with the token's
			// fingerprint and the scope reason; the value is nowhere.
			ev := g.coordinatorAudit(t, "ws-a", readFP, "app.deploy")
			if ev.Status != gateway.AuditDenied || !containsString(ev.ReasonCodes, "scope.missing") {
				t.Errorf("hidden call audit row: %+v", ev)
			}
			raw, _ := json.Marshal(ev)
			if contains(string(raw), readTok[5:]) {
				t.Errorf("audit row holds the token value: %s", raw)
			}
		})
	}
}

func TestCoordinatorBadInput(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, dbURL(t), nil)
			seedFixtures(t, g)
			good, _ := createToken(t, g, "ws-a", "good", "mcp:read", "mcp:ops")
			revoked, revokedFP := createToken(t, g, "ws-a", "gone", "mcp:read")
			if st, body := adminDo(t, g, http.MethodDelete, "/api-tokens/"+revokedFP, "e2e-admin-token", ""); st != http.StatusNoContent {
				t.Fatalf("revoke: %d %s", st, body)
			}
			jwt := g.token(t, "ws-a", "mia", "task-ws-a", "reader")
			for _, c := range []struct {
				name, path, token, want string
			}{
				{"no credential", apiPath, "", "missing Authorization"},
				{"malformed", apiPath, "scmt_short", "malformed API token"},
				{"unknown", apiPath, "scmt_" + strings.Repeat("u", 43), "not recognised"},
				{"revoked", apiPath, revoked, "revoked"},
				{"wrong prefix", apiPath, "scmx_" + good[5:], "scmt_ API tokens"},
				{"agent JWT on /api/mcp", apiPath, jwt, "agent session JWTs belong on /mcp"},
				{"scmt_ token on /mcp", "/mcp", good, "scmt_ API tokens belong on /api/mcp"},
			} {
				t.Run(c.name, func(t *testing.T) {
					s := &rawSession{t: t, url: g.srv.URL + c.path, token: c.token}
					r := s.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + protocolVersion + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
					if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") == "" || r.Error == nil || !contains(r.Error.Message, c.want) {
						t.Fatalf("got %d %+v, want 401 saying %q", r.status, r.Error, c.want)
					}
					if c.token != "" && len(c.token) > 12 && contains(r.Error.Message+r.header.Get("WWW-Authenticate"), c.token[6:]) {
						t.Fatalf("the reply repeats the credential")
					}
				})
			}
			t.Run("unknown scope at creation", func(t *testing.T) {
				for _, body := range []string{`{"label":"x","scopes":["mcp:deploy"]}`, `{"label":"x","scopes":[]}`, `{"label":"x","scopes":["mcp:read","admin"]}`} {
					if st, reply := adminDo(t, g, http.MethodPost, "/workspaces/ws-a/api-tokens", "e2e-admin-token", body); st != http.StatusBadRequest {
						t.Errorf("%s: %d %s, want 400", body, st, reply)
					}
				}
			})
			t.Run("workspace_id of another workspace", func(t *testing.T) {
				cs := g.connectAt(t, apiPath, good)
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run.list", Arguments: map[string]any{"workspace_id": "ws-b"}})
				msg, refused := refusal(res, err)
				if !refused || !contains(msg, "ws-b") {
					t.Fatalf("want a refusal naming ws-b, got %v %+v", err, res)
				}
				evs, _ := g.app.Store.ListAuditEvents(context.Background(), gateway.AuditFilter{WorkspaceID: "ws-a", Tool: "run.list", Limit: 1})
				if len(evs) != 1 || evs[0].Status != gateway.AuditDenied || !containsString(evs[0].ReasonCodes, "workspace.mismatch") {
					t.Fatalf("audit: %+v", evs)
				}
				// A tool execution error whose _meta carries the denial, with
				// the decision of the audit row (the policy allowed the tool;
				// the workspace check refused the call after it).
				if err != nil || !res.IsError {
					t.Fatalf("want a tool execution error, got %v %+v", err, res)
				}
				d, _ := res.Meta["io.mcpgate/denial"].(map[string]any)
				if d["class"] != "Forbidden" || d["code"] != "workspace.mismatch" || d["decision_id"] != evs[0].DecisionID || evs[0].DecisionID == "" {
					t.Errorf("denial _meta %v, want class Forbidden, code workspace.mismatch and decision %q of the audit row", d, evs[0].DecisionID)
				}
				if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run.list", Arguments: map[string]any{"workspace_id": "ws-a"}}); err != nil || res.IsError {
					t.Fatalf("own workspace_id: %v %+v", err, res)
				}
			})
			t.Run("another workspace's run", func(t *testing.T) {
				run := firstID(t, g, "ws-b", "run.list", "runs")
				cs := g.connectAt(t, apiPath, good)
				// The read level's tools that take an id, each with an id of
				// ws-b: not found, and nothing of ws-b in the reply.
				for _, c := range []struct {
					tool string
					args map[string]any
				}{
					{"run.get", map[string]any{"run_id": run}},
					{"run.events", map[string]any{"run_id": run}},
					{"run.rerun_node", map[string]any{"run_id": run, "node_id": "n1"}},
					{"tasks.get", map[string]any{"task_id": firstID(t, g, "ws-b", "tasks.list_active", "tasks")}},
					{"backlog.get", map[string]any{"backlog_item_id": firstID(t, g, "ws-b", "backlog.list", "items")}},
				} {
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
					if err != nil || !res.IsError || !contains(textOf(res), "not found") {
						t.Errorf("%s with an id of ws-b: %v %+v, want not found", c.tool, err, res)
						continue
					}
					if res.StructuredContent != nil {
						t.Errorf("%s: the not-found result carries data: %+v", c.tool, res.StructuredContent)
					}
				}
			})
			t.Run("revoke during an open session", func(t *testing.T) {
				tok, fp := createToken(t, g, "ws-a", "short-lived", "mcp:read")
				s := g.rawAt(t, apiPath, tok)
				if r := s.post(callBody("run.list", `{}`)); r.status != 200 || r.Error != nil {
					t.Fatalf("before revoke: %d %+v", r.status, r.Error)
				}
				if st, body := adminDo(t, g, http.MethodDelete, "/api-tokens/"+fp, "e2e-admin-token", ""); st != http.StatusNoContent {
					t.Fatalf("revoke: %d %s", st, body)
				}
				if r := s.post(callBody("run.list", `{}`)); r.status != http.StatusUnauthorized || !contains(r.Error.Message, "revoked") {
					t.Fatalf("after revoke: %d %+v, want 401", r.status, r.Error)
				}
			})
		})
	}
}

// firstID returns the id of the first item tool lists in ws (demo backend).
func firstID(t *testing.T, g *gatewayUnderTest, ws, tool, list string) string {
	t.Helper()
	res, err := g.app.Pipeline.Adapter.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: ws, Tool: tool})
	if err != nil || res.IsError {
		t.Fatalf("demo %s: %v %+v", tool, err, res)
	}
	items, _ := res.StructuredContent[list].([]any)
	if len(items) == 0 {
		t.Fatalf("demo %s listed no %s", tool, list)
	}
	return items[0].(map[string]any)["id"].(string)
}

// gates returns the waiting approvals of ws by class.
func gates(t *testing.T, g *gatewayUnderTest, ws string) map[string]string {
	t.Helper()
	res, err := g.app.Pipeline.Adapter.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: ws, Tool: "approvals.list"})
	if err != nil || res.IsError {
		t.Fatalf("approvals.list: %v %+v", err, res)
	}
	out := map[string]string{}
	for _, a := range res.StructuredContent["approvals"].([]any) {
		m := a.(map[string]any)
		if _, seen := out[m["class"].(string)]; !seen {
			out[m["class"].(string)] = m["id"].(string)
		}
	}
	return out
}

func TestCoordinatorHumanGates(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, dbURL(t), nil)
			seedFixtures(t, g)
			must(t, g.app.Store.PutProfile(context.Background(), &gateway.Profile{WorkspaceID: "ws-a", ID: "decider", Name: "decider", Allowlist: []string{"supacloud.ops.*"}}))
			tok, fp := createToken(t, g, "ws-a", "coord", "mcp:ops")
			byClass := gates(t, g, "ws-a")
			for _, class := range []string{"question", "tool", "visual", "tier_change", "workflow_human_gate"} {
				if byClass[class] == "" {
					t.Fatalf("demo has no waiting %s gate: %v", class, byClass)
				}
			}
			principals := map[string]*mcp.ClientSession{
				"coordinator": g.connectAt(t, apiPath, tok),
				"agent":       g.connect(t, g.token(t, "ws-a", "mia", "task-ws-a", "decider")),
			}
			for who, cs := range principals {
				for _, class := range []string{"tool", "visual", "tier_change", "workflow_human_gate"} {
					// The caller cannot pass the class off as a question: the
					// gateway asks the backend.
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "approval.decide", Arguments: map[string]any{
						"approval_id": byClass[class], "decision": "approve", "answer": "yes", "gate_class": "question"}})
					msg, refused := refusal(res, err)
					if !refused || !contains(msg, "a person must decide") {
						t.Errorf("%s deciding a %s gate: %v %+v, want refused saying a person must decide", who, class, err, res)
					}
				}
			}
			ev := g.coordinatorAudit(t, "ws-a", fp, "approval.decide")
			if ev.Status != gateway.AuditDenied || !containsString(ev.ReasonCodes, "approval.person_required") {
				t.Errorf("refused decide audit row: %+v", ev)
			}
			res, err := principals["coordinator"].CallTool(context.Background(), &mcp.CallToolParams{Name: "approval.decide", Arguments: map[string]any{
				"approval_id": byClass["question"], "decision": "approve", "answer": "Stripe"}})
			if err != nil || res.IsError {
				t.Fatalf("question gate: %v %+v", err, res)
			}
			if got := gates(t, g, "ws-a"); got["question"] == byClass["question"] {
				t.Errorf("question gate %s still waiting", byClass["question"])
			}
			// An id the workspace does not have is refused too (fail closed).
			res, err = principals["coordinator"].CallTool(context.Background(), &mcp.CallToolParams{Name: "approval.decide", Arguments: map[string]any{
				"approval_id": "apr-nope", "decision": "reject"}})
			if msg, refused := refusal(res, err); !refused || !contains(msg, "could not be classified") {
				t.Errorf("unknown approval: %v %+v", err, res)
			}
		})
	}
}

func TestCoordinatorTaskCreate(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, dbURL(t), nil)
			ids := seedFixtures(t, g)["ws-a"]
			tok, fp := createToken(t, g, "ws-a", "coord", "mcp:read", "mcp:ops")
			cs := g.connectAt(t, apiPath, tok)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "task.create", Arguments: map[string]any{
				"project_id": ids["$project"], "prompt": "Summarise the open incidents", "budget_usd": 80}})
			if err != nil || res.IsError {
				t.Fatalf("task.create: %v %+v", err, res)
			}
			sc := res.StructuredContent.(map[string]any)
			task := sc["task"].(map[string]any)
			if sc["budget_clamped"] != true || task["budget_usd"].(float64) != 50 || task["origin"] != "coordinator" {
				t.Errorf("task.create under the demo budget rules: %+v", sc)
			}
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tasks.get", Arguments: map[string]any{"task_id": task["id"]}})
			if err != nil || res.IsError {
				t.Fatalf("tasks.get of the new task: %v %+v", err, res)
			}
			ev := g.coordinatorAudit(t, "ws-a", fp, "task.create")
			if ev.Status != gateway.AuditAllowed || ev.WorkspaceID != "ws-a" || ev.TokenFP != fp {
				t.Errorf("task.create audit row: %+v", ev)
			}
			// A budget beyond the workspace's remaining budget is refused by
			// the backend, as in the app.
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "task.create", Arguments: map[string]any{
				"project_id": ids["$project"], "prompt": "Too expensive", "budget_usd": 1e9}})
			if err != nil || !res.IsError || !contains(textOf(res), "remaining budget") {
				t.Errorf("over budget: %v %+v", err, res)
			}
		})
	}
}
