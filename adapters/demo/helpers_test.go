package demo

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// fixedNow is the clock of every test backend, so runs are reproducible.
var fixedNow = time.Date(2026, 3, 10, 9, 30, 0, 0, time.UTC)

func newTestBackend() *Backend {
	b := New()
	b.now = func() time.Time { return fixedNow }
	return b
}

// ids are records of one workspace that tests address by id.
type ids struct {
	project, parentTask, subtask, runningTask, queuedTask  string
	deployedApp, pausedApp, undeployedApp, workflow, sched string
	failedRun, failedNode, longRun, memory, issue, backlog string
	resource, conversation, permission, profile, script    string
	question, toolGate, visualGate, tierGate, workflowGate string
	issueState                                             string // a state the issue's provider knows
}

// fixtures reads ids from the generated state of ws.
func fixtures(t *testing.T, b *Backend, ws string) ids {
	t.Helper()
	w := b.workspace(ws)
	w.mu.Lock()
	defer w.mu.Unlock()
	first := func(pred func(*task) bool) string { return find(w.tasks, pred).ID }
	appIn := func(status string) string { return find(w.apps, func(a *app) bool { return a.Status == status }).ID }
	gate := func(class string) string {
		return find(w.approvals, func(a *approval) bool { return a.Class == class && a.Status == "waiting" }).ID
	}
	failed := find(w.runs, func(rn *run) bool { return rn.Kind == "workflow" && rn.Status == "failed" && rn.ParentRunID == "" })
	sub := find(w.tasks, func(t *task) bool { return t.ParentTaskID != "" && t.active() })
	conv := find(w.conversations, func(c *conversation) bool { return c.Status != "resolved" })
	return ids{
		project: w.projects[0].ID, parentTask: sub.ParentTaskID, subtask: sub.ID,
		runningTask: first(func(t *task) bool { return t.Status == "running" }), queuedTask: first(func(t *task) bool { return t.Status == "queued" }),
		deployedApp: appIn("deployed"), pausedApp: appIn("paused"), undeployedApp: appIn("undeployed"),
		workflow: w.workflows[0].ID, sched: w.schedules[0].ID, failedRun: failed.ID, failedNode: w.latestFailedNode(failed.ID),
		longRun: w.tasks[0].RunID, memory: w.memories[0].ID, issue: w.issues[0].ID, backlog: w.backlog[0].ID,
		resource: conv.Resource, conversation: conv.ID, permission: w.permissions[0].ID, profile: w.profiles[1].ID,
		script: "sync-erp-export", question: gate(gateQuestion), toolGate: gate(gateTool), visualGate: gate(gateVisual),
		tierGate: gate(gateTierChange), workflowGate: gate(gateWorkflow),
		issueState: issueStates[w.issues[0].Provider][len(issueStates[w.issues[0].Provider])-1],
	}
}

func (w *workspace) latestFailedNode(runID string) string {
	return find(w.children(runID), func(c *run) bool { return c.Status == "failed" }).NodeID
}

// call runs one tool in ws as task taskID and fails the test on Go errors.
func call(t *testing.T, b *Backend, ws, taskID, name string, args map[string]any) *gateway.ToolResult {
	t.Helper()
	res, err := b.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: ws, TaskID: taskID, Actor: "user-7", Tool: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: Go error %v", name, err)
	}
	return res
}

// mustOK asserts a non-error result and returns its structured content.
func mustOK(t *testing.T, res *gateway.ToolResult) map[string]any {
	t.Helper()
	if res.IsError {
		t.Fatalf("unexpected isError result: %s", text(res))
	}
	if res.StructuredContent == nil {
		t.Fatal("result has no structured content")
	}
	return res.StructuredContent
}

// mustRefuse asserts an isError result whose text contains every part.
func mustRefuse(t *testing.T, res *gateway.ToolResult, parts ...string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want isError result, got %v", res.StructuredContent)
	}
	for _, p := range parts {
		if !strings.Contains(text(res), p) {
			t.Errorf("error text %q lacks %q", text(res), p)
		}
	}
}

func text(res *gateway.ToolResult) string {
	var sb strings.Builder
	for _, c := range res.Content {
		if s, ok := c["text"].(string); ok {
			sb.WriteString(s)
		}
	}
	return sb.String()
}

// get walks nested maps by keys.
func get(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
