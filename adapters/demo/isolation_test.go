package demo

import (
	"regexp"
	"strings"
	"testing"
)

// TestWorkspaceIsolation addresses ws-b's records by id from ws-a: reads
// and writes must answer "not found in this workspace" and leave ws-b
// unchanged.
func TestWorkspaceIsolation(t *testing.T) {
	b := newTestBackend()
	a, other := fixtures(t, b, "ws-a"), fixtures(t, b, "ws-b")
	before := snapshot(t, b, "ws-b")
	tests := []struct {
		tool string
		args map[string]any
	}{
		{"project.get", map[string]any{"project_id": other.project}},
		{"tasks.get", map[string]any{"task_id": other.runningTask}},
		{"app.get", map[string]any{"app_id": other.deployedApp}},
		{"app.files.get", map[string]any{"app_id": other.deployedApp, "path": "package.json"}},
		{"workflow.get", map[string]any{"workflow_id": other.workflow}},
		{"run.get", map[string]any{"run_id": other.failedRun}},
		{"run.events", map[string]any{"run_id": other.longRun}},
		{"backlog.get", map[string]any{"backlog_item_id": other.backlog}},
		{"memory.get", map[string]any{"memory_id": other.memory}},
		{"issue.get", map[string]any{"issue_id": other.issue}},
		{"conversation.get", map[string]any{"resource": other.resource, "conversation_id": other.conversation}},
		{"task.cancel", map[string]any{"task_id": other.runningTask}},
		{"task.intervene", map[string]any{"task_id": other.runningTask, "message": "hello"}},
		{"schedule.pause", map[string]any{"schedule_id": other.sched}},
		{"workflow.trigger", map[string]any{"workflow_id": other.workflow}},
		{"approval.decide", map[string]any{"approval_id": other.question, "decision": "approve", "answer": "stripe"}},
		{"run.rerun_node", map[string]any{"run_id": other.failedRun, "node_id": other.failedNode}},
		{"app.deploy", map[string]any{"app_id": other.undeployedApp}},
		{"app.undeploy", map[string]any{"app_id": other.deployedApp}},
		{"permission.revoke", map[string]any{"permission_id": other.permission}},
		{"issue.comment", map[string]any{"issue_id": other.issue, "body": "x"}},
		{"conversation.resolve", map[string]any{"resource": other.resource, "conversation_id": other.conversation}},
		{"get_subtask_result", map[string]any{"subtask_id": other.subtask}},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			mustRefuse(t, call(t, b, "ws-a", a.parentTask, tc.tool, tc.args), "not found in", "this workspace")
		})
	}
	if after := snapshot(t, b, "ws-b"); after != before {
		t.Error("calls from ws-a changed ws-b's records")
	}
}

// snapshot renders a workspace's listings, to compare before and after.
func snapshot(t *testing.T, b *Backend, ws string) string {
	t.Helper()
	var sb strings.Builder
	for _, tool := range []string{"tasks.list_active", "schedules.list", "apps.list", "run.list", "approvals.list", "issue.list"} {
		sb.WriteString(asJSON(t, mustOK(t, call(t, b, ws, "", tool, map[string]any{"limit": 100.0}))))
	}
	return sb.String()
}

func TestRecordIDsDifferAcrossWorkspaces(t *testing.T) {
	b := newTestBackend()
	idPattern := regexp.MustCompile(`"(?:id|run_id|task_id|project_id|app_id)":"([a-z]+-[0-9a-f]{8}|[0-9a-f-]{36})"`)
	seen := map[string]string{}
	for _, ws := range []string{"ws-a", "ws-b", "acme-prod"} {
		dump := snapshot(t, b, ws) + asJSON(t, mustOK(t, call(t, b, ws, "", "projects.list", nil)))
		for _, m := range idPattern.FindAllStringSubmatch(dump, -1) {
			if owner, dup := seen[m[1]]; dup && owner != ws {
				t.Errorf("id %s appears in %s and %s", m[1], owner, ws)
			}
			seen[m[1]] = ws
		}
	}
	if len(seen) < 50 {
		t.Errorf("only %d ids checked; the dump lost records", len(seen))
	}
}

func TestWritesStayInTheirWorkspace(t *testing.T) {
	b := newTestBackend()
	a := fixtures(t, b, "ws-a")
	count := func(ws, tool, key string) int {
		return len(mustOK(t, call(t, b, ws, "", tool, map[string]any{"limit": 100.0}))[key].([]any))
	}
	beforeA, beforeB := count("ws-a", "schedules.list", "schedules"), count("ws-b", "schedules.list", "schedules")
	mustOK(t, call(t, b, "ws-a", "", "schedule.create", map[string]any{"name": "x", "workflow_id": a.workflow, "cron": "0 1 * * *"}))
	if got := count("ws-a", "schedules.list", "schedules"); got != beforeA+1 {
		t.Errorf("ws-a has %d schedules, want %d", got, beforeA+1)
	}
	if got := count("ws-b", "schedules.list", "schedules"); got != beforeB {
		t.Errorf("ws-b has %d schedules, want %d", got, beforeB)
	}
}

// secretLike matches field names and values that would carry credentials.
var secretLike = regexp.MustCompile(`(?i)password|passwd|secret|token|api[_-]?key|connection[_-]?string|dsn|credential|://[^"]*@|postgres(ql)?://|redis://|private[_-]?key`)

func TestResourcesListShowsKindNameStatusOnly(t *testing.T) {
	b := newTestBackend()
	for _, tc := range []struct {
		name, ws string
		args     map[string]any
	}{
		{"all kinds", "ws-a", nil},
		{"another workspace", "globex-eu", nil},
		{"postgres only", "ws-a", map[string]any{"kind": "postgres"}},
		{"support channels", "ws-a", map[string]any{"kind": "chatwoot"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mustOK(t, call(t, b, tc.ws, "", "resources.list", tc.args))
			items := out["resources"].([]any)
			if len(items) == 0 {
				t.Fatal("no resources listed")
			}
			for _, it := range items {
				res := it.(map[string]any)
				if len(res) != 3 || res["kind"] == nil || res["name"] == nil || res["status"] == nil {
					t.Errorf("resource %v has fields other than kind, name, status", res)
				}
			}
			if m := secretLike.FindString(asJSON(t, out)); m != "" {
				t.Errorf("resources.list output contains secret-like %q", m)
			}
		})
	}
}
