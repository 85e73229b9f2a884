package demo

import (
	"slices"
	"time"
)

// outcome is one finished task's telemetry for its agent profile.
type outcome struct {
	TaskID          string    `json:"task_id"`
	AgentProfileID  string    `json:"agent_profile_id"`
	Outcome         string    `json:"outcome"`
	CostUSD         float64   `json:"cost_usd"`
	DurationSeconds int       `json:"duration_seconds"`
	ToolCalls       int       `json:"tool_calls"`
	Summary         string    `json:"summary"`
	FinishedAt      time.Time `json:"finished_at"`
}

func genOutcomes(w *workspace, g *gen) {
	for _, p := range w.profiles {
		for range g.between(4, 8) {
			o := &outcome{
				TaskID: w.newID("tsk"), AgentProfileID: p.ID, Outcome: g.pick("success", "success", "success", "failure", "cancelled"),
				CostUSD: g.usd(0.1, 6), DurationSeconds: g.between(40, 3600), ToolCalls: g.between(3, 60),
				FinishedAt: g.ago(2*time.Hour, 14*24*time.Hour),
			}
			o.Summary = map[string]string{
				"success": "Finished within budget; changes merged.", "failure": "Stopped after repeated test failures.",
				"cancelled": "Cancelled by a workspace member.",
			}[o.Outcome]
			w.outcomes = append(w.outcomes, o)
		}
	}
	slices.SortStableFunc(w.outcomes, func(a, b *outcome) int { return b.FinishedAt.Compare(a.FinishedAt) })
}

func baselineTools() map[string]tool {
	return map[string]tool{
		"delegate_subtask":           {required: []string{"agent_profile_id", "prompt"}, handle: delegateSubtask},
		"get_subtask_result":         {required: []string{"subtask_id"}, handle: getSubtaskResult},
		"cancel_subtask":             {required: []string{"subtask_id"}, handle: cancelSubtask},
		"outcome.recent_for_profile": {handle: outcomeRecent},
	}
}

// delegateSubtask starts a child task of the session's task.
func delegateSubtask(w *workspace, r *request) (any, error) {
	if r.TaskID == "" {
		return nil, refuse("delegate_subtask needs a task session to delegate from; coordinators start work with task.create")
	}
	prof := w.profileByID(r.str("agent_profile_id"))
	if prof == nil {
		return nil, notFound("agent profile", r.str("agent_profile_id"))
	}
	budget, clamped, err := w.clampBudget(r, "max_cost_usd", 2)
	if err != nil {
		return nil, err
	}
	t := w.launch(r, w.projectFor(r.TaskID).ID, titleFrom(r.str("title"), r.str("prompt")), prof.ID, "delegation", budget)
	t.ParentTaskID = r.TaskID
	return map[string]any{"subtask": t.view(r.now), "subtask_id": t.ID, "budget_clamped": clamped}, nil
}

// subtaskOf returns the delegated child id of the session's task; other
// tasks, including children of other tasks, are refused.
func (w *workspace) subtaskOf(r *request) (*task, error) {
	id := r.str("subtask_id")
	t := w.taskByID(id)
	switch {
	case t == nil:
		return nil, notFound("subtask", id)
	case t.ParentTaskID == "":
		return nil, refuse("task %s was not delegated by a task; read it with tasks.get instead", id)
	case t.ParentTaskID != r.TaskID:
		return nil, refuse("subtask %s was delegated by task %s, not by this task; only the delegating task can use it", id, t.ParentTaskID)
	}
	return t, nil
}

func getSubtaskResult(w *workspace, r *request) (any, error) {
	t, err := w.subtaskOf(r)
	if err != nil {
		return nil, err
	}
	v := t.view(r.now)
	return map[string]any{
		"subtask_id": t.ID, "status": t.Status, "done": terminal(t.Status), "result": v.Result, "error": v.Error,
		"cost_usd": v.CostUSD, "duration_seconds": v.DurationSeconds, "last_event": v.LastEvent,
	}, nil
}

func cancelSubtask(w *workspace, r *request) (any, error) {
	t, err := w.subtaskOf(r)
	if err != nil {
		return nil, err
	}
	if err := w.cancelTask(r, t, r.str("reason")); err != nil {
		return nil, err
	}
	return map[string]any{"subtask": t.view(r.now)}, nil
}

// outcomeRecent reads telemetry for the profile of the session's task; a
// task the demo does not know runs under the workspace default profile.
func outcomeRecent(w *workspace, r *request) (any, error) {
	prof := w.defaultProfile().ID
	if t := w.taskByID(r.TaskID); t != nil {
		prof = t.AgentProfileID
	}
	items := filter(w.outcomes, r.limit(10, 50), func(o *outcome) bool { return o.AgentProfileID == prof })
	wins, cost := 0, 0.0
	for _, o := range items {
		if o.Outcome == "success" {
			wins++
		}
		cost += o.CostUSD
	}
	summary := map[string]any{"success_rate": 0.0, "average_cost_usd": 0.0}
	if len(items) > 0 {
		summary = map[string]any{"success_rate": cents(float64(wins) / float64(len(items))), "average_cost_usd": cents(cost / float64(len(items)))}
	}
	return map[string]any{"agent_profile_id": prof, "outcomes": items, "count": len(items), "summary": summary}, nil
}
