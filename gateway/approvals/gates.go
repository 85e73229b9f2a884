package approvals

import (
	"context"
	"time"
)

// Human gate kinds (Gate.Kind): a task gate pauses an agent task, a
// workflow gate pauses a workflow run at a human_gate node.
const (
	GateKindTask     = "task"
	GateKindWorkflow = "workflow"
)

// Human gate statuses (Gate.Status): a gate waits until a person approves
// or rejects it, once.
const (
	GateWaiting  = "waiting"
	GateApproved = "approved"
	GateRejected = "rejected"
)

// Human gate decisions (GateDecision.Decision).
const (
	GateApprove = "approve"
	GateReject  = "reject"
)

// GateClassQuestion is the class of a task gate that asks a question: the
// only class a machine may answer (docs/requirements.md#human-gates), and the one
// whose approval needs an Answer.
const GateClassQuestion = "question"

// Gate is one human gate of the backend: a point where an agent task or a
// workflow run waits for a person (docs/requirements.md#human-gates and
// approval.decide; docs/requirements.md#external-human-gates). It is the backend's record, not the
// gateway's own approvals (Approval), which hold one exact tools/call.
type Gate struct {
	// ID is the backend's gate id (the demo's "apr-…").
	ID string `json:"id"`
	// Kind is GateKindTask or GateKindWorkflow.
	Kind string `json:"gate"`
	// Class is question, tool, visual or tier_change for task gates and
	// workflow_human_gate for workflow gates.
	Class  string `json:"class"`
	Status string `json:"status"`
	Title  string `json:"title"`
	// Prompt is what the gate asks the person, unredacted: HumanGates is
	// read by workspace members and operators, not by the agents that
	// approvals.list redacts it for.
	Prompt     string         `json:"prompt,omitempty"`
	TaskID     string         `json:"task_id,omitempty"`
	RunID      string         `json:"run_id,omitempty"`
	WorkflowID string         `json:"workflow_id,omitempty"`
	NodeID     string         `json:"node_id,omitempty"`
	Details    map[string]any `json:"details,omitempty"`
	// RequestedAt is when the gate opened; DecidedAt, DecidedBy,
	// Decision, Answer and Note are set once a person decided it.
	RequestedAt time.Time  `json:"requested_at"`
	DecidedAt   *time.Time `json:"decided_at,omitempty"`
	DecidedBy   string     `json:"decided_by,omitempty"`
	Decision    string     `json:"decision,omitempty"`
	Answer      string     `json:"answer,omitempty"`
	Note        string     `json:"note,omitempty"`
	// TaskStatus and RunStatus are the status of the gate's task and run
	// as DecideGate left them ("running" once a decision resumed them);
	// empty in listings.
	TaskStatus string `json:"task_status,omitempty"`
	RunStatus  string `json:"run_status,omitempty"`
}

// Question reports whether approving the gate needs an Answer: it is a
// task gate that asks a question (GateClassQuestion).
func (g Gate) Question() bool { return g.Class == GateClassQuestion }

// GateDecision is a person's answer to one gate.
type GateDecision struct {
	// Decision is GateApprove or GateReject.
	Decision string
	// Answer answers a question gate; approving one needs it.
	Answer string
	// Note is an optional remark kept with the decision.
	Note string
	// DecidedBy names the person: the admin API sets it from the
	// caller's identity (a console sign-in's user, or the operator named
	// with the admin token), never from the gate's own data. Required.
	DecidedBy string
}

// HumanGates is an optional interface of a backend adapter that keeps
// human gates and lets a person decide them through the gateway (the
// admin API's gates routes, the console's approvals inbox). The demo
// backend implements it; an upstream MCP server does not, since a real
// backend has its own interface for people. The cc_server demo keeps no
// gates of this kind: its board approvals are decided with
// decide_approval, a tool that requires approval, so the person's
// decision is the gateway's own Approval of that call.
//
// Both methods are scoped to workspaceID, the workspace the admin API
// authorized: a gate of another workspace is not found.
type HumanGates interface {
	// ListGates returns the workspace's gates, waiting and decided, in the
	// order they opened.
	ListGates(ctx context.Context, workspaceID string) ([]Gate, error)
	// DecideGate records d on gate id and resumes what waits on it (the
	// paused task or workflow run), returning the gate as decided.
	// Errors: gateway.ENotFound for an id the workspace does not have,
	// gateway.EConflict once the gate is decided, gateway.EInvalid for a
	// bad decision (not approve or reject, a question approved without an
	// answer, no DecidedBy), each *gateway.Error with a message a person
	// can act on.
	DecideGate(ctx context.Context, workspaceID, id string, d GateDecision) (Gate, error)
}
