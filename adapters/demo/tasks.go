package demo

import (
	"strings"
	"time"
)

// task is an agent task. Subtasks made by delegate_subtask carry the
// delegating task in ParentTaskID.
type task struct {
	ID              string         `json:"id"`
	ProjectID       string         `json:"project_id"`
	Title           string         `json:"title"`
	Status          string         `json:"status"`
	AgentProfileID  string         `json:"agent_profile_id"`
	ParentTaskID    string         `json:"parent_task_id,omitempty"`
	Origin          string         `json:"origin"`
	CostUSD         float64        `json:"cost_usd"`
	BudgetUSD       float64        `json:"budget_usd"`
	DurationSeconds int64          `json:"duration_seconds"`
	CreatedAt       time.Time      `json:"created_at"`
	StartedAt       *time.Time     `json:"started_at"`
	FinishedAt      *time.Time     `json:"finished_at"`
	LastEvent       *lastEvent     `json:"last_event"`
	RunID           string         `json:"run_id"`
	WaitingOn       string         `json:"waiting_on_approval_id,omitempty"`
	Result          string         `json:"result,omitempty"`
	Error           string         `json:"error,omitempty"`
	CancelReason    string         `json:"cancel_reason,omitempty"`
	Interventions   []intervention `json:"interventions,omitempty"`
}

type lastEvent struct {
	Type    string    `json:"type"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// intervention is a coordinator message delivered into a running task with
// a SYSTEM origin and a [coordinator] prefix (task.intervene, docs/requirements.md#tiers).
type intervention struct {
	ID      string    `json:"id"`
	Origin  string    `json:"origin"`
	Message string    `json:"message"`
	From    string    `json:"from,omitempty"`
	At      time.Time `json:"at"`
}

// Task statuses that count as active (tasks.list_active): a task paused at
// a gate is still active.
func (t *task) active() bool {
	return t.Status == "running" || t.Status == "queued" || t.Status == "waiting"
}

// view returns a copy whose duration is current for tasks still running.
func (t *task) view(now time.Time) task {
	v := *t
	if t.StartedAt != nil && t.FinishedAt == nil {
		v.DurationSeconds = int64(now.Sub(*t.StartedAt) / time.Second)
	}
	return v
}

func (w *workspace) taskByID(id string) *task {
	if id == "" {
		return nil
	}
	return find(w.tasks, func(t *task) bool { return t.ID == id })
}

var taskTitles = []string{
	"Fix flaky checkout test", "Add retry to payment webhook", "Migrate invoices to new schema",
	"Summarise last week's support tickets", "Upgrade Node runtime to 22", "Investigate slow orders query",
	"Draft release notes for v3.8", "Triage new GitHub issues", "Backfill missing ERP records",
	"Add dark mode to dashboard", "Rotate stale feature flags", "Write onboarding docs for API",
}

var agentEvents = []struct{ typ, msg string }{
	{"tool_call", "memory.search \"checkout timeout\""}, {"tool_call", "issue.get"},
	{"message", "Reading the failing test and its fixtures."}, {"tool_call", "app.files.get src/routes/checkout.ts"},
	{"cost_update", "Spent so far is within budget."}, {"message", "Found a race between cart save and payment intent."},
	{"tool_call", "run.events"}, {"message", "Preparing a patch with a regression test."},
}

// genTasks seeds tasks in every state, each with its agent run. The first
// running task gets a long event log so run.events has pages to turn.
func genTasks(w *workspace, g *gen) {
	statuses := []string{"running", "running", "running", "queued", "queued", "waiting", "waiting", "waiting", "waiting", "completed", "completed", "failed", "cancelled"}
	for i, status := range statuses {
		created := g.ago(2*time.Hour, 72*time.Hour) // finished tasks ran a while ago
		if status == "running" || status == "queued" || status == "waiting" {
			created = g.ago(3*time.Minute, 90*time.Minute)
		}
		t := &task{
			ID: w.newID("tsk"), ProjectID: w.projects[i%len(w.projects)].ID, Title: taskTitles[(i+g.rng.IntN(3))%len(taskTitles)],
			Status: status, AgentProfileID: w.profiles[g.rng.IntN(len(w.profiles))].ID, Origin: g.pick("user", "workflow", "backlog", "coordinator"),
			BudgetUSD: g.pick2(5, 10, 20), CreatedAt: created,
		}
		w.tasks = append(w.tasks, t)
		events := g.between(4, 12)
		if i == 0 {
			events = 240
		}
		seedAgentRun(w, g, t, events)
	}
	// Two delegated children of the first running task.
	parent := w.tasks[0]
	for _, status := range []string{"completed", "running"} {
		child := &task{
			ID: w.newID("tsk"), ProjectID: parent.ProjectID, Title: "Subtask: " + g.pick(taskTitles...), Status: status,
			AgentProfileID: w.profiles[1].ID, ParentTaskID: parent.ID, Origin: "delegation", BudgetUSD: 2, CreatedAt: g.ago(5*time.Minute, 50*time.Minute),
		}
		w.tasks = append(w.tasks, child)
		seedAgentRun(w, g, child, g.between(3, 6))
	}
}

// pick2 returns one of the numbers.
func (g *gen) pick2(xs ...float64) float64 { return xs[g.rng.IntN(len(xs))] }

// seedAgentRun gives t an agent run with n events consistent with t.Status.
func seedAgentRun(w *workspace, g *gen, t *task, n int) {
	rn := w.newRun("agent", t.Status, t.Origin, t.CreatedAt)
	rn.TaskID, rn.ProjectID = t.ID, t.ProjectID
	t.RunID = rn.ID
	if t.Status == "queued" {
		rn.StartedAt = nil
		w.log(rn, "task_queued", "Waiting for a free runner slot.", t.CreatedAt, nil)
		return
	}
	at := t.CreatedAt.Add(time.Duration(g.between(2, 40)) * time.Second)
	t.StartedAt, rn.StartedAt = ptr(at), ptr(at)
	w.log(rn, "task_started", "Agent started on "+t.Title+".", at, nil)
	step := min(g.base.Sub(at)/time.Duration(n+1), 2*time.Minute)
	for i := 1; i < n-1; i++ {
		e := agentEvents[(i+g.rng.IntN(2))%len(agentEvents)]
		w.log(rn, e.typ, e.msg, at.Add(time.Duration(i)*step), map[string]any{"step": i})
	}
	t.CostUSD = g.usd(0.05, t.BudgetUSD*0.8)
	rn.CostUSD = t.CostUSD
	endTask(w, t, rn, at.Add(time.Duration(n-1)*step))
}

// endTask writes the final event of a seeded task for its status.
func endTask(w *workspace, t *task, rn *run, at time.Time) {
	switch t.Status {
	case "completed":
		t.Result = "Done: " + strings.ToLower(t.Title) + ". Opened a pull request with the change and a test."
		finishTask(w, t, rn, "completed", "task_completed", t.Result, at)
	case "failed":
		t.Error = "Tests still failing after 3 attempts: TypeError in src/cart/total.ts:42."
		finishTask(w, t, rn, "failed", "task_failed", t.Error, at)
	case "cancelled":
		t.CancelReason = "Superseded by a newer task."
		finishTask(w, t, rn, "cancelled", "task_cancelled", t.CancelReason, at)
	default:
		w.log(rn, "message", "Working: "+t.Title+".", at, nil)
	}
}

func finishTask(w *workspace, t *task, rn *run, status, typ, msg string, at time.Time) {
	t.Status = status
	t.FinishedAt = ptr(at)
	if t.StartedAt != nil {
		t.DurationSeconds = int64(at.Sub(*t.StartedAt) / time.Second)
	}
	finish(rn, status, at)
	w.log(rn, typ, msg, at, nil)
}

// launch creates a queued task with its agent run; used by every tool that
// starts work (task.create, delegate_subtask, scaffold task-spawns).
func (w *workspace) launch(r *request, projectID, title, profileID, origin string, budget float64) *task {
	t := &task{
		ID: w.newID("tsk"), ProjectID: projectID, Title: title, Status: "queued", AgentProfileID: profileID,
		Origin: origin, BudgetUSD: budget, CreatedAt: r.now,
	}
	w.tasks = append(w.tasks, t)
	rn := w.newRun("agent", "queued", origin, r.now)
	rn.TaskID, rn.ProjectID = t.ID, projectID
	t.RunID = rn.ID
	w.log(rn, "task_queued", "Queued by "+actorOr(r.Actor)+".", r.now, nil)
	return t
}

func actorOr(actor string) string {
	if actor == "" {
		return "an agent"
	}
	return actor
}

// titleFrom shortens a prompt into a task title.
func titleFrom(title, prompt string) string {
	if title != "" {
		return title
	}
	first, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	if len(first) > 72 {
		first = strings.TrimSpace(first[:69]) + "..."
	}
	return first
}

func taskTools() map[string]tool {
	return map[string]tool{
		"tasks.list_active": {handle: tasksListActive},
		"tasks.get":         {required: []string{"task_id"}, handle: tasksGet},
		"task.create":       {required: []string{"project_id", "prompt"}, handle: taskCreate},
		"task.cancel":       {required: []string{"task_id"}, handle: taskCancel},
		"task.intervene":    {required: []string{"task_id", "message"}, handle: taskIntervene},
	}
}

func tasksListActive(w *workspace, r *request) (any, error) {
	pid := r.str("project_id")
	active := filter(w.tasks, r.limit(50, 100), func(t *task) bool { return t.active() && (pid == "" || t.ProjectID == pid) })
	views := make([]task, len(active))
	for i, t := range active {
		views[i] = t.view(r.now)
	}
	return list("tasks", views), nil
}

func tasksGet(w *workspace, r *request) (any, error) {
	id := r.str("task_id")
	t := w.taskByID(id)
	if t == nil {
		return nil, notFound("task", id)
	}
	return map[string]any{"task": t.view(r.now)}, nil
}

// maxTaskBudget is the demo's per-task clamp from the service floor.
const maxTaskBudget = 50.0

func taskCreate(w *workspace, r *request) (any, error) {
	p := w.projectByID(r.str("project_id"))
	if p == nil {
		return nil, notFound("project", r.str("project_id"))
	}
	prof, err := w.profileOrDefault(r.str("agent_profile_id"))
	if err != nil {
		return nil, err
	}
	budget, clamped, err := w.clampBudget(r, "budget_usd", 5)
	if err != nil {
		return nil, err
	}
	t := w.launch(r, p.ID, titleFrom(r.str("title"), r.str("prompt")), prof.ID, "coordinator", budget)
	return map[string]any{"task": t.view(r.now), "run_id": t.RunID, "budget_clamped": clamped}, nil
}

func (w *workspace) profileOrDefault(id string) (*profile, error) {
	if id == "" {
		return w.defaultProfile(), nil
	}
	if p := w.profileByID(id); p != nil {
		return p, nil
	}
	return nil, notFound("agent profile", id)
}

// clampBudget reads a budget argument: it must be positive and fit in the
// workspace's remaining budget; above maxTaskBudget it is clamped.
func (w *workspace) clampBudget(r *request, arg string, def float64) (float64, bool, error) {
	budget, ok := r.number(arg)
	if !ok {
		budget = def
	}
	if budget <= 0 {
		return 0, false, refuse("%s must be greater than 0", arg)
	}
	if budget > w.info.BudgetRemaining {
		// The remaining budget itself is not named: workspace.info hides it
		// from principals without workspace.budget.view, and this message
		// reaches the same principals.
		return 0, false, refuse("%s %.2f exceeds the workspace's remaining budget; ask a workspace admin to raise the budget or use a smaller cap", arg, budget)
	}
	if budget > maxTaskBudget {
		return maxTaskBudget, true, nil
	}
	return cents(budget), false, nil
}

func taskCancel(w *workspace, r *request) (any, error) {
	t := w.taskByID(r.str("task_id"))
	if t == nil {
		return nil, notFound("task", r.str("task_id"))
	}
	if err := w.cancelTask(r, t, r.str("reason")); err != nil {
		return nil, err
	}
	return map[string]any{"task": t.view(r.now)}, nil
}

// cancelTask stops an active task and its run; finished tasks are refused.
func (w *workspace) cancelTask(r *request, t *task, reason string) error {
	if !t.active() {
		return refuse("task %s is already %s; only running, waiting or queued tasks can be cancelled", t.ID, t.Status)
	}
	if reason == "" {
		reason = "Cancelled by " + actorOr(r.Actor) + "."
	}
	t.CancelReason, t.WaitingOn = reason, ""
	if rn := w.runByID(t.RunID); rn != nil {
		finishTask(w, t, rn, "cancelled", "task_cancelled", reason, r.now)
	}
	return nil
}

// taskIntervene delivers a coordinator message into a running task, with a
// SYSTEM origin and a [coordinator] prefix (task.intervene, docs/requirements.md#tiers).
func taskIntervene(w *workspace, r *request) (any, error) {
	t := w.taskByID(r.str("task_id"))
	if t == nil {
		return nil, notFound("task", r.str("task_id"))
	}
	if t.Status != "running" && t.Status != "waiting" {
		return nil, refuse("task %s is %s and has no running agent to receive a message; intervene in a running task", t.ID, t.Status)
	}
	iv := intervention{ID: w.newID("ivn"), Origin: "SYSTEM", Message: "[coordinator] " + r.str("message"), From: r.Actor, At: r.now}
	t.Interventions = append(t.Interventions, iv)
	if rn := w.runByID(t.RunID); rn != nil {
		w.log(rn, "intervention", iv.Message, r.now, map[string]any{"origin": iv.Origin, "intervention_id": iv.ID})
	}
	return map[string]any{"task_id": t.ID, "intervention": iv, "delivered": true}, nil
}
