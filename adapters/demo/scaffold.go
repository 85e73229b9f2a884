package demo

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// proposal is a pending scaffold proposal: a row for human review that
// changes nothing until accepted (docs/requirements.md#tiers).
type proposal struct {
	ID         string         `json:"id"`
	Kind       string         `json:"kind"` // script, app, app_file_upsert, workflow
	Change     string         `json:"change"`
	Status     string         `json:"status"`
	Title      string         `json:"title"`
	Summary    string         `json:"summary"`
	Target     map[string]any `json:"target"`
	ProposedBy string         `json:"proposed_by,omitempty"`
	TaskID     string         `json:"task_id,omitempty"`
	CreatedAt  time.Time      `json:"created_at"`
}

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,62}$`)

func scaffoldTools() map[string]tool {
	return map[string]tool{
		"scaffold.script.propose":          {required: []string{"slug", "source"}, handle: proposeScript},
		"scaffold.app.propose":             {required: []string{"name"}, handle: proposeApp},
		"scaffold.app.file_upsert.propose": {required: []string{"app_id", "path", "content"}, handle: proposeFileUpsert},
		"scaffold.workflow.propose":        {required: []string{"name", "definition"}, handle: proposeWorkflow},
		"task.create_for_app_scaffold":     {required: []string{"app_id", "prompt"}, handle: spawnAppScaffold},
		"task.create_for_script_scaffold":  {required: []string{"slug", "prompt"}, handle: spawnScriptScaffold},
	}
}

// propose records a proposal and answers with it.
func (w *workspace) propose(r *request, kind, change, title, summary string, target map[string]any) (any, error) {
	p := &proposal{ID: w.newID("prp"), Kind: kind, Change: change, Status: "pending_review", Title: title, Summary: summary,
		Target: target, ProposedBy: r.Actor, TaskID: r.TaskID, CreatedAt: r.now}
	w.proposals = append(w.proposals, p)
	return map[string]any{"proposal": p, "note": "Nothing changes until a person accepts the proposal."}, nil
}

func proposeScript(w *workspace, r *request) (any, error) {
	slug, src := r.str("slug"), r.str("source")
	if !slugPattern.MatchString(slug) {
		return nil, refuse("slug %q must be 2-63 lowercase letters, digits or dashes", slug)
	}
	change, summary := "create", fmt.Sprintf("New script %s, %d lines.", slug, lines(src))
	if s := w.scriptBySlug(slug); s != nil {
		change = "update"
		summary = fmt.Sprintf("Update %s from v%d: %d lines instead of %d.", slug, s.Version, lines(src), lines(s.source))
	}
	return w.propose(r, "script", change, "Script "+slug, summary, map[string]any{"slug": slug, "description": r.str("description")})
}

func lines(s string) int { return strings.Count(strings.TrimRight(s, "\n"), "\n") + 1 }

func proposeApp(w *workspace, r *request) (any, error) {
	name := r.str("name")
	slug := slugify(name)
	if slug == "" {
		return nil, refuse("app name %q has no letters or digits to make a slug from", name)
	}
	if a := find(w.apps, func(a *app) bool { return a.Slug == slug }); a != nil {
		return nil, refuse("app %s (%s) already uses the slug %s; pick another name or propose file changes to it", a.Name, a.ID, slug)
	}
	template := r.str("template")
	if template == "" {
		template = "blank"
	}
	return w.propose(r, "app", "create", "App "+name, fmt.Sprintf("New app %s from the %s template.", slug, template),
		map[string]any{"name": name, "slug": slug, "template": template, "description": r.str("description")})
}

func proposeFileUpsert(w *workspace, r *request) (any, error) {
	a, err := w.appArg(r)
	if err != nil {
		return nil, err
	}
	path, content := strings.TrimPrefix(r.str("path"), "/"), r.str("content")
	if strings.Contains(path, "..") {
		return nil, refuse("path %q must stay inside the app; remove '..'", path)
	}
	change := "create"
	if find(a.files, func(f *appFile) bool { return f.Path == path }) != nil {
		change = "replace"
	}
	return w.propose(r, "app_file_upsert", change, fmt.Sprintf("%s %s in %s", change, path, a.Name),
		fmt.Sprintf("%s %s (%d bytes).", strings.ToUpper(change[:1])+change[1:], path, len(content)),
		map[string]any{"app_id": a.ID, "path": path, "size_bytes": len(content)})
}

func proposeWorkflow(w *workspace, r *request) (any, error) {
	def := r.object("definition")
	nodes, _ := def["nodes"].([]any)
	edges, _ := def["edges"].([]any)
	if len(nodes) == 0 {
		return nil, refuse("definition needs a non-empty nodes array (see spec.get workflow_schema)")
	}
	return w.propose(r, "workflow", "create", "Workflow "+r.str("name"),
		fmt.Sprintf("New workflow with %d node(s) and %d edge(s).", len(nodes), len(edges)),
		map[string]any{"name": r.str("name"), "description": r.str("description")})
}

// spawnAppScaffold launches a follow-up task on an existing app.
func spawnAppScaffold(w *workspace, r *request) (any, error) {
	a, err := w.appArg(r)
	if err != nil {
		return nil, err
	}
	t := w.launch(r, a.ProjectID, "Scaffold follow-up: "+a.Name, w.defaultProfile().ID, "scaffold", 5)
	return map[string]any{"task": t.view(r.now), "app_id": a.ID}, nil
}

// spawnScriptScaffold launches a follow-up task on a script that exists or
// has a pending proposal.
func spawnScriptScaffold(w *workspace, r *request) (any, error) {
	slug := r.str("slug")
	proposed := find(w.proposals, func(p *proposal) bool { return p.Kind == "script" && p.Target["slug"] == slug })
	if w.scriptBySlug(slug) == nil && proposed == nil {
		return nil, refuse("script %s neither exists nor has a pending proposal; propose it with scaffold.script.propose first", slug)
	}
	t := w.launch(r, w.projectFor(r.TaskID).ID, "Scaffold follow-up: script "+slug, w.defaultProfile().ID, "scaffold", 5)
	return map[string]any{"task": t.view(r.now), "slug": slug}, nil
}
