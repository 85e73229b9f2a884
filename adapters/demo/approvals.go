package demo

import (
	"context"
	"time"
)

// Gate classes. Task gates pause an agent task; workflow human gates pause
// a workflow run at a human_gate node.
const (
	gateQuestion   = "question"
	gateTool       = "tool"
	gateVisual     = "visual"
	gateTierChange = "tier_change"
	gateWorkflow   = "workflow_human_gate"
)

type approval struct {
	ID          string         `json:"id"`
	Gate        string         `json:"gate"` // task or workflow
	Class       string         `json:"class"`
	Status      string         `json:"status"` // waiting, approved, rejected
	Title       string         `json:"title"`
	TaskID      string         `json:"task_id,omitempty"`
	RunID       string         `json:"run_id"`
	WorkflowID  string         `json:"workflow_id,omitempty"`
	NodeID      string         `json:"node_id,omitempty"`
	Details     map[string]any `json:"details,omitempty"`
	Prompt      string         `json:"prompt,omitempty"`
	RequestedAt time.Time      `json:"requested_at"`
	DecidedAt   *time.Time     `json:"decided_at,omitempty"`
	DecidedBy   string         `json:"decided_by,omitempty"`
	Decision    string         `json:"decision,omitempty"`
	Answer      string         `json:"answer,omitempty"`
	Note        string         `json:"note,omitempty"`
}

var taskGateSeeds = []struct {
	class, title, prompt string
	details              map[string]any
}{
	{gateQuestion, "Which payment provider should the retry target?", "The webhook can retry against Stripe or Adyen. Which one is primary for EU customers?",
		map[string]any{"options": []string{"stripe", "adyen"}}},
	{gateTool, "Allow issue.transition on the billing tracker?", "The agent wants to close 4 issues it believes are fixed.",
		map[string]any{"tool": "issue.transition", "arguments_summary": "4 issues to closed"}},
	{gateVisual, "Check the new checkout layout", "Screenshots of the redesigned checkout are attached; confirm the layout before the agent continues.",
		map[string]any{"screenshots": 3}},
	{gateTierChange, "Raise this task from read to ops tier", "The agent asks for ops tools to restart the failed sync.",
		map[string]any{"from_tier": "read", "to_tier": "ops"}},
}

// genApprovals pauses each waiting task at one task gate (one per class),
// adds a decided question gate, and a workflow human gate for every
// workflow run waiting at a human_gate node.
func genApprovals(w *workspace, g *gen) {
	waiting := filter(w.tasks, 0, func(t *task) bool { return t.Status == "waiting" })
	for i, t := range waiting {
		seed := taskGateSeeds[i%len(taskGateSeeds)]
		asked := t.LastEvent.At.Add(time.Duration(g.between(1, 20)) * time.Second) // the agent paused after its last step
		if asked.After(g.base) {
			asked = g.base
		}
		a := &approval{ID: w.newID("apr"), Gate: "task", Class: seed.class, Status: "waiting", Title: seed.title, TaskID: t.ID,
			RunID: t.RunID, Details: seed.details, Prompt: seed.prompt, RequestedAt: asked}
		w.approvals = append(w.approvals, a)
		w.pauseTask(t, a)
	}
	done := find(w.tasks, func(t *task) bool { return t.Status == "completed" })
	w.approvals = append(w.approvals, &approval{
		ID: w.newID("apr"), Gate: "task", Class: gateQuestion, Status: "approved", Title: "Use the staging database for the backfill?",
		TaskID: done.ID, RunID: done.RunID, Prompt: "Backfill target?", RequestedAt: g.ago(30*time.Hour, 40*time.Hour),
		DecidedAt: ptr(g.ago(20*time.Hour, 29*time.Hour)), DecidedBy: "user:owner", Decision: "approve", Answer: "Yes, staging first.",
	})
	for _, rn := range w.runs {
		if rn.Kind == "workflow" && rn.ParentRunID == "" && rn.Status == "waiting" {
			child := find(w.runs, func(c *run) bool { return c.ParentRunID == rn.ID && c.Status == "waiting" })
			w.approvals = append(w.approvals, &approval{
				ID: w.newID("apr"), Gate: "workflow", Class: gateWorkflow, Status: "waiting", Title: "Release sign-off",
				RunID: rn.ID, WorkflowID: rn.WorkflowID, NodeID: child.NodeID, RequestedAt: child.CreatedAt,
				Details: map[string]any{"node_run_id": child.ID},
			})
		}
	}
}

func (w *workspace) pauseTask(t *task, a *approval) {
	t.WaitingOn = a.ID
	if rn := w.runByID(t.RunID); rn != nil {
		rn.Status = "waiting"
		w.log(rn, "approval_requested", a.Title, a.RequestedAt, map[string]any{"approval_id": a.ID, "class": a.Class})
	}
}

func approvalTools() map[string]tool {
	return map[string]tool{
		"approvals.list":  {handle: approvalsList},
		"approval.decide": {required: []string{"approval_id", "decision"}, handle: approvalDecide},
	}
}

// approvalsList lists waiting gates. Task gates are listed with the prompt
// redacted (seed 001, approvals.list); filter "tool" keeps task gates,
// "workflow" workflow human gates.
func approvalsList(w *workspace, r *request) (any, error) {
	want := map[string]string{"tool": "task", "workflow": "workflow"}[r.str("filter")]
	if f := r.str("filter"); f != "" && want == "" {
		return nil, refuse("filter must be tool or workflow, not %q", f)
	}
	out := []approval{}
	for _, a := range w.approvals {
		if a.Status != "waiting" || (want != "" && a.Gate != want) {
			continue
		}
		v := *a
		if v.Gate == "task" {
			v.Prompt = "[redacted]"
		}
		out = append(out, v)
	}
	return list("approvals", out), nil
}

// approvalDecide answers question-class task gates only. Tool, visual and
// tier_change gates and every workflow human gate exist to put a person in
// the loop, so a machine's decision is refused as an isError result (seed
// 001 approval.decide, the #858 invariant; seed 002 step 3).
func approvalDecide(w *workspace, r *request) (any, error) {
	id := r.str("approval_id")
	a := find(w.approvals, func(a *approval) bool { return a.ID == id })
	if a == nil {
		return nil, notFound("approval", id)
	}
	if err := decidable(a); err != nil {
		return nil, err
	}
	decision := r.str("decision")
	if decision != "approve" && decision != "reject" {
		return nil, refuse("decision must be approve or reject, not %q", decision)
	}
	if decision == "approve" && r.str("answer") == "" {
		return nil, refuse("approving question gate %s needs an answer to its question: %s", a.ID, a.Title)
	}
	a.Status = map[string]string{"approve": "approved", "reject": "rejected"}[decision]
	a.Decision, a.Answer, a.Note, a.DecidedBy, a.DecidedAt = decision, r.str("answer"), r.str("note"), actorOr(r.Actor), ptr(r.now)
	out := map[string]any{"approval": a}
	if t := w.resumeTask(a, r.now); t != nil {
		out["task_status"] = t.Status
	}
	return out, nil
}

// decidable refuses gates a machine may not answer and gates already
// answered.
func decidable(a *approval) error {
	switch {
	case a.Status != "waiting":
		return refuse("approval %s was already decided (%s by %s); nothing left to decide", a.ID, a.Status, a.DecidedBy)
	case a.Gate == "workflow":
		return refuse("approval %s is a workflow human gate (run %s, node %s); it exists so that a person decides, so a machine may not answer it. Tell a workspace member that a human decision is needed in SupaCloud.", a.ID, a.RunID, a.NodeID)
	case a.Class != gateQuestion:
		return refuse("approval %s is a %s gate on task %s; it exists to put a person in the loop, so a machine may not decide it. Ask a workspace member to decide it in SupaCloud.", a.ID, a.Class, a.TaskID)
	}
	return nil
}

// resumeTask lets the paused task go on after its question was answered
// and returns it; nil when no task waits on a.
func (w *workspace) resumeTask(a *approval, at time.Time) *task {
	t := w.taskByID(a.TaskID)
	if t == nil || t.WaitingOn != a.ID {
		return nil
	}
	t.WaitingOn, t.Status = "", "running"
	if rn := w.runByID(t.RunID); rn != nil {
		rn.Status = "running"
		w.log(rn, "approval_decided", a.Decision+": "+a.Answer, at, map[string]any{"approval_id": a.ID, "decided_by": a.DecidedBy})
	}
	return t
}

// ResourceKindApproval is the resource kind of a waiting gate, as the tool
// catalog declares it for approval.decide.
const ResourceKindApproval = "approval"

// ResolveResource tells the gateway, before its decision, what record a
// call addresses (the request path's resource lookup): for an approval of
// workspaceID, its gate class ("gate_class": question, tool, visual,
// tier_change or workflow_human_gate), whether it is a task or a workflow
// gate ("gate") and its status, so that the policy decides whether a
// machine may answer it (seed 002, step 3) on what the gate is, not on
// what the caller says. found is false for an id the workspace does not
// have, or a kind the demo does not know.
func (b *Backend) ResolveResource(ctx context.Context, workspaceID, kind, id string) (map[string]string, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if kind != ResourceKindApproval || workspaceID == "" {
		return nil, false, nil
	}
	w := b.workspace(workspaceID)
	w.mu.Lock()
	defer w.mu.Unlock()
	a := find(w.approvals, func(a *approval) bool { return a.ID == id })
	if a == nil {
		return nil, false, nil
	}
	return map[string]string{"gate_class": a.Class, "gate": a.Gate, "status": a.Status}, true, nil
}
