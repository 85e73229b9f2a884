package demo

import (
	"fmt"
	"strings"
	"time"
)

// wsInfo is what workspace.info shows (docs/requirements.md#tiers: slug, name, member count,
// budget remaining, plan tier). budget_remaining is a top-level field so
// the gateway's redaction obligation can remove it.
type wsInfo struct {
	WorkspaceID     string    `json:"workspace_id"`
	Slug            string    `json:"slug"`
	Name            string    `json:"name"`
	MemberCount     int       `json:"member_count"`
	BudgetRemaining float64   `json:"budget_remaining"`
	BudgetCurrency  string    `json:"budget_currency"`
	BudgetResetsAt  time.Time `json:"budget_resets_at"`
	PlanTier        string    `json:"plan_tier"`
	Region          string    `json:"region"`
	CreatedAt       time.Time `json:"created_at"`
}

type project struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Slug          string `json:"slug"`
	Description   string `json:"description"`
	GitProvider   string `json:"git_provider"`
	Repository    string `json:"repository"`
	DefaultBranch string `json:"default_branch"`
	// IssueTracker is set when issues live outside the git provider
	// (docs/requirements.md#issue-source: issues resolve from issue_tracker ?? git_provider).
	IssueTracker *string    `json:"issue_tracker"`
	LastSync     *repoSync  `json:"last_sync"`
	PullRequests []*pullReq `json:"pull_requests,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
}

// issueProvider is where the project's issues live.
func (p *project) issueProvider() string {
	if p.IssueTracker != nil {
		return *p.IssueTracker
	}
	return p.GitProvider
}

type repoSync struct {
	ID          string    `json:"id"`
	Direction   string    `json:"direction"`
	Status      string    `json:"status"`
	Branch      string    `json:"branch"`
	RequestedAt time.Time `json:"requested_at"`
	RequestedBy string    `json:"requested_by,omitempty"`
}

type runner struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	Region          string    `json:"region"`
	Status          string    `json:"status"`
	Capacity        int       `json:"capacity"`
	Busy            int       `json:"busy"`
	Labels          []string  `json:"labels"`
	Version         string    `json:"version"`
	LastHeartbeatAt time.Time `json:"last_heartbeat_at"`
}

// resource has exactly the three fields docs/requirements.md#no-secrets allows resources.list to
// show. The demo stores nothing else, so no secret can leak by mistake.
type resource struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Status string `json:"status"`
}

// supportKinds are the resource kinds that carry support conversations.
var supportKinds = map[string]bool{"chatwoot": true, "intercom": true}

var (
	companyFirst = []string{"Northwind", "Bluebird", "Granite", "Lumen", "Harbor", "Juniper", "Kestrel", "Copperleaf", "Atlas", "Meridian"}
	companyLast  = []string{"Labs", "Logistics", "Health", "Studio", "Analytics", "Foods", "Energy", "Robotics", "Travel", "Finance"}
)

func genInfo(w *workspace, g *gen) {
	name := g.pick(companyFirst...) + " " + g.pick(companyLast...)
	slug := slugify(w.id)
	if slug == "" {
		slug = slugify(name)
	}
	w.info = wsInfo{
		WorkspaceID: w.id, Slug: slug, Name: name,
		MemberCount:     g.between(3, 42),
		BudgetRemaining: g.usd(120, 4800),
		BudgetCurrency:  "USD",
		BudgetResetsAt:  firstOfNextMonth(g.base),
		PlanTier:        g.pick("free", "team", "business", "enterprise"),
		Region:          g.pick("eu-central-1", "eu-west-1", "us-east-1"),
		CreatedAt:       g.ago(200*24*time.Hour, 700*24*time.Hour),
	}
	if w.described != nil { // after the draws: the other records stay as generated
		w.info.describe(*w.described)
	}
}

// describe sets what the gateway's store says of the workspace.
func (i *wsInfo) describe(f WorkspaceFacts) {
	i.Name, i.Slug, i.PlanTier, i.MemberCount = f.Name, f.Slug, f.PlanTier, f.MemberCount
}

func firstOfNextMonth(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
}

var projectSeeds = []struct{ name, desc string }{
	{"Storefront", "Customer-facing web shop and checkout."},
	{"Billing Service", "Invoices, dunning and payment provider webhooks."},
	{"Data Pipeline", "Nightly ingestion from the ERP into the warehouse."},
	{"Mobile App", "iOS and Android companion app."},
	{"Support Automation", "Triage and answer drafting for the support inbox."},
	{"Marketing Site", "Static marketing pages and blog."},
}

func genProjects(w *workspace, g *gen) {
	n := g.between(3, 4)
	start := g.rng.IntN(len(projectSeeds))
	for i := range n {
		seed := projectSeeds[(start+i)%len(projectSeeds)]
		p := &project{
			ID: w.newID("prj"), Name: seed.name, Slug: slugify(seed.name), Description: seed.desc,
			GitProvider:   g.pick("github", "gitlab", "bitbucket", "forgejo"),
			DefaultBranch: g.pick("main", "main", "develop"),
			CreatedAt:     g.ago(30*24*time.Hour, 180*24*time.Hour),
		}
		p.Repository = w.info.Slug + "/" + p.Slug
		if g.chance(0.4) {
			p.IssueTracker = ptr(g.pick("linear", "notion"))
		}
		w.projects = append(w.projects, p)
	}
}

func (w *workspace) projectByID(id string) *project {
	return find(w.projects, func(p *project) bool { return p.ID == id })
}

// projectFor returns the project of the session's task when the demo knows
// that task, else the workspace's first project (tasks minted by the gateway
// are not demo records).
func (w *workspace) projectFor(taskID string) *project {
	if t := w.taskByID(taskID); t != nil {
		if p := w.projectByID(t.ProjectID); p != nil {
			return p
		}
	}
	return w.projects[0]
}

func genRunners(w *workspace, g *gen) {
	for i := range g.between(2, 4) {
		r := &runner{
			ID: w.newID("rnr"), Name: fmt.Sprintf("runner-%s-%d", w.info.Region, i+1), Region: w.info.Region,
			Status: g.pick("online", "online", "online", "draining", "offline"), Labels: []string{"linux", "x86_64"},
			Version: "2.14." + g.pick("0", "1", "3"), LastHeartbeatAt: g.ago(5*time.Second, 50*time.Second),
		}
		r.Capacity = 4 << g.rng.IntN(3) // 4, 8 or 16 slots
		if r.Status == "online" {
			r.Busy = g.between(0, r.Capacity)
		}
		if r.Status == "offline" {
			r.LastHeartbeatAt = g.ago(2*time.Hour, 30*time.Hour)
		}
		w.runners = append(w.runners, r)
	}
}

func genResources(w *workspace, g *gen) {
	seeds := []resource{
		{Kind: "postgres", Name: "orders-db"}, {Kind: "redis", Name: "session-cache"},
		{Kind: "s3", Name: "assets-bucket"}, {Kind: "smtp", Name: "transactional-mail"},
		{Kind: "chatwoot", Name: "support-inbox"}, {Kind: "intercom", Name: "intercom-eu"},
		{Kind: "http_api", Name: "erp-api"},
	}
	for _, r := range seeds {
		r.Status = g.pick("connected", "connected", "connected", "degraded")
		w.resources = append(w.resources, &r)
	}
}

func platformTools() map[string]tool {
	return map[string]tool{
		"workspace.info":    {handle: workspaceInfo},
		"projects.list":     {handle: projectsList},
		"project.get":       {required: []string{"project_id"}, handle: projectGet},
		"runners.status":    {handle: runnersStatus},
		"resources.list":    {handle: resourcesList},
		"repo_sync.trigger": {required: []string{"project_id", "direction"}, handle: repoSyncTrigger},
	}
}

func workspaceInfo(w *workspace, r *request) (any, error) {
	active := filter(w.tasks, 0, func(t *task) bool { return t.active() })
	return map[string]any{
		"workspace_id": w.info.WorkspaceID, "slug": w.info.Slug, "name": w.info.Name,
		"member_count": w.info.MemberCount, "budget_remaining": w.info.BudgetRemaining,
		"budget_currency": w.info.BudgetCurrency, "budget_resets_at": w.info.BudgetResetsAt,
		"plan_tier": w.info.PlanTier, "region": w.info.Region, "created_at": w.info.CreatedAt,
		"project_count": len(w.projects), "active_task_count": len(active), "app_count": len(w.apps),
	}, nil
}

func projectsList(w *workspace, r *request) (any, error) {
	return list("projects", filter(w.projects, r.limit(50, 100), func(*project) bool { return true })), nil
}

func projectGet(w *workspace, r *request) (any, error) {
	id := r.str("project_id")
	p := w.projectByID(id)
	if p == nil {
		return nil, notFound("project", id)
	}
	in := func(pid string) bool { return pid == id }
	return map[string]any{
		"project":            p,
		"issue_provider":     p.issueProvider(),
		"active_tasks":       len(filter(w.tasks, 0, func(t *task) bool { return in(t.ProjectID) && t.active() })),
		"apps":               len(filter(w.apps, 0, func(a *app) bool { return in(a.ProjectID) })),
		"workflows":          len(filter(w.workflows, 0, func(f *workflow) bool { return in(f.ProjectID) })),
		"open_issues":        len(filter(w.issues, 0, func(i *issue) bool { return in(i.ProjectID) && i.open() })),
		"open_backlog_items": len(filter(w.backlog, 0, func(b *backlogItem) bool { return in(b.ProjectID) && b.State != "done" })),
	}, nil
}

func runnersStatus(w *workspace, r *request) (any, error) {
	capacity, busy, online := 0, 0, 0
	for _, rn := range w.runners {
		if rn.Status == "online" {
			online++
			capacity += rn.Capacity
			busy += rn.Busy
		}
	}
	queued := len(filter(w.tasks, 0, func(t *task) bool { return t.Status == "queued" }))
	return map[string]any{
		"runners": w.runners, "online": online, "total_capacity": capacity,
		"busy_slots": busy, "available_slots": capacity - busy, "queued_tasks": queued,
	}, nil
}

// resourcesList answers kind, name and status only (docs/requirements.md#no-secrets:
// never connection strings, passwords or tokens).
func resourcesList(w *workspace, r *request) (any, error) {
	kind := strings.ToLower(r.str("kind"))
	return list("resources", filter(w.resources, 0, func(res *resource) bool { return kind == "" || res.Kind == kind })), nil
}

func (w *workspace) resourceByName(name string) *resource {
	return find(w.resources, func(res *resource) bool { return res.Name == name })
}

func repoSyncTrigger(w *workspace, r *request) (any, error) {
	id, dir := r.str("project_id"), r.str("direction")
	p := w.projectByID(id)
	if p == nil {
		return nil, notFound("project", id)
	}
	if dir != "push" && dir != "pull" {
		return nil, refuse("direction must be push or pull, not %q", dir)
	}
	if p.LastSync != nil && p.LastSync.Status == "queued" {
		return nil, refuse("a %s sync of project %s is already queued (%s); wait for it to finish", p.LastSync.Direction, id, p.LastSync.ID)
	}
	p.LastSync = &repoSync{ID: w.newID("sync"), Direction: dir, Status: "queued", Branch: p.DefaultBranch, RequestedAt: r.now, RequestedBy: r.Actor}
	return map[string]any{"sync": p.LastSync, "project_id": p.ID, "repository": p.Repository}, nil
}
