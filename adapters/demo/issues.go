package demo

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

type issue struct {
	ID        string         `json:"id"`
	Key       string         `json:"key"` // as the provider shows it, e.g. LIN-42 or #118
	ProjectID string         `json:"project_id"`
	Provider  string         `json:"provider"`
	Title     string         `json:"title"`
	Body      string         `json:"body"`
	State     string         `json:"state"`
	Labels    []string       `json:"labels"`
	Assignee  string         `json:"assignee,omitempty"`
	URL       string         `json:"url"`
	Comments  []issueComment `json:"comments"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
}

type issueComment struct {
	ID     string    `json:"id"`
	Author string    `json:"author"`
	Body   string    `json:"body"`
	At     time.Time `json:"created_at"`
}

type pullReq struct {
	Number    int       `json:"number"`
	Title     string    `json:"title"`
	Head      string    `json:"head"`
	Base      string    `json:"base"`
	Body      string    `json:"body,omitempty"`
	Draft     bool      `json:"draft"`
	State     string    `json:"state"`
	URL       string    `json:"url"`
	CreatedBy string    `json:"created_by,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// issueStates are the states each of the six providers knows.
var issueStates = map[string][]string{
	"github": {"open", "closed"}, "gitlab": {"opened", "closed"}, "bitbucket": {"new", "open", "resolved", "closed"},
	"forgejo": {"open", "closed"}, "linear": {"backlog", "todo", "in_progress", "in_review", "done", "canceled"},
	"notion": {"not_started", "in_progress", "done"},
}

var closedStates = map[string]bool{"closed": true, "resolved": true, "done": true, "canceled": true}

func (i *issue) open() bool { return !closedStates[i.State] }

var issueTitles = []string{
	"Checkout button unresponsive on Safari 17", "Invoice PDF shows wrong VAT rate", "Nightly sync misses records updated at midnight",
	"Add CSV export to orders list", "Login emails land in spam for outlook.com", "Dashboard chart breaks with zero data",
	"Rate limit the public search endpoint",
}

var forgeHosts = map[string]string{"github": "github.com", "gitlab": "gitlab.com", "bitbucket": "bitbucket.org", "forgejo": "code.supacloud.dev"}

func genIssues(w *workspace, g *gen) {
	next := g.rng.IntN(len(issueTitles))
	for _, p := range w.projects {
		prov := p.issueProvider()
		num := 100 + g.between(0, 400)
		for range g.between(3, 5) {
			num += g.between(1, 25) // issue numbers grow within a project
			next++
			is := &issue{
				ID: w.newID("iss"), ProjectID: p.ID, Provider: prov, Title: issueTitles[next%len(issueTitles)],
				Body: "Reported by a customer; steps to reproduce in the linked conversation.", Labels: []string{g.pick("bug", "feature", "chore")},
				Comments: []issueComment{}, CreatedAt: g.ago(24*time.Hour, 60*24*time.Hour),
			}
			is.Key, is.URL = issueKey(p, num)
			states := issueStates[prov]
			is.State = states[g.rng.IntN(len(states)-1)] // never the last (closed-ish) state at birth
			is.UpdatedAt = is.CreatedAt.Add(time.Duration(g.between(1, 48)) * time.Hour)
			w.issues = append(w.issues, is)
		}
	}
}

// issueKey returns the provider's display key and web URL for number num.
func issueKey(p *project, num int) (string, string) {
	switch p.issueProvider() {
	case "linear":
		team := strings.ToUpper(p.Slug[:3])
		return fmt.Sprintf("%s-%d", team, num), fmt.Sprintf("https://linear.app/%s/issue/%s-%d", p.Repository[:strings.Index(p.Repository, "/")], team, num)
	case "notion":
		return fmt.Sprintf("TASK-%d", num), fmt.Sprintf("https://www.notion.so/%s-%d", p.Slug, num)
	default:
		return fmt.Sprintf("#%d", num), fmt.Sprintf("https://%s/%s/issues/%d", forgeHosts[p.GitProvider], p.Repository, num)
	}
}

// issueByRef finds an issue by id or by its provider key.
func (w *workspace) issueByRef(ref string) *issue {
	return find(w.issues, func(i *issue) bool { return i.ID == ref || strings.EqualFold(i.Key, ref) })
}

func issueTools() map[string]tool {
	return map[string]tool{
		"issue.get":        {required: []string{"issue_id"}, handle: issueGet},
		"issue.list":       {handle: issueList},
		"issue.comment":    {required: []string{"issue_id", "body"}, handle: issueCommentTool},
		"issue.transition": {required: []string{"issue_id", "state"}, handle: issueTransition},
		"pr.create":        {required: []string{"title", "head"}, handle: prCreate},
	}
}

func issueGet(w *workspace, r *request) (any, error) {
	is := w.issueByRef(r.str("issue_id"))
	if is == nil {
		return nil, notFound("issue", r.str("issue_id"))
	}
	return map[string]any{"issue": is}, nil
}

// issueList lists the open issues of the task's project (docs/requirements.md#issue-source).
func issueList(w *workspace, r *request) (any, error) {
	p := w.projectFor(r.TaskID)
	open := filter(w.issues, r.limit(30, 100), func(i *issue) bool { return i.ProjectID == p.ID && i.open() })
	out := list("issues", open)
	out["project_id"], out["provider"] = p.ID, p.issueProvider()
	return out, nil
}

func issueCommentTool(w *workspace, r *request) (any, error) {
	is := w.issueByRef(r.str("issue_id"))
	if is == nil {
		return nil, notFound("issue", r.str("issue_id"))
	}
	c := issueComment{ID: w.newID("cmt"), Author: actorOr(r.Actor), Body: r.str("body"), At: r.now}
	is.Comments = append(is.Comments, c)
	is.UpdatedAt = r.now
	return map[string]any{"issue_id": is.ID, "key": is.Key, "provider": is.Provider, "comment": c}, nil
}

func issueTransition(w *workspace, r *request) (any, error) {
	is := w.issueByRef(r.str("issue_id"))
	if is == nil {
		return nil, notFound("issue", r.str("issue_id"))
	}
	state, allowed := r.str("state"), issueStates[is.Provider]
	if !slices.Contains(allowed, state) {
		return nil, refuse("%s does not know the state %q; use one of %s", is.Provider, state, strings.Join(allowed, ", "))
	}
	from := is.State
	is.State, is.UpdatedAt = state, r.now
	return map[string]any{"issue": is, "from_state": from, "to_state": state}, nil
}

// prCreate opens a pull request on the git forge of the task's project.
func prCreate(w *workspace, r *request) (any, error) {
	p := w.projectFor(r.TaskID)
	base := r.str("base")
	if base == "" {
		base = p.DefaultBranch
	}
	head := r.str("head")
	if head == base {
		return nil, refuse("head and base are both %q; push the changes to a branch of their own first", head)
	}
	w.seq["pr"]++
	pr := &pullReq{
		Number: 200 + w.seq["pr"], Title: r.str("title"), Head: head, Base: base, Body: r.str("body"),
		Draft: r.boolean("draft"), State: "open", CreatedBy: r.Actor, CreatedAt: r.now,
	}
	pr.URL = fmt.Sprintf("https://%s/%s/pull/%d", forgeHosts[p.GitProvider], p.Repository, pr.Number)
	p.PullRequests = append(p.PullRequests, pr)
	return map[string]any{"pull_request": pr, "project_id": p.ID, "git_provider": p.GitProvider}, nil
}
