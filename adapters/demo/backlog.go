package demo

import "time"

type backlogItem struct {
	ID          string    `json:"id"`
	ProjectID   string    `json:"project_id"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	State       string    `json:"state"` // open, planned, in_progress, done
	Priority    string    `json:"priority"`
	Source      string    `json:"source"`
	PriorRunIDs []string  `json:"prior_run_ids"`
	Routing     *routing  `json:"routing"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// routing is the autonomous backlog's decision about who works an item.
type routing struct {
	Decision       string    `json:"decision"` // auto_run, needs_human, deferred
	AgentProfileID string    `json:"agent_profile_id,omitempty"`
	Reason         string    `json:"reason"`
	DecidedAt      time.Time `json:"decided_at"`
}

var backlogSeeds = []struct{ title, state, priority string }{
	{"Paginate the orders API", "open", "medium"},
	{"Alert when the nightly sync loads fewer rows than yesterday", "planned", "high"},
	{"Remove the legacy coupon service", "in_progress", "low"},
	{"Translate checkout emails to German", "open", "medium"},
	{"Cache product images at the edge", "done", "low"},
	{"Flaky test: cart total with mixed currencies", "in_progress", "high"},
}

func genBacklog(w *workspace, g *gen) {
	agentRuns := filter(w.runs, 0, func(rn *run) bool { return rn.Kind == "agent" && terminal(rn.Status) })
	for i, seed := range backlogSeeds {
		b := &backlogItem{
			ID: w.newID("bli"), ProjectID: w.projects[i%len(w.projects)].ID, Title: seed.title, State: seed.state,
			Priority: seed.priority, Source: g.pick("issue", "agent", "user"), PriorRunIDs: []string{},
			Description: "Raised from " + g.pick("a support conversation", "a failed run", "the weekly review") + ".",
			CreatedAt:   g.ago(2*24*time.Hour, 40*24*time.Hour),
		}
		b.UpdatedAt = b.CreatedAt.Add(time.Duration(g.between(1, 30)) * time.Hour)
		if seed.state != "open" && len(agentRuns) > 0 {
			b.PriorRunIDs = append(b.PriorRunIDs, agentRuns[i%len(agentRuns)].ID)
			b.Routing = &routing{Decision: g.pick("auto_run", "needs_human"), AgentProfileID: w.profiles[1+i%(len(w.profiles)-1)].ID,
				Reason: "Matches the profile's past successes on " + w.projects[i%len(w.projects)].Name + ".", DecidedAt: b.UpdatedAt}
		}
		w.backlog = append(w.backlog, b)
	}
}

func backlogTools() map[string]tool {
	return map[string]tool{
		"backlog.list": {handle: backlogList},
		"backlog.get":  {required: []string{"backlog_item_id"}, handle: backlogGet},
	}
}

func backlogList(w *workspace, r *request) (any, error) {
	pid, state := r.str("project_id"), r.str("state")
	return list("items", filter(w.backlog, r.limit(50, 100), func(b *backlogItem) bool {
		return (pid == "" || b.ProjectID == pid) && (state == "" || b.State == state)
	})), nil
}

func backlogGet(w *workspace, r *request) (any, error) {
	id := r.str("backlog_item_id")
	b := find(w.backlog, func(b *backlogItem) bool { return b.ID == id })
	if b == nil {
		return nil, notFound("backlog item", id)
	}
	runs := []*run{}
	for _, rid := range b.PriorRunIDs {
		if rn := w.runByID(rid); rn != nil {
			runs = append(runs, rn)
		}
	}
	return map[string]any{"item": b, "prior_runs": runs, "routing": b.Routing}, nil
}
