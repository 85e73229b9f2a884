package demo

import (
	"slices"
	"testing"
)

// seedTools are the 71 tools of the SupaCloud MCP tool surface (docs/requirements.md#tiers), by
// tier: 8 baseline, 31 read, 20 ops, script.run, 6 scaffold, 5 deploy.
var seedTools = map[string][]string{
	"baseline": {"delegate_subtask", "get_subtask_result", "cancel_subtask", "memory.search", "memory.get",
		"memory.list_recent", "memory.propose_review", "outcome.recent_for_profile"},
	"read": {"workspace.info", "projects.list", "project.get", "tasks.list_active", "tasks.get", "runners.status",
		"schedules.list", "resources.list", "apps.list", "app.get", "workflows.list", "workflow.get", "app.migration.list",
		"run.list", "run.get", "run.events", "approvals.list", "backlog.list", "backlog.get",
		"app.files.list", "app.files.get", "script.get", "script.list", "app.builds.list",
		"issue.get", "issue.list", "conversation.get", "conversation.list", "docs.search", "docs.get", "spec.get"},
	"ops": {"workflow.trigger", "schedule.create", "schedule.update", "schedule.pause", "schedule.resume",
		"repo_sync.trigger", "issue.comment", "issue.transition", "pr.create", "conversation.reply",
		"conversation.assign", "conversation.resolve", "conversation.handoff", "task.create", "task.cancel",
		"task.intervene", "approval.decide", "run.rerun_node", "permission.grant", "permission.revoke"},
	"script.run": {"script.run"},
	"scaffold": {"scaffold.script.propose", "scaffold.app.propose", "scaffold.app.file_upsert.propose",
		"scaffold.workflow.propose", "task.create_for_app_scaffold", "task.create_for_script_scaffold"},
	"deploy": {"app.deploy", "app.undeploy", "app.pause", "app.resume", "app.migration.apply"},
}

func allSeedTools() []string {
	var all []string
	for _, names := range seedTools {
		all = append(all, names...)
	}
	slices.Sort(all)
	return all
}

func TestImplementsExactlyTheSeedTools(t *testing.T) {
	want := allSeedTools()
	if len(want) != 71 {
		t.Fatalf("the seed lists 71 tools; this test lists %d", len(want))
	}
	tiers := map[string]int{"baseline": 8, "read": 31, "ops": 20, "script.run": 1, "scaffold": 6, "deploy": 5}
	for tier, n := range tiers {
		if got := len(seedTools[tier]); got != n {
			t.Errorf("tier %s lists %d tools, docs/requirements.md#tiers has %d", tier, got, n)
		}
	}
	if got := New().Tools(); !slices.Equal(got, want) {
		t.Errorf("backend implements %d tools:\n got %v\nwant %v", len(got), got, want)
	}
}

func TestUnknownToolIsAnErrorResult(t *testing.T) {
	res := call(t, New(), "ws-a", "", "app.destroy_everything", nil)
	mustRefuse(t, res, "demo backend does not implement app.destroy_everything")
}

// validArgs gives each tool arguments that are valid for a fresh workspace
// whose records are fx; the session task is fx.parentTask.
func validArgs(fx ids) map[string]map[string]any {
	conv := map[string]any{"resource": fx.resource, "conversation_id": fx.conversation}
	with := func(base map[string]any, k string, v any) map[string]any {
		out := map[string]any{k: v}
		for key, val := range base {
			out[key] = val
		}
		return out
	}
	return map[string]map[string]any{
		"delegate_subtask":                 {"agent_profile_id": fx.profile, "prompt": "Check the flaky test", "max_cost_usd": 1.5},
		"get_subtask_result":               {"subtask_id": fx.subtask},
		"cancel_subtask":                   {"subtask_id": fx.subtask, "reason": "not needed"},
		"memory.search":                    {"query": "deploy"},
		"memory.get":                       {"memory_id": fx.memory},
		"memory.list_recent":               {"limit": 3.0},
		"memory.propose_review":            {"action": "update", "memory_id": fx.memory, "content": "Deploys Tue-Thu only."},
		"outcome.recent_for_profile":       {},
		"workspace.info":                   {},
		"projects.list":                    {},
		"project.get":                      {"project_id": fx.project},
		"tasks.list_active":                {"project_id": fx.project},
		"tasks.get":                        {"task_id": fx.runningTask},
		"runners.status":                   {},
		"schedules.list":                   {},
		"resources.list":                   {"kind": "postgres"},
		"apps.list":                        {},
		"app.get":                          {"app_id": fx.deployedApp},
		"workflows.list":                   {},
		"workflow.get":                     {"workflow_id": fx.workflow},
		"app.migration.list":               {"app_id": fx.deployedApp, "status": "pending"},
		"run.list":                         {"kind": "workflow", "limit": 5.0},
		"run.get":                          {"run_id": fx.failedRun},
		"run.events":                       {"run_id": fx.longRun, "after_sequence": 10.0, "limit": 20.0},
		"approvals.list":                   {"filter": "tool"},
		"backlog.list":                     {"state": "open"},
		"backlog.get":                      {"backlog_item_id": fx.backlog},
		"app.files.list":                   {"app_id": fx.deployedApp, "path_prefix": "src/"},
		"app.files.get":                    {"app_id": fx.deployedApp, "path": "package.json"},
		"script.get":                       {"slug": fx.script},
		"script.list":                      {},
		"app.builds.list":                  {"app_id": fx.deployedApp, "limit": 2.0},
		"issue.get":                        {"issue_id": fx.issue},
		"issue.list":                       {},
		"conversation.get":                 conv,
		"conversation.list":                {"resource": fx.resource},
		"docs.search":                      {"query": "approve gates"},
		"docs.get":                         {"path": "user/how-to/approve-agent-actions.mdx", "lang": "de"},
		"spec.get":                         {"name": "openapi_public", "pointer": "/paths"},
		"workflow.trigger":                 {"workflow_id": fx.workflow, "inputs": map[string]any{"date": "2026-03-09"}},
		"schedule.create":                  {"name": "Weekday report", "workflow_id": fx.workflow, "cron": "0 6 * * 1-5", "timezone": "Europe/Berlin"},
		"schedule.update":                  {"schedule_id": fx.sched, "cron": "15 3 * * *"},
		"schedule.pause":                   {"schedule_id": fx.sched},
		"schedule.resume":                  {"schedule_id": fx.sched},
		"repo_sync.trigger":                {"project_id": fx.project, "direction": "pull"},
		"issue.comment":                    {"issue_id": fx.issue, "body": "Reproduced on main."},
		"issue.transition":                 {"issue_id": fx.issue, "state": fx.issueState},
		"pr.create":                        {"title": "Fix checkout race", "head": "fix/checkout-race", "draft": true},
		"conversation.reply":               with(conv, "body", "Your refund is on its way."),
		"conversation.assign":              with(conv, "assignee_id", "agent-12"),
		"conversation.resolve":             with(conv, "idempotency_key", "k1"),
		"conversation.handoff":             with(conv, "team_id", "billing"),
		"task.create":                      {"project_id": fx.project, "prompt": "Paginate the orders API", "budget_usd": 8.0},
		"task.cancel":                      {"task_id": fx.queuedTask, "reason": "duplicate"},
		"task.intervene":                   {"task_id": fx.runningTask, "message": "Stop after the tests pass."},
		"approval.decide":                  {"approval_id": fx.question, "decision": "approve", "answer": "stripe"},
		"run.rerun_node":                   {"run_id": fx.failedRun, "node_id": fx.failedNode},
		"permission.grant":                 {"tool": "issue.comment", "scope": "project", "scope_id": fx.project, "expires_at": "2030-01-01T00:00:00Z"},
		"permission.revoke":                {"permission_id": fx.permission},
		"script.run":                       {"slug": fx.script, "inputs": map[string]any{"date": "2026-03-09"}},
		"scaffold.script.propose":          {"slug": "cleanup-carts", "source": "def main(ctx):\n    return {}\n"},
		"scaffold.app.propose":             {"name": "Returns Portal", "template": "nextjs"},
		"scaffold.app.file_upsert.propose": {"app_id": fx.deployedApp, "path": "src/routes/returns.ts", "content": "export {}\n"},
		"scaffold.workflow.propose": {"name": "Weekly cleanup", "definition": map[string]any{
			"nodes": []any{map[string]any{"id": "a", "kind": "script"}}, "edges": []any{}}},
		"task.create_for_app_scaffold":    {"app_id": fx.deployedApp, "prompt": "Add a returns page"},
		"task.create_for_script_scaffold": {"slug": fx.script, "prompt": "Handle empty exports"},
		"app.deploy":                      {"app_id": fx.deployedApp, "confirmation_token": "tok", "idempotency_key": "idem-1"},
		"app.undeploy":                    {"app_id": fx.deployedApp},
		"app.pause":                       {"app_id": fx.deployedApp},
		"app.resume":                      {"app_id": fx.pausedApp},
		"app.migration.apply":             {"app_id": fx.deployedApp, "confirmation_token": "tok", "idempotency_key": "idem-2"},
	}
}

// TestEveryToolAnswersValidArguments runs each seed tool once, in a fresh
// backend, with valid arguments, and wants a non-error structured result.
func TestEveryToolAnswersValidArguments(t *testing.T) {
	probe := newTestBackend()
	cases := validArgs(fixtures(t, probe, "ws-a"))
	for _, name := range allSeedTools() {
		t.Run(name, func(t *testing.T) {
			args, ok := cases[name]
			if !ok {
				t.Fatalf("no valid arguments listed for %s", name)
			}
			b := newTestBackend()
			fx := fixtures(t, b, "ws-a")
			out := mustOK(t, call(t, b, "ws-a", fx.parentTask, name, args))
			if len(out) == 0 {
				t.Error("empty structured result")
			}
		})
	}
}
