package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/tools"
)

// ccGateway is a gateway with the cc_server surface on, its handler behind
// an httptest server of its own (as MCPGATE_CCSERVER_LISTEN serves it), and
// user ada a member of ws-acme only.
type ccGateway struct {
	*gatewayUnderTest
	cc *httptest.Server
}

func startCCGateway(t *testing.T, dbURL string) *ccGateway {
	t.Helper()
	return startCCGatewayEnv(t, dbURL, nil)
}

// startCCGatewayEnv is startCCGateway with extra environment on top.
func startCCGatewayEnv(t *testing.T, dbURL string, extra map[string]string) *ccGateway {
	t.Helper()
	// Every mode calls all 110 tools: limits far above that (and the
	// env override of the per-principal cap at work).
	env := map[string]string{"MCPGATE_CCSERVER_LISTEN": "127.0.0.1:0",
		"MCPGATE_CCSERVER_CALLS_PER_MINUTE": "100000", "MCPGATE_REFUSED_CALLS_PER_SECOND": "100000"}
	for k, v := range extra {
		env[k] = v
	}
	g := startGateway(t, dbURL, env)
	if g.app.CC == nil {
		t.Fatal("MCPGATE_CCSERVER_LISTEN is set, but the cc_server surface is off")
	}
	ctx := context.Background()
	for _, ws := range []string{"ws-acme", "ws-globex"} {
		must(t, g.app.Store.PutWorkspace(ctx, &gateway.Workspace{ID: ws, Name: ws, Slug: ws, OrgPlan: "team"}))
	}
	must(t, g.app.Store.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-acme", UserID: "ada", Role: gateway.RoleMember, SeatType: "developer"}))
	srv := httptest.NewServer(g.app.CC.Handler)
	t.Cleanup(srv.Close)
	return &ccGateway{gatewayUnderTest: g, cc: srv}
}

func (g *ccGateway) ccToken(t *testing.T, c auth.CCClaims) string {
	t.Helper()
	tok, err := g.app.CC.JWT.IssueCCServer(c, time.Hour)
	must(t, err)
	return tok
}

// ccConnect opens a session on the cc_server surface: Streamable HTTP on
// /mcp, or the 2024-11-05 HTTP+SSE transport on /sse.
func (g *ccGateway) ccConnect(t *testing.T, token string, legacy bool) *mcp.ClientSession {
	t.Helper()
	return g.ccConnectWith(t, token, legacy, nil)
}

// ccConnectWith is ccConnect with the client's options (an
// ElicitationHandler declares the elicitation capability).
func (g *ccGateway) ccConnectWith(t *testing.T, token string, legacy bool, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-cc", Version: "1"}, opts)
	hc := &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}
	var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: g.cc.URL + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}
	version := protocolVersion
	if legacy {
		tr, version = &mcp.SSEClientTransport{Endpoint: g.cc.URL + "/sse", HTTPClient: hc}, "2024-11-05"
	}
	// The SSE client's stream lives as long as the context it connected
	// with: the session's, not a connect timeout's.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func ccCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

// policyRefusal reports whether reason codes hold a refusal of the
// cc_server policy (not an approval step or the backend's own answer).
func policyRefusal(codes []string) bool {
	for _, c := range codes {
		for _, p := range []string{"mode.", "action.", "workspace.", "workspace_id.", "principal.", "input."} {
			if strings.HasPrefix(c, p) {
				return true
			}
		}
	}
	return false
}

func (g *ccGateway) lastCCAudit(t *testing.T, tool string) gateway.AuditEvent {
	t.Helper()
	evs, err := g.app.Store.ListAuditEvents(context.Background(), gateway.AuditFilter{Tool: tool, Limit: 1})
	must(t, err)
	if len(evs) != 1 {
		t.Fatalf("no audit row for %s", tool)
	}
	return evs[0]
}

// newestCCAudit returns the newest n tool call rows, newest first.
func (g *ccGateway) newestCCAudit(t *testing.T, n int) []gateway.AuditEvent {
	t.Helper()
	evs, err := g.app.Store.ListAuditEvents(context.Background(), gateway.AuditFilter{Kind: gateway.AuditKindToolCall, Limit: n})
	must(t, err)
	if len(evs) != n {
		t.Fatalf("%d tool call rows, want at least %d", len(evs), n)
	}
	return evs
}

// myTools calls list_my_tools and returns the names it says are callable.
func myTools(t *testing.T, cs *mcp.ClientSession, args map[string]any) map[string]bool {
	t.Helper()
	res, err := ccCall(t, cs, "list_my_tools", args)
	if err != nil || res.IsError {
		t.Fatalf("list_my_tools: %v %+v", err, res)
	}
	var out struct {
		Tools []struct {
			Name     string `json:"name"`
			Callable bool   `json:"callable"`
		} `json:"tools"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	must(t, json.Unmarshal(raw, &out))
	set := map[string]bool{}
	for _, tl := range out.Tools {
		if tl.Callable {
			set[tl.Name] = true
		}
	}
	return set
}

// TestCCServerModesAgree: for every mode, over both transports and on both
// stores, tools/list offers all 110 tools, and the tools list_my_tools
// calls callable are exactly the tools tools/call accepts (the catalog's
// example arguments, in ada's workspace); every call gets one audit row
// with surface ccserver and the mode.
func TestCCServerModesAgree(t *testing.T) {
	t.Parallel()
	cat, err := tools.LoadCCServer()
	must(t, err)
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startCCGateway(t, dbURL(t))
			for i, mode := range []string{"chat", "plan", "review", "orchestrate", "nonsense"} {
				legacy := i%2 == 1
				p := auth.CCClaims{Subject: "ada", Mode: mode, TicketID: "x"}
				cs := g.ccConnect(t, g.ccToken(t, p), legacy)
				if n := len(listed(t, cs)); n != cat.Len() {
					t.Fatalf("mode %s: tools/list offers %d tools, want the full registry of %d", mode, n, cat.Len())
				}
				callable := map[string]bool{}
				if mode == "nonsense" {
					// Every tool is refused, list_my_tools too: nothing is callable.
					if res, err := ccCall(t, cs, "list_my_tools", map[string]any{}); err != nil || !res.IsError {
						t.Fatalf("unknown mode: list_my_tools answered %v %+v, want refused", err, res)
					}
				} else {
					callable = myTools(t, cs, map[string]any{"workspace_id": "ws-acme"})
				}
				all := cat.Tools()
				results := make([]*mcp.CallToolResult, len(all))
				for i, tool := range all {
					args, _ := cat.ExampleArguments(tool.Name)
					if _, ok := args["workspace_id"]; ok || tool.Name == "list_my_tools" || tool.Name == "search_tool_bm25" {
						args["workspace_id"] = "ws-acme"
					}
					res, err := ccCall(t, cs, tool.Name, args)
					if err != nil {
						t.Fatalf("mode %s %s: %v", mode, tool.Name, err)
					}
					results[i] = res
				}
				// Each call writes its row before it answers: the newest
				// rows, read once for the mode rather than once per call,
				// are the calls', newest first.
				evs := g.newestCCAudit(t, len(all))
				for i, tool := range all {
					res, ev := results[i], evs[len(all)-1-i]
					if ev.Tool != tool.Name {
						t.Fatalf("mode %s: the audit row of call %d (%s) is %s's; want one row per call, in call order", mode, i, tool.Name, ev.Tool)
					}
					accepted := !policyRefusal(ev.ReasonCodes)
					if accepted != callable[tool.Name] {
						t.Errorf("mode %s: %s accepted=%v (reasons %v, isError %v) but list_my_tools says callable=%v",
							mode, tool.Name, accepted, ev.ReasonCodes, res.IsError, callable[tool.Name])
					}
					wantMode := mode
					if ev.Surface != gateway.SurfaceCCServer || ev.Mode != wantMode || ev.Actor != "ada" {
						t.Errorf("mode %s %s: audit row surface %q mode %q actor %q", mode, tool.Name, ev.Surface, ev.Mode, ev.Actor)
					}
				}
			}
		})
	}
}

// TestCCServerWorkspaceAndUnknownTools: workspace_id missing, invalid,
// foreign (not a member; another workspace than a pinned agent's), the
// global tools without one, a pinned agent in its own workspace, and the
// names docs/requirements.md#cc-unknown-tools says have no tool.
func TestCCServerWorkspaceAndUnknownTools(t *testing.T) {
	t.Parallel()
	g := startCCGateway(t, "sqlite:"+t.TempDir()+"/cc.db")
	user := g.ccConnect(t, g.ccToken(t, auth.CCClaims{Subject: "ada"}), false)
	agent := g.ccConnect(t, g.ccToken(t, auth.CCClaims{Subject: "bot", WorkspaceID: "ws-globex"}), true)
	refused := func(cs *mcp.ClientSession, name string, args map[string]any, code string) {
		t.Helper()
		res, err := ccCall(t, cs, name, args)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ev := g.lastCCAudit(t, name)
		if !res.IsError || ev.Status != gateway.AuditDenied || !containsCode(ev.ReasonCodes, code) {
			t.Errorf("%s %v: isError %v, audit %s %v; want refused with %s", name, args, res.IsError, ev.Status, ev.ReasonCodes, code)
		}
	}
	allowed := func(cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := ccCall(t, cs, name, args)
		if err != nil || res.IsError {
			t.Fatalf("%s %v: %v %+v, want it to run", name, args, err, res)
		}
		return res
	}
	refused(user, "list_tickets", map[string]any{}, "workspace_id.missing")
	refused(user, "list_tickets", map[string]any{"workspace_id": "-bad id-"}, "workspace_id.invalid")
	refused(user, "list_tickets", map[string]any{"workspace_id": "ws-globex"}, "workspace.not_member")
	allowed(user, "list_tickets", map[string]any{"workspace_id": "ws-acme"})
	if ev := g.lastCCAudit(t, "list_tickets"); ev.WorkspaceID != "ws-acme" {
		t.Errorf("audit row workspace %q, want the call's ws-acme", ev.WorkspaceID)
	}
	allowed(user, "list_workspaces", map[string]any{})
	allowed(user, "list_feeds", map[string]any{})
	refused(agent, "list_tickets", map[string]any{"workspace_id": "ws-acme"}, "workspace.foreign")
	allowed(agent, "list_tickets", map[string]any{"workspace_id": "ws-globex"})
	if ev := g.lastCCAudit(t, "list_tickets"); ev.WorkspaceID != "ws-globex" || ev.PrincipalKind != gateway.PrincipalAgent {
		t.Errorf("pinned agent's audit row: workspace %q kind %q", ev.WorkspaceID, ev.PrincipalKind)
	}
	// A ticket of ws-acme named under ws-globex is refused, never run
	// elsewhere. (The ticket is one the demo backend holds: creating one
	// needs a person's approval, TestCCServerApprovalsAdmin.)
	res := allowed(user, "list_tickets", map[string]any{"workspace_id": "ws-acme"})
	var acme struct {
		Tickets []struct {
			ID string `json:"id"`
		} `json:"tickets"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(raw, &acme)
	if len(acme.Tickets) == 0 || acme.Tickets[0].ID == "" {
		t.Fatalf("list_tickets in ws-acme returned no ticket: %s", raw)
	}
	created := acme.Tickets[0]
	refused(agent, "get_ticket", map[string]any{"workspace_id": "ws-globex", "ticket_id": created.ID}, "workspace.mismatch")
	for _, name := range []string{"hire_agent", "fire_agent", "update_agent", "doctor", "workspace.upsert", "ask_user"} {
		_, err := ccCall(t, user, name, map[string]any{})
		res, _ := ccCall(t, user, name, map[string]any{})
		text := ""
		if err != nil {
			text = err.Error()
		} else if res != nil && len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		if !strings.Contains(text, "unknown tool") {
			t.Errorf("%s: answered %q, want \"unknown tool\"", name, text)
		}
	}
}

func containsCode(codes []string, code string) bool {
	for _, c := range codes {
		if c == code {
			return true
		}
	}
	return false
}
