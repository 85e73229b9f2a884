package demo

import (
	"slices"
	"time"
)

// run is one execution of any kind: agent (a task), workflow, script or app.
// Workflow node runs and loop iterations are child runs (ParentRunID set).
type run struct {
	ID           string         `json:"id"`
	Kind         string         `json:"kind"`
	Status       string         `json:"status"`
	ProjectID    string         `json:"project_id,omitempty"`
	TaskID       string         `json:"task_id,omitempty"`
	AppID        string         `json:"app_id,omitempty"`
	WorkflowID   string         `json:"workflow_id,omitempty"`
	ScriptSlug   string         `json:"script_slug,omitempty"`
	ParentRunID  string         `json:"parent_run_id,omitempty"`
	NodeID       string         `json:"node_id,omitempty"`
	Iteration    *int           `json:"iteration,omitempty"`
	Trigger      string         `json:"trigger"`
	CreatedAt    time.Time      `json:"created_at"`
	StartedAt    *time.Time     `json:"started_at"`
	FinishedAt   *time.Time     `json:"finished_at"`
	CostUSD      float64        `json:"cost_usd"`
	Output       map[string]any `json:"output,omitempty"`
	Error        string         `json:"error,omitempty"`
	SupersededBy string         `json:"superseded_by,omitempty"`
	EventCount   int            `json:"event_count"`
	events       []event
}

// event is one entry of a run's log; Sequence starts at 1 and grows by one.
type event struct {
	Sequence int            `json:"sequence"`
	Type     string         `json:"type"`
	At       time.Time      `json:"at"`
	Message  string         `json:"message,omitempty"`
	NodeID   string         `json:"node_id,omitempty"`
	Data     map[string]any `json:"data,omitempty"`
}

// Run statuses are queued, running, waiting (paused at a decision gate),
// completed, failed and cancelled; the last three are terminal.
func terminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

// newRun registers a run created at `at` and returns it.
func (w *workspace) newRun(kind, status, trigger string, at time.Time) *run {
	rn := &run{ID: w.newID("run"), Kind: kind, Status: status, Trigger: trigger, CreatedAt: at}
	if status != "queued" {
		rn.StartedAt = ptr(at)
	}
	w.runs = append(w.runs, rn)
	return rn
}

// log appends an event to rn and keeps the owning task's last event in step.
func (w *workspace) log(rn *run, typ, msg string, at time.Time, data map[string]any) {
	rn.events = append(rn.events, event{Sequence: len(rn.events) + 1, Type: typ, At: at, Message: msg, Data: data})
	rn.EventCount = len(rn.events)
	if t := w.taskByID(rn.TaskID); t != nil && t.RunID == rn.ID {
		t.LastEvent = &lastEvent{Type: typ, Message: msg, At: at}
	}
}

// logNode appends a workflow step-timeline event for node.
func (w *workspace) logNode(rn *run, typ, node, msg string, at time.Time, data map[string]any) {
	w.log(rn, typ, msg, at, data)
	rn.events[len(rn.events)-1].NodeID = node
}

// finish ends rn with status at `at`.
func finish(rn *run, status string, at time.Time) {
	rn.Status = status
	if rn.StartedAt == nil {
		rn.StartedAt = ptr(at)
	}
	rn.FinishedAt = ptr(at)
}

func (w *workspace) runByID(id string) *run {
	return find(w.runs, func(rn *run) bool { return rn.ID == id })
}

func (w *workspace) children(parent string) []*run {
	return filter(w.runs, 0, func(rn *run) bool { return rn.ParentRunID == parent })
}

// treeNode is one descendant in run.get's flattened tree.
type treeNode struct {
	*run
	Depth int `json:"depth"`
}

// descendants flattens the tree under id depth-first, in creation order.
func (w *workspace) descendants(id string, depth int) []treeNode {
	out := []treeNode{}
	for _, c := range w.children(id) {
		out = append(out, treeNode{run: c, Depth: depth})
		out = append(out, w.descendants(c.ID, depth+1)...)
	}
	return out
}

func runTools() map[string]tool {
	return map[string]tool{
		"run.list":       {handle: runList},
		"run.get":        {required: []string{"run_id"}, handle: runGet},
		"run.events":     {required: []string{"run_id"}, handle: runEvents},
		"run.rerun_node": {required: []string{"run_id", "node_id"}, handle: runRerunNode},
	}
}

// runList lists top-level runs newest first (docs/requirements.md#workspace-isolation).
func runList(w *workspace, r *request) (any, error) {
	match := func(arg, v string) bool { a := r.str(arg); return a == "" || a == v }
	top := filter(w.runs, 0, func(rn *run) bool {
		return rn.ParentRunID == "" && match("status", rn.Status) && match("kind", rn.Kind) &&
			match("project_id", rn.ProjectID) && match("task_id", rn.TaskID) && match("app_id", rn.AppID)
	})
	slices.SortStableFunc(top, func(a, b *run) int { return b.CreatedAt.Compare(a.CreatedAt) })
	if n := r.limit(20, 100); len(top) > n {
		top = top[:n]
	}
	return list("runs", top), nil
}

func runGet(w *workspace, r *request) (any, error) {
	id := r.str("run_id")
	rn := w.runByID(id)
	if rn == nil {
		return nil, notFound("run", id)
	}
	return map[string]any{"run": rn, "descendants": w.descendants(rn.ID, 1)}, nil
}

// runEvents pages through a run's log by sequence number: events after
// after_sequence, at most limit of them; tail returns the last limit events
// (after after_sequence when both are given).
func runEvents(w *workspace, r *request) (any, error) {
	id := r.str("run_id")
	rn := w.runByID(id)
	if rn == nil {
		return nil, notFound("run", id)
	}
	after := 0
	if f, ok := r.number("after_sequence"); ok && f > 0 {
		after = int(f)
	}
	limit := r.limit(100, 500)
	rest := rn.events[min(after, len(rn.events)):]
	page := rest[:min(limit, len(rest))]
	if r.boolean("tail") {
		page = rest[max(0, len(rest)-limit):]
	}
	next := after
	if len(page) > 0 {
		next = page[len(page)-1].Sequence
	}
	return map[string]any{
		"run_id": rn.ID, "run_status": rn.Status, "events": page, "count": len(page),
		"next_after_sequence": next, "latest_sequence": len(rn.events),
		"has_more": next < len(rn.events),
	}, nil
}
