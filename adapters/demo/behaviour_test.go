package demo

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

func TestGenerationIsDeterministic(t *testing.T) {
	one, two := newTestBackend(), newTestBackend()
	if snapshot(t, one, "ws-a") != snapshot(t, two, "ws-a") {
		t.Error("two backends generated different data for ws-a")
	}
	if snapshot(t, one, "ws-a") == snapshot(t, one, "ws-b") {
		t.Error("ws-a and ws-b got identical data")
	}
}

func TestCallToolRejectsMissingWorkspace(t *testing.T) {
	_, err := New().CallTool(context.Background(), gateway.ToolCall{Tool: "workspace.info"})
	if gateway.ErrorCodeOf(err) != gateway.EInvalid {
		t.Errorf("error = %v, want EInvalid", err)
	}
}

func TestMissingRequiredArgumentIsAnErrorResult(t *testing.T) {
	mustRefuse(t, call(t, New(), "ws-a", "", "project.get", map[string]any{"project_id": "  "}), "needs the argument project_id")
}

// TestResultsAreCopies: the gateway redacts fields in place; that must not
// reach the backend's state.
func TestResultsAreCopies(t *testing.T) {
	b := newTestBackend()
	out := mustOK(t, call(t, b, "ws-a", "", "workspace.info", nil))
	delete(out, "budget_remaining")
	again := mustOK(t, call(t, b, "ws-a", "", "workspace.info", nil))
	if _, ok := again["budget_remaining"]; !ok {
		t.Error("changing a result changed the backend")
	}
}

// TestConcurrentCalls mixes reads and writes over several workspaces; run
// with -race.
func TestConcurrentCalls(t *testing.T) {
	b := New()
	var wg sync.WaitGroup
	for g := range 24 {
		wg.Go(func() {
			ws := fmt.Sprintf("ws-%d", g%6)
			fx := fixtures(t, b, ws)
			for i := range 20 {
				var res *gateway.ToolResult
				var err error
				switch i % 4 {
				case 0:
					res, err = b.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: ws, Tool: "run.list"})
				case 1:
					res, err = b.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: ws, Tool: "workflow.trigger", Arguments: map[string]any{"workflow_id": fx.workflow}})
				case 2:
					res, err = b.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: ws, Tool: "schedule.pause", Arguments: map[string]any{"schedule_id": fx.sched}})
				default:
					res, err = b.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: ws, Tool: "task.create", Arguments: map[string]any{"project_id": fx.project, "prompt": "p"}})
				}
				if err != nil || res.IsError {
					t.Errorf("%s call %d: %v %s", ws, i, err, text(res))
				}
			}
		})
	}
	wg.Wait()
}

func TestWriteBehaviour(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, b *Backend, fx ids)
	}{
		{"schedule pause and resume", func(t *testing.T, b *Backend, fx ids) {
			out := mustOK(t, call(t, b, "ws-a", "", "schedule.pause", map[string]any{"schedule_id": fx.sched}))
			if get(out, "schedule", "paused") != true || out["changed"] != true || get(out, "schedule", "next_run_at") != nil {
				t.Errorf("pause answered %v", out)
			}
			again := mustOK(t, call(t, b, "ws-a", "", "schedule.pause", map[string]any{"schedule_id": fx.sched}))
			if again["changed"] != false {
				t.Error("second pause reported a change")
			}
			resumed := mustOK(t, call(t, b, "ws-a", "", "schedule.resume", map[string]any{"schedule_id": fx.sched}))
			if get(resumed, "schedule", "status") != "active" || get(resumed, "schedule", "next_run_at") == nil {
				t.Errorf("resume answered %v", resumed)
			}
		}},
		{"schedule timing is validated", func(t *testing.T, b *Backend, fx ids) {
			base := map[string]any{"name": "n", "workflow_id": fx.workflow}
			for cron, want := range map[string]string{"0 6 * *": "has 4 fields", "61 * * * *": "minute field", "0 6 * * 1-9": "day of week"} {
				args := map[string]any{"cron": cron}
				for k, v := range base {
					args[k] = v
				}
				mustRefuse(t, call(t, b, "ws-a", "", "schedule.create", args), want)
			}
			base["cron"], base["timezone"] = "0 6 * * *", "Mars/Olympus"
			mustRefuse(t, call(t, b, "ws-a", "", "schedule.create", base), "not an IANA time zone")
		}},
		{"workflow trigger creates a listed run", func(t *testing.T, b *Backend, fx ids) {
			out := mustOK(t, call(t, b, "ws-a", "", "workflow.trigger", map[string]any{"workflow_id": fx.workflow}))
			runs := mustOK(t, call(t, b, "ws-a", "", "run.list", map[string]any{"kind": "workflow", "status": "running"}))
			if !strings.Contains(asJSON(t, runs), out["run_id"].(string)) {
				t.Errorf("run %v not in run.list", out["run_id"])
			}
			ev := mustOK(t, call(t, b, "ws-a", "", "run.events", map[string]any{"run_id": out["run_id"]}))
			if got := asJSON(t, ev); !strings.Contains(got, "workflow_run_started") || !strings.Contains(got, "workflow_node_started") {
				t.Errorf("new run's events %s", got)
			}
		}},
		{"intervention carries the coordinator prefix", func(t *testing.T, b *Backend, fx ids) {
			out := mustOK(t, call(t, b, "ws-a", "", "task.intervene", map[string]any{"task_id": fx.runningTask, "message": "wrap up"}))
			if get(out, "intervention", "message") != "[coordinator] wrap up" || get(out, "intervention", "origin") != "SYSTEM" {
				t.Errorf("intervention %v", out["intervention"])
			}
			mustRefuse(t, call(t, b, "ws-a", "", "task.intervene", map[string]any{"task_id": fx.queuedTask, "message": "x"}), "is queued")
		}},
		{"cancel leaves the active list", func(t *testing.T, b *Backend, fx ids) {
			mustOK(t, call(t, b, "ws-a", "", "task.cancel", map[string]any{"task_id": fx.queuedTask}))
			if strings.Contains(asJSON(t, mustOK(t, call(t, b, "ws-a", "", "tasks.list_active", nil))), fx.queuedTask) {
				t.Error("cancelled task still active")
			}
			mustRefuse(t, call(t, b, "ws-a", "", "task.cancel", map[string]any{"task_id": fx.queuedTask}), "already cancelled")
		}},
		{"task budget clamps", func(t *testing.T, b *Backend, fx ids) {
			over := call(t, b, "ws-a", "", "task.create", map[string]any{"project_id": fx.project, "prompt": "p", "budget_usd": 1e9})
			mustRefuse(t, over, "remaining budget")
			// The refusal must not tell what workspace.info may hide.
			remaining := b.workspace("ws-a").info.BudgetRemaining
			if strings.Contains(text(over), fmt.Sprintf("%.2f", remaining)) {
				t.Errorf("refusal %q names the remaining budget %.2f", text(over), remaining)
			}
			out := mustOK(t, call(t, b, "ws-a", "", "task.create", map[string]any{"project_id": fx.project, "prompt": "p", "budget_usd": 60.0}))
			if out["budget_clamped"] != true || get(out, "task", "budget_usd") != maxTaskBudget {
				t.Errorf("task.create answered %v", out)
			}
		}},
		{"conversation reply is idempotent", func(t *testing.T, b *Backend, fx ids) {
			args := map[string]any{"resource": fx.resource, "conversation_id": fx.conversation, "body": "On it.", "idempotency_key": "k-1"}
			first := mustOK(t, call(t, b, "ws-a", "", "conversation.reply", args))
			second := mustOK(t, call(t, b, "ws-a", "", "conversation.reply", args))
			if get(first, "message", "id") != get(second, "message", "id") || second["replayed"] != true {
				t.Errorf("retry posted again: %v / %v", first, second)
			}
			conv := mustOK(t, call(t, b, "ws-a", "", "conversation.get", map[string]any{"resource": fx.resource, "conversation_id": fx.conversation}))
			if n := len(get(conv, "conversation", "messages").([]any)); n != 2 {
				t.Errorf("conversation has %d messages, want 2", n)
			}
			mustRefuse(t, call(t, b, "ws-a", "", "conversation.list", map[string]any{"resource": "orders-db"}), "not a support channel")
		}},
		{"subtasks belong to their delegating task", func(t *testing.T, b *Backend, fx ids) {
			out := mustOK(t, call(t, b, "ws-a", fx.runningTask, "delegate_subtask", map[string]any{"agent_profile_id": fx.profile, "prompt": "p"}))
			id := out["subtask_id"]
			mustOK(t, call(t, b, "ws-a", fx.runningTask, "get_subtask_result", map[string]any{"subtask_id": id}))
			mustRefuse(t, call(t, b, "ws-a", fx.queuedTask, "get_subtask_result", map[string]any{"subtask_id": id}), "delegated by task")
			mustRefuse(t, call(t, b, "ws-a", fx.runningTask, "cancel_subtask", map[string]any{"subtask_id": fx.queuedTask}), "was not delegated")
		}},
		{"memory proposals change nothing", func(t *testing.T, b *Backend, fx ids) {
			before := asJSON(t, mustOK(t, call(t, b, "ws-a", "", "memory.get", map[string]any{"memory_id": fx.memory})))
			mustOK(t, call(t, b, "ws-a", "", "memory.propose_review", map[string]any{"action": "delete", "memory_id": fx.memory}))
			if after := asJSON(t, mustOK(t, call(t, b, "ws-a", "", "memory.get", map[string]any{"memory_id": fx.memory}))); after != before {
				t.Error("a proposal changed the memory")
			}
		}},
		{"deploy lifecycle", func(t *testing.T, b *Backend, fx ids) {
			mustRefuse(t, call(t, b, "ws-a", "", "app.pause", map[string]any{"app_id": fx.undeployedApp}), "only a deployed app")
			out := mustOK(t, call(t, b, "ws-a", "", "app.deploy", map[string]any{"app_id": fx.undeployedApp}))
			if get(out, "app", "status") != "deployed" || get(out, "app", "public_url") == nil {
				t.Errorf("deploy answered %v", out["app"])
			}
			mustOK(t, call(t, b, "ws-a", "", "app.pause", map[string]any{"app_id": fx.undeployedApp}))
			out = mustOK(t, call(t, b, "ws-a", "", "app.undeploy", map[string]any{"app_id": fx.undeployedApp}))
			if get(out, "app", "public_url") != nil {
				t.Error("undeployed app kept its URL")
			}
			applied := mustOK(t, call(t, b, "ws-a", "", "app.migration.apply", map[string]any{"app_id": fx.deployedApp}))
			again := mustOK(t, call(t, b, "ws-a", "", "app.migration.apply", map[string]any{"app_id": fx.deployedApp}))
			if applied["applied_count"] != 1.0 || again["applied_count"] != 0.0 {
				t.Errorf("migrations applied %v then %v, want 1 then 0", applied["applied_count"], again["applied_count"])
			}
		}},
		{"file bodies are capped at 64 KiB", func(t *testing.T, b *Backend, fx ids) {
			out := mustOK(t, call(t, b, "ws-a", "", "app.files.get", map[string]any{"app_id": fx.deployedApp, "path": "public/vendor.min.js"}))
			if len(out["content"].(string)) != maxFileBody || out["truncated"] != true || out["size_bytes"].(float64) <= maxFileBody {
				t.Errorf("big file: %d bytes, truncated %v", len(out["content"].(string)), out["truncated"])
			}
		}},
		{"script inputs and grants", func(t *testing.T, b *Backend, fx ids) {
			mustRefuse(t, call(t, b, "ws-a", "", "script.run", map[string]any{"slug": "load-warehouse"}), `needs the input "date"`)
			mustRefuse(t, call(t, b, "ws-a", "", "permission.grant", map[string]any{"tool": "rm.rf", "scope": "workspace"}), "not a SupaCloud tool")
			mustRefuse(t, call(t, b, "ws-a", "", "permission.grant", map[string]any{"tool": "issue.get", "scope": "workspace", "expires_at": "2020-01-01T00:00:00Z"}), "in the past")
		}},
		{"issue states follow the provider", func(t *testing.T, b *Backend, fx ids) {
			mustRefuse(t, call(t, b, "ws-a", "", "issue.transition", map[string]any{"issue_id": fx.issue, "state": "teleported"}), "does not know the state", fx.issueState)
		}},
		{"docs and contracts", func(t *testing.T, b *Backend, fx ids) {
			de := mustOK(t, call(t, b, "ws-a", "", "docs.get", map[string]any{"path": "admin/agent-profiles.md", "lang": "de"}))
			if de["lang"] != "en" || strings.HasPrefix(de["body"].(string), "---") {
				t.Errorf("German fallback answered %v", de)
			}
			hits := mustOK(t, call(t, b, "ws-a", "", "docs.search", map[string]any{"query": "workflow human gates"}))
			if hits["count"].(float64) < 1 {
				t.Error("docs.search found nothing")
			}
			mustRefuse(t, call(t, b, "ws-a", "", "spec.get", map[string]any{"name": "openapi_public", "pointer": "/nope"}), `no member "nope"`, "paths")
			mustRefuse(t, call(t, b, "ws-a", "", "spec.get", map[string]any{"name": "management"}), "no contract")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestBackend()
			tc.run(t, b, fixtures(t, b, "ws-a"))
		})
	}
}

func TestCronNext(t *testing.T) {
	from := time.Date(2026, 3, 10, 9, 30, 0, 0, time.UTC) // a Tuesday
	tests := []struct {
		cron string
		want time.Time
	}{
		{"*/15 * * * *", time.Date(2026, 3, 10, 9, 45, 0, 0, time.UTC)},
		{"0 6 * * 1-5", time.Date(2026, 3, 11, 6, 0, 0, 0, time.UTC)},
		{"30 9 * * *", time.Date(2026, 3, 11, 9, 30, 0, 0, time.UTC)},
		{"0 0 1 * *", time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)},
		{"0 12 * * 0", time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)},
		{"0 12 * * 7", time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)},
		{"0 0 29 2 *", time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"0 8 13 * 5", time.Date(2026, 3, 13, 8, 0, 0, 0, time.UTC)}, // day 13 or Friday, whichever first
	}
	for _, tc := range tests {
		t.Run(tc.cron, func(t *testing.T) {
			spec, err := parseCron(tc.cron)
			if err != nil {
				t.Fatal(err)
			}
			if got := spec.next(from); !got.Equal(tc.want) {
				t.Errorf("next = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSpecGetTruncatesLargeNodes(t *testing.T) {
	names := make([]string, 3000)
	for i := range names {
		names[i] = fmt.Sprintf("tool.number_%04d_with_a_long_name", i)
	}
	r := &request{ToolCall: gateway.ToolCall{Arguments: map[string]any{"name": "mcp_catalog"}}, catalog: names}
	out, err := specGet(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	m := out.(map[string]any)
	if m["truncated"] != true || len(m["body"].(string)) != maxDocBody || strings.Join(m["child_keys"].([]string), ",") != "surface,tool_count,tools" {
		t.Errorf("truncated=%v body=%d keys=%v", m["truncated"], len(m["body"].(string)), m["child_keys"])
	}
}
