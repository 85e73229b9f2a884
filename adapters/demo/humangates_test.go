package demo

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
)

// TestDecideGateByPerson: a person decides, through HumanGates, the gates
// approval.decide refuses a machine; the paused task (or workflow run)
// resumes, and approval.decide still refuses the machine the others.
func TestDecideGateByPerson(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		gate       func(ids) string
		d          approvals.GateDecision
		wantStatus string
		wantTask   string // task status after; "" for a workflow gate
		wantRun    string
	}{
		{name: "tool gate approved", gate: func(f ids) string { return f.toolGate },
			d: approvals.GateDecision{Decision: "approve", Note: "the 4 are fixed", DecidedBy: "user:ada"}, wantStatus: "approved", wantTask: "running", wantRun: "running"},
		{name: "visual gate rejected", gate: func(f ids) string { return f.visualGate },
			d: approvals.GateDecision{Decision: "reject", DecidedBy: "user:ada"}, wantStatus: "rejected", wantTask: "running", wantRun: "running"},
		{name: "tier change approved", gate: func(f ids) string { return f.tierGate },
			d: approvals.GateDecision{Decision: "approve", DecidedBy: "user:ada"}, wantStatus: "approved", wantTask: "running", wantRun: "running"},
		{name: "question answered", gate: func(f ids) string { return f.question },
			d: approvals.GateDecision{Decision: "approve", Answer: "stripe", DecidedBy: "user:ada"}, wantStatus: "approved", wantTask: "running", wantRun: "running"},
		{name: "workflow gate approved", gate: func(f ids) string { return f.workflowGate },
			d: approvals.GateDecision{Decision: "approve", DecidedBy: "user:ada"}, wantStatus: "approved", wantRun: "running"},
		{name: "workflow gate rejected", gate: func(f ids) string { return f.workflowGate },
			d: approvals.GateDecision{Decision: "reject", DecidedBy: "user:ada"}, wantStatus: "rejected", wantRun: "failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestBackend()
			id := tc.gate(fixtures(t, b, "ws-a"))
			if tc.wantTask != "" && tc.d.Answer == "" {
				res := call(t, b, "ws-a", "", "approval.decide", map[string]any{"approval_id": id, "decision": tc.d.Decision})
				mustRefuse(t, res, "machine may not decide")
			}
			g, err := b.DecideGate(ctx, "ws-a", id, tc.d)
			if err != nil {
				t.Fatalf("DecideGate: %v", err)
			}
			if g.Status != tc.wantStatus || g.DecidedBy != "user:ada" || g.DecidedAt == nil || g.TaskStatus != tc.wantTask || g.RunStatus != tc.wantRun {
				t.Errorf("decided gate = status %q by %q at %v, task %q, run %q; want %q by user:ada, task %q, run %q",
					g.Status, g.DecidedBy, g.DecidedAt, g.TaskStatus, g.RunStatus, tc.wantStatus, tc.wantTask, tc.wantRun)
			}
			if tc.wantTask != "" {
				task := mustOK(t, call(t, b, "ws-a", "", "tasks.get", map[string]any{"task_id": g.TaskID}))
				if got := get(task, "task", "status"); got != tc.wantTask {
					t.Errorf("tasks.get status after the decision = %v, want %s", got, tc.wantTask)
				}
			}
			run := mustOK(t, call(t, b, "ws-a", "", "run.get", map[string]any{"run_id": g.RunID}))
			if got := get(run, "run", "status"); got != tc.wantRun {
				t.Errorf("run.get status after the decision = %v, want %s", got, tc.wantRun)
			}
			if !strings.Contains(asJSON(t, mustOK(t, call(t, b, "ws-a", "", "run.events", map[string]any{"run_id": g.RunID, "tail": 3}))), "user:ada") {
				t.Error("the run's events do not name who decided")
			}
			if _, err := b.DecideGate(ctx, "ws-a", id, tc.d); gateway.ErrorCodeOf(err) != gateway.EConflict || !strings.Contains(err.Error(), "already decided") {
				t.Errorf("second decision: %v, want Conflict \"already decided\"", err)
			}
			mustRefuse(t, call(t, b, "ws-a", "", "approval.decide", map[string]any{"approval_id": id, "decision": "approve", "answer": "x"}), "already decided")
		})
	}
}

// TestDecideGateRefusals: bad decisions are refused with their code and
// change nothing.
func TestDecideGateRefusals(t *testing.T) {
	ctx := context.Background()
	b := newTestBackend()
	fx := fixtures(t, b, "ws-a")
	tests := []struct {
		name string
		id   string
		d    approvals.GateDecision
		code gateway.ErrorCode
		want string
	}{
		{"unknown gate", "apr-00000000", approvals.GateDecision{Decision: "approve", DecidedBy: "u"}, gateway.ENotFound, "gate apr-00000000 not found"},
		{"other workspace's gate", fixtures(t, b, "ws-b").toolGate, approvals.GateDecision{Decision: "approve", DecidedBy: "u"}, gateway.ENotFound, "not found in this workspace"},
		{"question without answer", fx.question, approvals.GateDecision{Decision: "approve", DecidedBy: "u"}, gateway.EInvalid, "needs an answer"},
		{"neither approve nor reject", fx.toolGate, approvals.GateDecision{Decision: "maybe", DecidedBy: "u"}, gateway.EInvalid, "approve or reject"},
		{"nobody named", fx.toolGate, approvals.GateDecision{Decision: "approve"}, gateway.EInvalid, "who decided"},
	}
	before := waitingIDs(t, b)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.DecideGate(ctx, "ws-a", tc.id, tc.d)
			if gateway.ErrorCodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v (%s), want %s %q", err, gateway.ErrorCodeOf(err), tc.code, tc.want)
			}
		})
	}
	if after := waitingIDs(t, b); after != before {
		t.Errorf("refused decisions changed the waiting gates: %s -> %s", before, after)
	}
}

// TestListGatesShowsPrompts: ListGates lists what approvals.list lists
// while waiting, with the prompts a person needs, plus the decided gates.
func TestListGatesShowsPrompts(t *testing.T) {
	b := newTestBackend()
	gates, err := b.ListGates(context.Background(), "ws-a")
	if err != nil {
		t.Fatal(err)
	}
	waiting, decided := "", 0
	for _, g := range gates {
		switch g.Status {
		case "waiting":
			waiting += g.ID + " "
			if g.Kind == "task" && (g.Prompt == "" || g.Prompt == "[redacted]") {
				t.Errorf("task gate %s lists prompt %q, want its text", g.ID, g.Prompt)
			}
		default:
			decided++
			if g.DecidedBy == "" {
				t.Errorf("decided gate %s names nobody", g.ID)
			}
		}
	}
	if want := waitingIDs(t, b); waiting != want {
		t.Errorf("waiting gates %q, approvals.list lists %q", waiting, want)
	}
	if decided == 0 {
		t.Error("no decided gate listed")
	}
}
