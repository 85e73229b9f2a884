package demo

import (
	"slices"
	"strings"
	"time"
)

type memory struct {
	ID        string    `json:"id"`
	Scope     string    `json:"scope"`
	ProjectID string    `json:"project_id,omitempty"`
	Content   string    `json:"content"`
	Tags      []string  `json:"tags"`
	Source    string    `json:"source"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// memoryReview is a proposal waiting for a person; it never changes a
// memory by itself (memory.propose_review, docs/requirements.md#baseline).
type memoryReview struct {
	ID         string    `json:"id"`
	Action     string    `json:"action"`
	MemoryID   string    `json:"memory_id,omitempty"`
	Content    string    `json:"content,omitempty"`
	ProjectID  string    `json:"project_id,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Status     string    `json:"status"`
	ProposedBy string    `json:"proposed_by,omitempty"`
	TaskID     string    `json:"task_id,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

var memorySeeds = []struct {
	project bool
	content string
	tags    []string
}{
	{false, "Deploys to production happen only Tuesday to Thursday; Friday deploys need an owner's sign-off.", []string{"deploy", "policy"}},
	{false, "The on-call rotation is in the #ops channel topic; page via PagerDuty for P1 only.", []string{"ops", "on-call"}},
	{true, "Checkout timeouts were caused by the payment provider's sandbox; use the mock in tests.", []string{"checkout", "testing"}},
	{true, "Invoice numbers must stay gapless per fiscal year; never delete invoices, credit them.", []string{"billing", "compliance"}},
	{true, "The ERP export lands in the assets bucket at 02:00 UTC; the pipeline starts at 02:30.", []string{"pipeline", "schedule"}},
	{false, "Customer-facing replies are signed 'The Support Team', never with an agent's name.", []string{"support", "tone"}},
	{true, "Run database migrations before deploying the customer portal; the app checks the schema version at start.", []string{"deploy", "migrations"}},
}

func genMemories(w *workspace, g *gen) {
	for i, seed := range memorySeeds {
		m := &memory{ID: w.newUUID("mem"), Scope: "workspace", Content: seed.content, Tags: seed.tags, Source: g.pick("user", "task"), CreatedAt: g.ago(24*time.Hour, 90*24*time.Hour)}
		if seed.project {
			m.Scope, m.ProjectID = "project", w.projects[i%len(w.projects)].ID
		}
		m.UpdatedAt = m.CreatedAt.Add(time.Duration(g.between(0, 72)) * time.Hour)
		if m.UpdatedAt.After(g.base) {
			m.UpdatedAt = g.base
		}
		w.memories = append(w.memories, m)
	}
}

func memoryTools() map[string]tool {
	return map[string]tool{
		"memory.search":         {required: []string{"query"}, handle: memorySearch},
		"memory.get":            {required: []string{"memory_id"}, handle: memoryGet},
		"memory.list_recent":    {handle: memoryListRecent},
		"memory.propose_review": {required: []string{"action"}, handle: memoryProposeReview},
	}
}

type memoryHit struct {
	*memory
	Score int `json:"score"`
}

// memorySearch requires every query term in a memory's text or tags and
// ranks by how often the terms occur.
func memorySearch(w *workspace, r *request) (any, error) {
	terms := strings.Fields(strings.ToLower(r.str("query")))
	pid := r.str("project_id")
	hits := []memoryHit{}
	for _, m := range w.memories {
		if pid != "" && m.ProjectID != pid {
			continue
		}
		if score := termScore(strings.ToLower(m.Content+" "+strings.Join(m.Tags, " ")), terms); score > 0 {
			hits = append(hits, memoryHit{memory: m, Score: score})
		}
	}
	slices.SortStableFunc(hits, func(a, b memoryHit) int { return b.Score - a.Score })
	return list("memories", hits[:min(len(hits), r.limit(10, 50))]), nil
}

// termScore is the total count of terms in text, or 0 unless every term
// occurs at least once.
func termScore(text string, terms []string) int {
	score := 0
	for _, t := range terms {
		n := strings.Count(text, t)
		if n == 0 {
			return 0
		}
		score += n
	}
	return score
}

func (w *workspace) memoryByID(id string) *memory {
	return find(w.memories, func(m *memory) bool { return strings.EqualFold(m.ID, id) })
}

func memoryGet(w *workspace, r *request) (any, error) {
	m := w.memoryByID(r.str("memory_id"))
	if m == nil {
		return nil, notFound("memory", r.str("memory_id"))
	}
	return map[string]any{"memory": m}, nil
}

func memoryListRecent(w *workspace, r *request) (any, error) {
	pid := r.str("project_id")
	recent := filter(w.memories, 0, func(m *memory) bool { return pid == "" || m.ProjectID == pid })
	slices.SortStableFunc(recent, func(a, b *memory) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	return list("memories", recent[:min(len(recent), r.limit(10, 50))]), nil
}

// memoryProposeReview queues a proposal; memories stay unchanged.
func memoryProposeReview(w *workspace, r *request) (any, error) {
	if err := w.checkMemoryProposal(r); err != nil {
		return nil, err
	}
	rv := &memoryReview{
		ID: w.newID("mrv"), Action: r.str("action"), MemoryID: r.str("memory_id"), Content: r.str("content"),
		ProjectID: r.str("project_id"), Reason: r.str("reason"), Status: "pending_review", ProposedBy: r.Actor,
		TaskID: r.TaskID, CreatedAt: r.now,
	}
	w.reviews = append(w.reviews, rv)
	return map[string]any{"review": rv, "note": "Nothing changes until a person accepts the proposal."}, nil
}

func (w *workspace) checkMemoryProposal(r *request) error {
	action, id := r.str("action"), r.str("memory_id")
	switch action {
	case "create":
		if r.str("content") == "" {
			return refuse("a create proposal needs content")
		}
	case "update", "delete":
		if id == "" {
			return refuse("an %s proposal needs memory_id; find it with memory.search", action)
		}
		if w.memoryByID(id) == nil {
			return notFound("memory", id)
		}
		if action == "update" && r.str("content") == "" {
			return refuse("an update proposal needs the new content")
		}
	default:
		return refuse("action must be create, update or delete, not %q", action)
	}
	if pid := r.str("project_id"); pid != "" && w.projectByID(pid) == nil {
		return notFound("project", pid)
	}
	return nil
}
