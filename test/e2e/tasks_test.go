package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway"
)

// TestTaskLifecycle: a task id the gateway has never seen works on its
// first call (it is registered as running), and once the admin API sets a
// terminal status, tools/list shows nothing and every call is refused with
// a tool execution error that names the status. On both stores.
func TestTaskLifecycle(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, dbURL(t), nil)
			seedFixtures(t, g)
			ctx := context.Background()
			const task = "task-first-seen"
			cs := g.connect(t, g.token(t, "ws-a", "mia", task, "reader"))
			if !listed(t, cs)["projects.list"] {
				t.Fatal("tools/list of a new task does not show the profile's tools")
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "projects.list", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("first call of a new task: %v %s", err, textOf(res))
			}
			if ev := g.lastAudit(t, "ws-a", task, "projects.list"); ev.Status != gateway.AuditAllowed {
				t.Errorf("audit row %s, want allowed", ev.Status)
			}
			c, err := g.app.Store.LoadCaller(ctx, &gateway.Principal{Subject: "mia", WorkspaceID: "ws-a", TaskID: task})
			if err != nil || c.Task == nil || c.Task.Status != gateway.TaskRunning {
				t.Fatalf("stored task = %+v (%v), want running", c, err)
			}

			for _, status := range []string{gateway.TaskCompleted, gateway.TaskCancelled} {
				adminPUT(t, g.srv.URL, "/workspaces/ws-a/tasks/"+task, `{"status":"`+status+`"}`)
				if tools := listed(t, cs); len(tools) != 0 {
					t.Errorf("tools/list of a %s task = %v, want none", status, tools)
				}
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "projects.list", Arguments: map[string]any{}})
				if err != nil || !res.IsError {
					t.Fatalf("call of a %s task: %v %+v, want a tool execution error", status, err, res)
				}
				want := "task " + task + " is " + status + "; calls of a " + status + " task are refused"
				if msg := textOf(res); !strings.HasPrefix(msg, want) || !strings.Contains(msg, "start a new task") {
					t.Errorf("refusal %q, want it to start %q and say to start a new task", msg, want)
				}
				if d, _ := res.Meta["io.mcpgate/denial"].(map[string]any); d["code"] != "task.not_running" {
					t.Errorf("denial _meta %v, want code task.not_running", res.Meta)
				}
				if ev := g.lastAudit(t, "ws-a", task, "projects.list"); ev.Status != gateway.AuditDenied {
					t.Errorf("audit row %s, want denied", ev.Status)
				}
			}
		})
	}
}
