package e2e

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callRefusal calls tool and returns the refusal text, "" when the call
// was dispatched (a tool error of the backend counts as dispatched: the
// slot was taken).
func callRefusal(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return err.Error()
	}
	if res.IsError && contains(textOf(res), "limit reached") {
		return textOf(res)
	}
	return ""
}

func putExternalLimits(t *testing.T, g *gatewayUnderTest, ws, body string) {
	t.Helper()
	if st, reply := adminPut(t, g, "/workspaces/"+ws+"/external-limits", body); st != http.StatusOK {
		t.Fatalf("external limits: %d %s", st, reply)
	}
}

// The per-token limits of docs/requirements.md#external-limits: reads per tool per hour and ops
// per token per hour, each token its own quota, settable per workspace.
func TestCoordinatorTokenLimits(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, dbURL(t), nil)
			ids := seedFixtures(t, g)["ws-a"]
			putExternalLimits(t, g, "ws-a", `{"reads_per_tool_hourly":3,"ops_per_token_hourly":2}`)
			tokA, _ := createToken(t, g, "ws-a", "busy", "mcp:read", "mcp:ops")
			tokB, _ := createToken(t, g, "ws-a", "quiet", "mcp:read", "mcp:ops")
			a, b := g.connectAt(t, apiPath, tokA), g.connectAt(t, apiPath, tokB)
			for i := range 3 {
				if msg := callRefusal(t, a, "run.list", map[string]any{}); msg != "" {
					t.Fatalf("read %d refused: %s", i+1, msg)
				}
			}
			if msg := callRefusal(t, a, "run.list", map[string]any{}); !contains(msg, "Token hourly limit reached for MCP tool 'run.list' (3/3)") {
				t.Fatalf("4th read: %q, want the per-tool token limit", msg)
			}
			if msg := callRefusal(t, a, "tasks.list_active", map[string]any{}); msg != "" {
				t.Fatalf("another tool shares the quota: %s", msg)
			}
			if msg := callRefusal(t, b, "run.list", map[string]any{}); msg != "" {
				t.Fatalf("another token shares the quota: %s", msg)
			}
			pause := map[string]any{"schedule_id": ids["$schedule"]}
			for i := range 2 {
				if msg := callRefusal(t, a, "schedule.pause", pause); msg != "" {
					t.Fatalf("ops %d refused: %s", i+1, msg)
				}
			}
			if msg := callRefusal(t, a, "schedule.resume", pause); !contains(msg, "Token hourly limit reached for this MCP tool tier (2/2)") {
				t.Fatalf("3rd ops call: %q, want the per-token ops limit", msg)
			}
			if msg := callRefusal(t, b, "schedule.resume", pause); msg != "" {
				t.Fatalf("another token's ops: %s", msg)
			}
			// null keeps the defaults (50 reads per tool): the busy token reads again.
			putExternalLimits(t, g, "ws-a", `{"reads_per_tool_hourly":null,"ops_per_token_hourly":null}`)
			if msg := callRefusal(t, a, "run.list", map[string]any{}); msg != "" {
				t.Fatalf("after reset to defaults: %s", msg)
			}
		})
	}
}

// The workspace-wide ops/day cap (AGENT_MCP_WORKSPACE_OPS_DAILY_LIMIT) is
// shared by in-app agents and coordinators, and a token's higher hourly
// value does not raise it (docs/requirements.md#external-limits).
func TestCoordinatorSharedDailyCap(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, dbURL(t), map[string]string{"AGENT_MCP_WORKSPACE_OPS_DAILY_LIMIT": "4"})
			ids := seedFixtures(t, g)["ws-a"]
			putExternalLimits(t, g, "ws-a", `{"ops_per_token_hourly":50}`)
			tok, _ := createToken(t, g, "ws-a", "coord", "mcp:ops")
			coord := g.connectAt(t, apiPath, tok)
			agent := g.connect(t, g.token(t, "ws-a", "mia", "task-ws-a", "operator"))
			pause := map[string]any{"schedule_id": ids["$schedule"]}
			for i, cs := range []*mcp.ClientSession{agent, coord, agent, coord} {
				if msg := callRefusal(t, cs, "schedule.pause", pause); msg != "" {
					t.Fatalf("ops call %d refused: %s", i+1, msg)
				}
			}
			want := "Workspace daily limit reached for this MCP tool tier (4/4)"
			for who, cs := range map[string]*mcp.ClientSession{"coordinator": coord, "agent": agent} {
				if msg := callRefusal(t, cs, "schedule.resume", pause); !contains(msg, want) {
					t.Errorf("%s after the shared cap: %q, want %q", who, msg, want)
				}
			}
			// Another workspace's cap is its own.
			other, _ := createToken(t, g, "ws-c", "c", "mcp:ops")
			cs := g.connectAt(t, apiPath, other)
			if msg := callRefusal(t, cs, "schedule.pause", map[string]any{"schedule_id": firstID(t, g, "ws-c", "schedules.list", "schedules")}); msg != "" {
				t.Fatalf("ws-c: %s", msg)
			}
		})
	}
}
