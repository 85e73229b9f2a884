package demo

import (
	"context"
	"slices"
	"time"

	"github.com/mcpgate/mcpgate/gateway/approvals"
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

// approval is one gate record: the gateway's Gate (its JSON is what
// approvals.list answers, and what HumanGates hands out), kept here with
// TaskStatus and RunStatus always empty.
type approval = approvals.Gate

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
		a := &approval{ID: w.newID("apr"), Kind: "task", Class: seed.class, Status: "waiting", Title: seed.title, TaskID: t.ID,
			RunID: t.RunID, Details: seed.details, Prompt: seed.prompt, RequestedAt: asked}
		w.approvals = append(w.approvals, a)
		w.pauseTask(t, a)
	}
	done := find(w.tasks, func(t *task) bool { return t.Status == "completed" })
	w.approvals = append(w.approvals, &approval{
		ID: w.newID("apr"), Kind: "task", Class: gateQuestion, Status: "approved", Title: "Use the staging database for the backfill?",
		TaskID: done.ID, RunID: done.RunID, Prompt: "Backfill target?", RequestedAt: g.ago(30*time.Hour, 40*time.Hour),
		DecidedAt: ptr(g.ago(20*time.Hour, 29*time.Hour)), DecidedBy: "user:owner", Decision: "approve", Answer: "Yes, staging first.",
	})
	for _, rn := range w.runs {
		if rn.Kind == "workflow" && rn.ParentRunID == "" && rn.Status == "waiting" {
			child := find(w.runs, func(c *run) bool { return c.ParentRunID == rn.ID && c.Status == "waiting" })
			w.approvals = append(w.approvals, &approval{
				ID: w.newID("apr"), Kind: "workflow", Class: gateWorkflow, Status: "waiting", Title: "Release sign-off",
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
// redacted (docs/requirements.md#human-gates); filter "tool" keeps task gates,
// "workflow" workflow human gates.
func approvalsList(w *workspace, r *request) (any, error) {
	want := map[string]string{"tool": "task", "workflow": "workflow"}[r.str("filter")]
	if f := r.str("filter"); f != "" && want == "" {
		return nil, refuse("filter must be tool or workflow, not %q", f)
	}
	out := []approval{}
	for _, a := range w.approvals {
		if a.Status != "waiting" || (want != "" && a.Kind != want) {
			continue
		}
		v := *a
		if v.Kind == "task" {
			v.Prompt = "[redacted]"
		}
		out = append(out, v)
	}
	return list("approvals", out), nil
}

// approvalDecide answers question-class task gates only. Tool, visual and
// tier_change gates and every workflow human gate exist to put a person in
// the loop, so a machine's decision is refused as an isError result
// (docs/requirements.md#human-gates, the #858 invariant; docs/requirements.md#external-human-gates); a person
// decides them through HumanGates (DecideGate), on the same decide path.
func approvalDecide(w *workspace, r *request) (any, error) {
	id := r.str("approval_id")
	a := find(w.approvals, func(a *approval) bool { return a.ID == id })
	if a == nil {
		return nil, notFound("approval", id)
	}
	if err := machineMay(a); err != nil {
		return nil, err
	}
	d := approvals.GateDecision{Decision: r.str("decision"), Answer: r.str("answer"), Note: r.str("note"), DecidedBy: actorOr(r.Actor)}
	t, err := w.decide(a, d, r.now)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"approval": a}
	if t != nil {
		out["task_status"] = t.Status
	}
	return out, nil
}

// machineMay refuses gates a machine may not answer and gates already
// answered.
func machineMay(a *approval) error {
	switch {
	case a.Status != "waiting":
		return alreadyDecided(a)
	case a.Kind == "workflow":
		return refuse("approval %s is a workflow human gate (run %s, node %s); it exists so that a person decides, so a machine may not answer it. Tell a workspace member that a human decision is needed in SupaCloud.", a.ID, a.RunID, a.NodeID)
	case a.Class != gateQuestion:
		return refuse("approval %s is a %s gate on task %s; it exists to put a person in the loop, so a machine may not decide it. Ask a workspace member to decide it in SupaCloud.", a.ID, a.Class, a.TaskID)
	}
	return nil
}

func alreadyDecided(a *approval) error {
	return conflict("approval %s was already decided (%s by %s); nothing left to decide", a.ID, a.Status, a.DecidedBy)
}

// decide records d on waiting gate a, whoever decides (a machine through
// approval.decide once machineMay allowed it, a person through
// DecideGate), and resumes what waits on it: the paused task, or the
// workflow run at its human_gate node. It returns the task it resumed, nil
// for a workflow gate. A refusal changes nothing.
func (w *workspace) decide(a *approval, d approvals.GateDecision, at time.Time) (*task, error) {
	switch {
	case a.Status != "waiting":
		return nil, alreadyDecided(a)
	case d.Decision != approvals.GateApprove && d.Decision != approvals.GateReject:
		return nil, refuse("decision must be approve or reject, not %q", d.Decision)
	case d.Decision == approvals.GateApprove && a.Class == gateQuestion && d.Answer == "":
		return nil, refuse("approving question gate %s needs an answer to its question: %s", a.ID, a.Title)
	case d.DecidedBy == "":
		return nil, refuse("a decision of gate %s must name who decided it", a.ID)
	}
	a.Status = map[string]string{approvals.GateApprove: "approved", approvals.GateReject: "rejected"}[d.Decision]
	a.Decision, a.Answer, a.Note, a.DecidedBy, a.DecidedAt = d.Decision, d.Answer, d.Note, d.DecidedBy, ptr(at)
	if a.Kind == "workflow" {
		w.resumeWorkflow(a, at)
		return nil, nil
	}
	return w.resumeTask(a, at), nil
}

// resumeTask lets the paused task go on after its gate was decided and
// returns it; nil when no task waits on a.
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

// resumeWorkflow ends the human_gate node a waits at: approved, the node
// completes and the run goes on with the next top-level node; rejected,
// the node fails and, as a stop-policy node, stops the run.
func (w *workspace) resumeWorkflow(a *approval, at time.Time) {
	rn, wf := w.runByID(a.RunID), w.workflowByID(a.WorkflowID)
	if rn == nil || wf == nil {
		return
	}
	child := w.latestNodeRun(rn.ID, a.NodeID)
	s, _ := wf.stepByID(a.NodeID)
	data := map[string]any{"approval_id": a.ID, "decided_by": a.DecidedBy}
	if child != nil {
		data["node_run_id"] = child.ID
	}
	if a.Decision == approvals.GateReject {
		if child != nil {
			child.Error = "rejected by " + a.DecidedBy
			finish(child, "failed", at)
		}
		finish(rn, "failed", at)
		rn.Error = s.Name + " was rejected by " + a.DecidedBy
		w.logNode(rn, "workflow_node_failed", a.NodeID, s.Name+" rejected by "+a.DecidedBy+".", at, data)
		return
	}
	if child != nil {
		finish(child, "completed", at)
	}
	rn.Status = "running"
	w.logNode(rn, "workflow_node_completed", a.NodeID, s.Name+" approved by "+a.DecidedBy+".", at, data)
	top := wf.topSteps()
	i := slices.IndexFunc(top, func(st step) bool { return st.NodeID == a.NodeID })
	if i >= 0 && i+1 < len(top) {
		w.startNode(rn, wf, top[i+1], at)
		return
	}
	finish(rn, "completed", at)
	w.log(rn, "workflow_run_completed", wf.Name+" completed.", at, nil)
}

// ResourceKindApproval is the resource kind of a waiting gate, as the tool
// catalog declares it for approval.decide.
const ResourceKindApproval = "approval"

// ResolveResource tells the gateway, before its decision, what record a
// call addresses (the request path's resource lookup): for an approval of
// workspaceID, its gate class ("gate_class": question, tool, visual,
// tier_change or workflow_human_gate), whether it is a task or a workflow
// gate ("gate") and its status, so that the policy decides whether a
// machine may answer it (docs/requirements.md#external-human-gates) on what the gate is, not on
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
	return map[string]string{"gate_class": a.Class, "gate": a.Kind, "status": a.Status}, true, nil
}
