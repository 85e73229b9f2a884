package e2e

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

const confirmationSecret = "e2e-confirm-0123456789abcdef0123456789"

// undeployedApp returns the id of an app of ws that is not deployed.
func (g *gatewayUnderTest) undeployedApp(t *testing.T, ws string) string {
	t.Helper()
	res, err := g.app.Pipeline.Adapter.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: ws, Tool: "apps.list"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range res.StructuredContent["apps"].([]any) {
		if app := a.(map[string]any); app["status"] == "undeployed" {
			return app["id"].(string)
		}
	}
	t.Fatalf("the demo backend of %s has no undeployed app", ws)
	return ""
}

// appState returns the app's status and build count through app.get.
func appState(t *testing.T, cs *mcp.ClientSession, id string) (string, float64) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "app.get", Arguments: map[string]any{"app_id": id}})
	if err != nil || res.IsError {
		t.Fatalf("app.get: %v %s", err, textOf(res))
	}
	sc := res.StructuredContent.(map[string]any)
	return sc["app"].(map[string]any)["status"].(string), sc["build_count"].(float64)
}

func call(cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
}

// TestDeployConfirmation walks the two-step confirmation
// (docs/requirements.md#deploy-confirmation) through the real wiring with the Go SDK client.
func TestDeployConfirmation(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, dbURL(t), map[string]string{"SUPACLOUD_MCP_CONFIRMATION_SECRET": confirmationSecret})
			seedFixtures(t, g)
			app := g.undeployedApp(t, "ws-a")
			cs := g.connect(t, g.token(t, "ws-a", "olivia", "task-ws-a", "full"))
			audit := func(status string) int {
				return g.countAudit(t, gateway.AuditFilter{WorkspaceID: "ws-a", TaskID: "task-ws-a", Tool: "app.deploy", Status: status})
			}

			// Step 1: a summary and a token; nothing deployed.
			res, err := call(cs, "app.deploy", map[string]any{"app_id": app})
			if err != nil || res.IsError {
				t.Fatalf("step 1: %v %s", err, textOf(res))
			}
			sc := res.StructuredContent.(map[string]any)
			token, _ := sc["confirmation_token"].(string)
			if sc["confirmation_required"] != true || token == "" || sc["expires_at"] == nil || !contains(sc["changes_summary"].(string), app) {
				t.Fatalf("step 1 result %v, want confirmation_required with a summary naming %s, a token and expires_at", sc, app)
			}
			if status, _ := appState(t, cs, app); status != "undeployed" {
				t.Fatalf("after step 1 the app is %s; step 1 must not deploy", status)
			}
			if ev := g.lastAudit(t, "ws-a", "task-ws-a", "app.deploy"); ev.Status != gateway.AuditConfirmationRequired {
				t.Errorf("step 1 audit row %s, want confirmation_required", ev.Status)
			}

			// Step 2: same arguments plus token and key: deployed.
			confirmed := map[string]any{"app_id": app, "confirmation_token": token, "idempotency_key": "deploy-1"}
			first, err := call(cs, "app.deploy", confirmed)
			if err != nil || first.IsError {
				t.Fatalf("step 2: %v %s", err, textOf(first))
			}
			status, builds := appState(t, cs, app)
			if status != "deployed" {
				t.Fatalf("after step 2 the app is %s, want deployed", status)
			}

			// A retry with the same key: the same result, no second deploy.
			again, err := call(cs, "app.deploy", confirmed)
			if err != nil || again.IsError {
				t.Fatalf("replay: %v %s", err, textOf(again))
			}
			if !jsonEqual(again.StructuredContent, first.StructuredContent) {
				t.Errorf("replay answered %v, want the first result %v", again.StructuredContent, first.StructuredContent)
			}
			if _, n := appState(t, cs, app); n != builds {
				t.Errorf("replay built again: %v builds, want %v", n, builds)
			}

			// The old token with changed arguments: refused, nothing dispatched.
			other := g.demoIDs(t, "ws-a")["$app"].(string)
			_, err = call(cs, "app.deploy", map[string]any{"app_id": other, "confirmation_token": token, "idempotency_key": "deploy-2"})
			var werr *jsonrpc.Error
			if err == nil || !contains(err.Error(), "other arguments") || (errors.As(err, &werr) && werr.Code != wire.RPCInvalidParams) {
				t.Fatalf("old token, other app: %v, want -32602 saying the token is for other arguments", err)
			}
			if ev := g.lastAudit(t, "ws-a", "task-ws-a", "app.deploy"); ev.Status != gateway.AuditError || !containsString(ev.ReasonCodes, "confirmation.other_arguments") {
				t.Errorf("refusal audit row %s %v", ev.Status, ev.ReasonCodes)
			}

			// One audit row per step: summary, deploy, replay, refusal.
			if got := [3]int{audit(gateway.AuditConfirmationRequired), audit(gateway.AuditAllowed), audit(gateway.AuditError)}; got != [3]int{1, 2, 1} {
				t.Errorf("audit rows confirmation_required/allowed/error = %v, want [1 2 1]", got)
			}
		})
	}
}

// TestDeployConfirmationFailsClosedWithoutSecret: no
// SUPACLOUD_MCP_CONFIRMATION_SECRET, no deploy
// (docs/requirements.md#confirmation-secret: without the secret the tools fail closed).
func TestDeployConfirmationFailsClosedWithoutSecret(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, dbURL(t), nil)
			seedFixtures(t, g)
			app := g.undeployedApp(t, "ws-a")
			cs := g.connect(t, g.token(t, "ws-a", "olivia", "task-ws-a", "full"))
			for _, args := range []map[string]any{
				{"app_id": app},
				{"app_id": app, "confirmation_token": "mcpc1.e30.AAAA", "idempotency_key": "k"},
			} {
				_, err := call(cs, "app.deploy", args)
				var werr *jsonrpc.Error
				if err == nil || !contains(err.Error(), "SUPACLOUD_MCP_CONFIRMATION_SECRET") || (errors.As(err, &werr) && werr.Code != wire.RPCInternalError) {
					t.Fatalf("app.deploy %v without a secret: %v, want -32603 naming SUPACLOUD_MCP_CONFIRMATION_SECRET", args, err)
				}
				if ev := g.lastAudit(t, "ws-a", "task-ws-a", "app.deploy"); ev.Status != gateway.AuditError || ev.ErrorClass != "Internal" {
					t.Errorf("audit row %s/%s, want error/Internal", ev.Status, ev.ErrorClass)
				}
			}
			if status, _ := appState(t, cs, app); status != "undeployed" {
				t.Fatalf("the app is %s without a confirmation secret, want undeployed", status)
			}
		})
	}
}
