package demo

import (
	"fmt"
	"time"
)

type script struct {
	Slug        string        `json:"slug"`
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Language    string        `json:"language"`
	Inputs      []scriptInput `json:"inputs"`
	Resources   []string      `json:"resources"` // resource names bound at run time
	Version     int           `json:"version"`
	CreatedAt   time.Time     `json:"created_at"`
	UpdatedAt   time.Time     `json:"updated_at"`
	source      string
}

type scriptInput struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required bool   `json:"required"`
}

var scriptSeeds = []script{
	{Slug: "sync-erp-export", Name: "Sync ERP export", Description: "Copy the nightly ERP export into the assets bucket.", Language: "python",
		Inputs: []scriptInput{{"date", "string", false}}, Resources: []string{"erp-api", "assets-bucket"},
		source: "import datetime\n\ndef main(ctx, date=None):\n    day = date or datetime.date.today().isoformat()\n    rows = ctx.resources['erp-api'].get(f'/exports/{day}')\n    ctx.resources['assets-bucket'].put(f'erp/{day}.json', rows)\n    return {'rows': len(rows)}\n"},
	{Slug: "load-warehouse", Name: "Load warehouse", Description: "Upsert cleaned ERP rows into orders-db.", Language: "python",
		Inputs: []scriptInput{{"date", "string", true}}, Resources: []string{"orders-db", "assets-bucket"},
		source: "def main(ctx, date):\n    rows = ctx.resources['assets-bucket'].get(f'clean/{date}.json')\n    return {'upserted': ctx.resources['orders-db'].upsert('orders', rows)}\n"},
	{Slug: "deploy-portal", Name: "Deploy portal", Description: "Kick off the customer portal deployment pipeline.", Language: "bash",
		Inputs: []scriptInput{}, Resources: []string{},
		source: "#!/usr/bin/env bash\nset -euo pipefail\necho \"deploying customer portal\"\n"},
	{Slug: "fetch-conversations", Name: "Fetch conversations", Description: "List unassigned support conversations.", Language: "typescript",
		Inputs: []scriptInput{{"limit", "number", false}}, Resources: []string{"support-inbox"},
		source: "export default async function main(ctx, { limit = 50 }) {\n  return ctx.resources['support-inbox'].conversations({ status: 'open', limit });\n}\n"},
	{Slug: "weekly-revenue-report", Name: "Weekly revenue report", Description: "Sum last week's paid invoices per plan and mail the report.", Language: "python",
		Inputs: []scriptInput{{"week", "string", false}}, Resources: []string{"orders-db", "transactional-mail"},
		source: "def main(ctx, week=None):\n    totals = ctx.resources['orders-db'].query('select plan, sum(amount) from invoices group by plan')\n    ctx.resources['transactional-mail'].send('finance@example.com', 'Weekly revenue', totals)\n    return {'plans': len(totals)}\n"},
}

func genScripts(w *workspace, g *gen) {
	for _, seed := range scriptSeeds {
		s := seed
		s.Version = g.between(1, 9)
		s.CreatedAt = g.ago(20*24*time.Hour, 200*24*time.Hour)
		s.UpdatedAt = s.CreatedAt.Add(time.Duration(g.between(1, 400)) * time.Hour)
		if s.UpdatedAt.After(g.base) {
			s.UpdatedAt = g.base
		}
		w.scripts = append(w.scripts, &s)
	}
}

func (w *workspace) scriptBySlug(slug string) *script {
	return find(w.scripts, func(s *script) bool { return s.Slug == slug })
}

// genScriptRuns seeds a finished run of the first scripts.
func genScriptRuns(w *workspace, g *gen) {
	for i, s := range w.scripts[:3] {
		at := g.ago(time.Hour, 48*time.Hour)
		status := "completed"
		if i == 2 {
			status = "failed"
		}
		rn := w.execScript(s, g.pick("schedule", "manual"), map[string]any{}, at, status)
		rn.ProjectID = w.projects[i%len(w.projects)].ID
	}
}

// genAppRuns seeds request-serving runs of deployed apps.
func genAppRuns(w *workspace, g *gen) {
	for _, a := range filter(w.apps, 0, func(a *app) bool { return a.Status == "deployed" }) {
		rn := w.appRun(a, "cron", g.ago(10*time.Minute, 5*time.Hour))
		w.log(rn, "app_job_started", "Nightly invoice export job started.", rn.CreatedAt, nil)
		end := rn.CreatedAt.Add(time.Duration(g.between(5, 90)) * time.Second)
		w.log(rn, "app_job_completed", "Exported invoices.", end, map[string]any{"invoices": g.between(20, 400)})
		finish(rn, "completed", end)
	}
}

// execScript runs s to completion (or failure) and returns the run.
func (w *workspace) execScript(s *script, trigger string, inputs map[string]any, at time.Time, status string) *run {
	rn := w.newRun("script", "running", trigger, at)
	rn.ScriptSlug = s.Slug
	w.log(rn, "script_started", fmt.Sprintf("Running %s v%d (%s).", s.Slug, s.Version, s.Language), at, map[string]any{"inputs": inputs})
	for _, res := range s.Resources {
		w.log(rn, "resource_bound", "Bound resource "+res+".", at.Add(time.Second), nil)
	}
	end := at.Add(3 * time.Second)
	if status == "failed" {
		rn.Error = "exit status 1"
		w.log(rn, "script_failed", "Script exited with status 1.", end, map[string]any{"stderr": "ConnectionError: upstream timed out after 30s"})
	} else {
		rn.Output = map[string]any{"ok": true, "inputs": inputs, "records": 100 + len(s.Slug)*7}
		w.log(rn, "script_completed", "Script finished.", end, rn.Output)
	}
	finish(rn, status, end)
	return rn
}

func scriptTools() map[string]tool {
	return map[string]tool{
		"script.list": {handle: scriptList},
		"script.get":  {required: []string{"slug"}, handle: scriptGet},
		"script.run":  {required: []string{"slug"}, handle: scriptRun},
	}
}

func scriptList(w *workspace, r *request) (any, error) {
	return list("scripts", filter(w.scripts, r.limit(50, 100), func(*script) bool { return true })), nil
}

func scriptGet(w *workspace, r *request) (any, error) {
	s := w.scriptBySlug(r.str("slug"))
	if s == nil {
		return nil, notFound("script", r.str("slug"))
	}
	return map[string]any{"script": s, "source": s.source}, nil
}

// scriptRun executes a script (the gateway enforces the script.run grant
// and the profile's script_allowlist, docs/requirements.md#script-allowlist). Required inputs must be
// present.
func scriptRun(w *workspace, r *request) (any, error) {
	s := w.scriptBySlug(r.str("slug"))
	if s == nil {
		return nil, notFound("script", r.str("slug"))
	}
	inputs := r.object("inputs")
	for _, in := range s.Inputs {
		if _, ok := inputs[in.Name]; in.Required && !ok {
			return nil, refuse("script %s needs the input %q; pass it in inputs", s.Slug, in.Name)
		}
	}
	rn := w.execScript(s, "mcp", inputs, r.now, "completed")
	rn.TaskID = r.TaskID
	return map[string]any{"run_id": rn.ID, "status": rn.Status, "output": rn.Output, "script": s.Slug, "version": s.Version}, nil
}
