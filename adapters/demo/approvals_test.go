package demo

import (
	"testing"
)

// TestApprovalDecideRules: only question-class task gates may be decided by
// a machine (docs/requirements.md#human-gates; docs/requirements.md#external-human-gates for workflow human
// gates). Refusals are isError results and change nothing.
func TestApprovalDecideRules(t *testing.T) {
	tests := []struct {
		name       string
		gate       func(ids) string
		args       map[string]any
		wantStatus string   // approval status after the call; "" for a refusal
		wantText   []string // parts of the refusal
	}{
		{name: "question approved with answer", gate: func(f ids) string { return f.question },
			args: map[string]any{"decision": "approve", "answer": "stripe", "note": "EU uses Stripe"}, wantStatus: "approved"},
		{name: "question rejected", gate: func(f ids) string { return f.question },
			args: map[string]any{"decision": "reject"}, wantStatus: "rejected"},
		{name: "question approved without answer", gate: func(f ids) string { return f.question },
			args: map[string]any{"decision": "approve"}, wantText: []string{"needs an answer"}},
		{name: "tool gate", gate: func(f ids) string { return f.toolGate },
			args: map[string]any{"decision": "approve"}, wantText: []string{"tool gate", "person in the loop", "machine may not decide"}},
		{name: "visual gate", gate: func(f ids) string { return f.visualGate },
			args: map[string]any{"decision": "reject"}, wantText: []string{"visual gate", "machine may not decide"}},
		{name: "tier change gate", gate: func(f ids) string { return f.tierGate },
			args: map[string]any{"decision": "approve"}, wantText: []string{"tier_change gate", "machine may not decide"}},
		{name: "workflow human gate approve", gate: func(f ids) string { return f.workflowGate },
			args: map[string]any{"decision": "approve"}, wantText: []string{"workflow human gate", "a person decides", "human decision is needed"}},
		{name: "workflow human gate reject", gate: func(f ids) string { return f.workflowGate },
			args: map[string]any{"decision": "reject"}, wantText: []string{"workflow human gate"}},
		{name: "unknown approval", gate: func(ids) string { return "apr-00000000" },
			args: map[string]any{"decision": "approve", "answer": "x"}, wantText: []string{"approval apr-00000000 not found in this workspace"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestBackend()
			fx := fixtures(t, b, "ws-a")
			id := tc.gate(fx)
			args := map[string]any{"approval_id": id}
			for k, v := range tc.args {
				args[k] = v
			}
			waitingBefore := waitingIDs(t, b)
			res := call(t, b, "ws-a", "", "approval.decide", args)
			if tc.wantStatus == "" {
				mustRefuse(t, res, tc.wantText...)
				if got := waitingIDs(t, b); got != waitingBefore {
					t.Errorf("refused decision changed the waiting gates: %s -> %s", waitingBefore, got)
				}
				return
			}
			out := mustOK(t, res)
			if got := get(out, "approval", "status"); got != tc.wantStatus {
				t.Errorf("approval status = %v, want %s", got, tc.wantStatus)
			}
			if got := out["task_status"]; got != "running" {
				t.Errorf("task status after decision = %v, want running", got)
			}
			again := call(t, b, "ws-a", "", "approval.decide", args)
			mustRefuse(t, again, "already decided")
		})
	}
}

func waitingIDs(t *testing.T, b *Backend) string {
	t.Helper()
	out := mustOK(t, call(t, b, "ws-a", "", "approvals.list", nil))
	s := ""
	for _, a := range out["approvals"].([]any) {
		s += a.(map[string]any)["id"].(string) + " "
	}
	return s
}

func TestApprovalsListFiltersAndRedacts(t *testing.T) {
	b := newTestBackend()
	tests := []struct {
		filter    string
		wantGates map[string]bool
	}{
		{"", map[string]bool{"task": true, "workflow": true}},
		{"tool", map[string]bool{"task": true}},
		{"workflow", map[string]bool{"workflow": true}},
	}
	for _, tc := range tests {
		t.Run("filter="+tc.filter, func(t *testing.T) {
			args := map[string]any{}
			if tc.filter != "" {
				args["filter"] = tc.filter
			}
			out := mustOK(t, call(t, b, "ws-a", "", "approvals.list", args))
			seen := map[string]bool{}
			for _, it := range out["approvals"].([]any) {
				a := it.(map[string]any)
				seen[a["gate"].(string)] = true
				if a["status"] != "waiting" {
					t.Errorf("listed a %v gate", a["status"])
				}
				if a["gate"] == "task" && a["prompt"] != "[redacted]" {
					t.Errorf("task gate %v shows its prompt %q", a["id"], a["prompt"])
				}
			}
			if len(seen) != len(tc.wantGates) || (tc.wantGates["task"] && !seen["task"]) || (tc.wantGates["workflow"] && !seen["workflow"]) {
				t.Errorf("gates listed %v, want %v", seen, tc.wantGates)
			}
		})
	}
	mustRefuse(t, call(t, b, "ws-a", "", "approvals.list", map[string]any{"filter": "visual"}), "filter must be tool or workflow")
}
