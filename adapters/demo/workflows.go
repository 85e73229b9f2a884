package demo

import (
	"fmt"
	"time"
)

type workflow struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	ProjectID   string    `json:"project_id"`
	Enabled     bool      `json:"enabled"`
	Steps       []step    `json:"steps"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// step is one workflow node with its outgoing edges, the flattened form of
// workflow_nodes + workflow_edges (workflow.get, docs/requirements.md#tiers). Loop frames run
// their Body nodes once per item; body nodes are not top-level.
type step struct {
	NodeID    string   `json:"node_id"`
	Name      string   `json:"name"`
	Kind      string   `json:"kind"` // agent, script, http, human_gate, loop
	OnFailure string   `json:"on_failure"`
	Next      []string `json:"next"`
	Body      []string `json:"body,omitempty"`
	InLoop    string   `json:"in_loop,omitempty"`
	Target    string   `json:"target,omitempty"`
}

func (s step) topLevel() bool { return s.InLoop == "" }

// workflowSeeds are linear flows; a loop's body follows it directly.
var workflowSeeds = []struct {
	name, desc string
	steps      []step
}{
	{"Nightly data sync", "Pull the ERP export, clean it and load it into the warehouse.", []step{
		{Name: "Extract ERP export", Kind: "script", OnFailure: "stop", Target: "sync-erp-export"},
		{Name: "Clean records", Kind: "agent", OnFailure: "stop"},
		{Name: "Load warehouse", Kind: "script", OnFailure: "stop", Target: "load-warehouse"},
		{Name: "Notify #data", Kind: "http", OnFailure: "continue"},
	}},
	{"Release train", "Build, get a human sign-off, then deploy the customer portal.", []step{
		{Name: "Build and test", Kind: "agent", OnFailure: "stop"},
		{Name: "Release sign-off", Kind: "human_gate", OnFailure: "stop"},
		{Name: "Deploy portal", Kind: "script", OnFailure: "stop", Target: "deploy-portal"},
	}},
	{"Support triage", "Classify new conversations and draft answers.", []step{
		{Name: "Fetch new conversations", Kind: "script", OnFailure: "stop", Target: "fetch-conversations"},
		{Name: "For each conversation", Kind: "loop", OnFailure: "stop"},
		{Name: "Classify", Kind: "agent", OnFailure: "continue"},
		{Name: "Summarise for the team", Kind: "agent", OnFailure: "stop"},
	}},
}

func genWorkflows(w *workspace, g *gen) {
	for i, seed := range workflowSeeds {
		wf := &workflow{
			ID: w.newID("wfl"), Name: seed.name, Description: seed.desc, ProjectID: w.projects[i%len(w.projects)].ID,
			Enabled: true, CreatedAt: g.ago(15*24*time.Hour, 90*24*time.Hour),
		}
		wf.UpdatedAt = wf.CreatedAt.Add(time.Duration(g.between(1, 200)) * time.Hour)
		wf.Steps = linkSteps(seed.steps)
		w.workflows = append(w.workflows, wf)
	}
}

// linkSteps numbers the nodes and draws the edges: each top-level node
// points at the next top-level node; a loop owns the node after it.
func linkSteps(in []step) []step {
	steps := make([]step, len(in))
	for i, s := range in {
		s.NodeID = fmt.Sprintf("n%d", i+1)
		s.Next = []string{}
		steps[i] = s
	}
	for i := range steps {
		if steps[i].Kind == "loop" && i+1 < len(steps) {
			steps[i].Body = []string{steps[i+1].NodeID}
			steps[i+1].InLoop = steps[i].NodeID
		}
	}
	prev := -1
	for i := range steps {
		if !steps[i].topLevel() {
			continue
		}
		if prev >= 0 {
			steps[prev].Next = append(steps[prev].Next, steps[i].NodeID)
		}
		prev = i
	}
	return steps
}

func (w *workspace) workflowByID(id string) *workflow {
	return find(w.workflows, func(wf *workflow) bool { return wf.ID == id })
}

func (wf *workflow) topSteps() []step {
	out := []step{}
	for _, s := range wf.Steps {
		if s.topLevel() {
			out = append(out, s)
		}
	}
	return out
}

func (wf *workflow) stepByID(id string) (step, bool) {
	for _, s := range wf.Steps {
		if s.NodeID == id {
			return s, true
		}
	}
	return step{}, false
}

func (wf *workflow) bodyOf(loop step) []step {
	out := []step{}
	for _, id := range loop.Body {
		if s, ok := wf.stepByID(id); ok {
			out = append(out, s)
		}
	}
	return out
}

func workflowTools() map[string]tool {
	return map[string]tool{
		"workflows.list":   {handle: workflowsList},
		"workflow.get":     {required: []string{"workflow_id"}, handle: workflowGet},
		"workflow.trigger": {required: []string{"workflow_id"}, handle: workflowTrigger},
	}
}

type workflowSummary struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	ProjectID string    `json:"project_id"`
	Enabled   bool      `json:"enabled"`
	StepCount int       `json:"step_count"`
	UpdatedAt time.Time `json:"updated_at"`
}

func workflowsList(w *workspace, r *request) (any, error) {
	pid := r.str("project_id")
	out := []workflowSummary{}
	for _, wf := range filter(w.workflows, 0, func(wf *workflow) bool { return pid == "" || wf.ProjectID == pid }) {
		out = append(out, workflowSummary{ID: wf.ID, Name: wf.Name, ProjectID: wf.ProjectID, Enabled: wf.Enabled, StepCount: len(wf.Steps), UpdatedAt: wf.UpdatedAt})
	}
	return list("workflows", out), nil
}

func workflowGet(w *workspace, r *request) (any, error) {
	wf := w.workflowByID(r.str("workflow_id"))
	if wf == nil {
		return nil, notFound("workflow", r.str("workflow_id"))
	}
	recent := filter(w.runs, 0, func(rn *run) bool { return rn.WorkflowID == wf.ID && rn.ParentRunID == "" })
	ids := []string{}
	for _, rn := range recent {
		ids = append(ids, rn.ID)
	}
	return map[string]any{"workflow": wf, "recent_run_ids": ids}, nil
}

// workflowTrigger starts a run: the run is running and its first node has
// started.
func workflowTrigger(w *workspace, r *request) (any, error) {
	wf := w.workflowByID(r.str("workflow_id"))
	if wf == nil {
		return nil, notFound("workflow", r.str("workflow_id"))
	}
	if !wf.Enabled {
		return nil, refuse("workflow %s is disabled; a workspace admin must enable it first", wf.ID)
	}
	rn := w.startWorkflowRun(wf, "mcp", r.now)
	rn.Output = map[string]any{"inputs": r.object("inputs")}
	first := wf.topSteps()[0]
	w.startNode(rn, wf, first, r.now)
	return map[string]any{"run_id": rn.ID, "workflow_id": wf.ID, "status": rn.Status, "started_at": rn.StartedAt, "current_node_id": first.NodeID}, nil
}

func (w *workspace) startWorkflowRun(wf *workflow, trigger string, at time.Time) *run {
	rn := w.newRun("workflow", "running", trigger, at)
	rn.WorkflowID, rn.ProjectID = wf.ID, wf.ProjectID
	w.log(rn, "workflow_run_started", "Started "+wf.Name+".", at, map[string]any{"trigger": trigger})
	return rn
}

// startNode creates the child run of one node and logs its start.
func (w *workspace) startNode(parent *run, wf *workflow, s step, at time.Time) *run {
	child := w.newRun(nodeRunKind(s), "running", "workflow", at)
	child.ParentRunID, child.NodeID, child.WorkflowID, child.ProjectID = parent.ID, s.NodeID, wf.ID, wf.ProjectID
	if s.Kind == "script" {
		child.ScriptSlug = s.Target
	}
	w.logNode(parent, "workflow_node_started", s.NodeID, s.Name+" started.", at, map[string]any{"node_run_id": child.ID})
	return child
}

// nodeRunKind is the run kind of a node's child run.
func nodeRunKind(s step) string {
	if s.Kind == "script" {
		return "script"
	}
	if s.Kind == "agent" {
		return "agent"
	}
	return "workflow"
}

// genWorkflowRuns seeds one run per workflow outcome: completed, failed at
// a stop-policy node, and waiting at a human gate, plus loop iterations.
func genWorkflowRuns(w *workspace, g *gen) {
	for _, wf := range w.workflows {
		w.simulateRun(g, wf, "completed", -1)
	}
	w.simulateRun(g, w.workflows[0], "failed", 2) // "Load warehouse" fails
	w.simulateRun(g, w.workflows[1], "waiting", 1)
	w.simulateRun(g, w.workflows[2], "running", 2) // still summarising
}

// simulateRun plays wf up to top-level node index stop, which ends in
// outcome (completed, failed, waiting or running); stop -1 completes all.
func (w *workspace) simulateRun(g *gen, wf *workflow, outcome string, stop int) *run {
	at := g.ago(time.Hour, 30*time.Hour) // leaves room for the nodes to end before now
	rn := w.startWorkflowRun(wf, g.pick("schedule", "manual", "api"), at)
	for i, s := range wf.topSteps() {
		at = at.Add(time.Duration(g.between(20, 400)) * time.Second)
		switch {
		case stop < 0 || i < stop:
			w.completeNode(g, rn, wf, s, at)
		case i == stop:
			w.stopNode(rn, wf, s, outcome, at)
		case outcome == "failed":
			w.logNode(rn, "workflow_node_skipped", s.NodeID, s.Name+" skipped: an earlier node failed.", at, nil)
		}
	}
	if stop < 0 {
		finish(rn, "completed", at)
		w.log(rn, "workflow_run_completed", wf.Name+" completed.", at, nil)
	}
	rn.CostUSD = g.usd(0.02, 3)
	return rn
}

func (w *workspace) completeNode(g *gen, rn *run, wf *workflow, s step, at time.Time) {
	child := w.startNode(rn, wf, s, at.Add(-time.Duration(g.between(10, 19))*time.Second))
	if s.Kind == "loop" {
		for _, body := range wf.bodyOf(s) {
			for it := range 3 {
				iter := w.newRun(nodeRunKind(body), "completed", "loop", at)
				iter.ParentRunID, iter.NodeID, iter.Iteration, iter.WorkflowID = child.ID, body.NodeID, ptr(it), wf.ID
				finish(iter, "completed", at)
			}
		}
	}
	finish(child, "completed", at)
	w.logNode(rn, "workflow_node_completed", s.NodeID, s.Name+" completed.", at, map[string]any{"node_run_id": child.ID})
}

func (w *workspace) stopNode(rn *run, wf *workflow, s step, outcome string, at time.Time) {
	child := w.startNode(rn, wf, s, at)
	switch outcome {
	case "failed":
		child.Error = "exit status 1"
		finish(child, "failed", at)
		finish(rn, "failed", at)
		w.logNode(rn, "workflow_node_failed", s.NodeID, s.Name+" failed.", at, map[string]any{
			"node_run_id": child.ID, "exit_code": 1,
			"stdout": "loaded 1840 of 2000 rows", "stderr": "psycopg.errors.UniqueViolation: duplicate key value violates unique constraint \"orders_pkey\"",
		})
		rn.Error = s.Name + " failed"
	case "waiting":
		child.Status, rn.Status = "waiting", "waiting"
		w.logNode(rn, "workflow_node_waiting", s.NodeID, s.Name+" is waiting for a person to decide.", at, map[string]any{"node_run_id": child.ID})
	}
}

// runRerunNode re-executes one failed or cancelled top-level node of a
// workflow run, superseding the failed child run (run.rerun_node, docs/requirements.md#tiers:
// stop-policy nodes only, never a loop frame). The run continues on its own
// once the node succeeds.
func runRerunNode(w *workspace, r *request) (any, error) {
	rn, wf, s, err := w.rerunTarget(r.str("run_id"), r.str("node_id"))
	if err != nil {
		return nil, err
	}
	old := w.latestNodeRun(rn.ID, s.NodeID)
	if old == nil || (old.Status != "failed" && old.Status != "cancelled") {
		status := "not run yet"
		if old != nil {
			status = old.Status
		}
		return nil, refuse("node %s of run %s is %s; only a failed or cancelled node can be re-run", s.NodeID, rn.ID, status)
	}
	child := w.startNode(rn, wf, s, r.now)
	child.Trigger = "rerun"
	old.SupersededBy = child.ID
	rn.Status, rn.FinishedAt, rn.Error = "running", nil, ""
	rn.events[len(rn.events)-1].Data["rerun_of"] = old.ID
	return map[string]any{"run_id": rn.ID, "node_id": s.NodeID, "node_run_id": child.ID, "superseded_run_id": old.ID, "run_status": rn.Status}, nil
}

// rerunTarget checks that runID is a top-level workflow run of this
// workspace and nodeID a re-runnable node of its workflow.
func (w *workspace) rerunTarget(runID, nodeID string) (*run, *workflow, step, error) {
	rn := w.runByID(runID)
	if rn == nil {
		return nil, nil, step{}, notFound("run", runID)
	}
	wf := w.workflowByID(rn.WorkflowID)
	if rn.Kind != "workflow" || rn.ParentRunID != "" || wf == nil {
		return nil, nil, step{}, refuse("run %s is not a top-level workflow run; run.rerun_node only re-runs workflow nodes", runID)
	}
	s, ok := wf.stepByID(nodeID)
	switch {
	case !ok:
		return nil, nil, step{}, refuse("workflow %s has no node %s; see workflow.get for its nodes", wf.ID, nodeID)
	case !s.topLevel():
		return nil, nil, step{}, refuse("node %s runs inside loop %s; only top-level nodes can be re-run", nodeID, s.InLoop)
	case s.Kind == "loop":
		return nil, nil, step{}, refuse("node %s is a loop frame, which cannot be re-run; trigger the workflow again instead", nodeID)
	case s.OnFailure != "stop":
		return nil, nil, step{}, refuse("node %s uses the %s failure policy; only stop-policy nodes can be re-run", nodeID, s.OnFailure)
	}
	return rn, wf, s, nil
}

// latestNodeRun is the newest child run of node in run parent.
func (w *workspace) latestNodeRun(parent, node string) *run {
	var last *run
	for _, c := range w.children(parent) {
		if c.NodeID == node {
			last = c
		}
	}
	return last
}
