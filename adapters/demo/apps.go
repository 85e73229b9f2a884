package demo

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// maxFileBody is the cap on app.files.get bodies (docs/requirements.md#read-caps).
const maxFileBody = 64 << 10

type app struct {
	ID             string     `json:"id"`
	Name           string     `json:"name"`
	Slug           string     `json:"slug"`
	ProjectID      string     `json:"project_id"`
	Description    string     `json:"description"`
	Runtime        string     `json:"runtime"`
	Status         string     `json:"status"` // deployed, paused (maintenance), undeployed
	Maintenance    bool       `json:"maintenance"`
	PublicURL      *string    `json:"public_url"`
	CurrentBuildID string     `json:"current_build_id,omitempty"`
	DeployedAt     *time.Time `json:"deployed_at"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	files          []*appFile
	builds         []*build // newest first
	migrations     []*migration
}

type appFile struct {
	Path      string    `json:"path"`
	SizeBytes int       `json:"size_bytes"`
	UpdatedAt time.Time `json:"updated_at"`
	body      string
}

type build struct {
	ID              string    `json:"id"`
	AppID           string    `json:"app_id"`
	Status          string    `json:"status"`
	Commit          string    `json:"commit"`
	Trigger         string    `json:"trigger"`
	StartedAt       time.Time `json:"started_at"`
	DurationSeconds int       `json:"duration_seconds"`
	Summary         string    `json:"summary"`
}

type migration struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Status    string     `json:"status"`
	Checksum  string     `json:"checksum"`
	AppliedAt *time.Time `json:"applied_at"`
}

var appSeeds = []struct{ name, desc, runtime, status string }{
	{"Customer Portal", "Self-service orders, invoices and returns.", "node22", "deployed"},
	{"Status Page", "Public uptime and incident page.", "static", "paused"},
	{"Admin Dashboard", "Internal back office for support and finance.", "node22", "undeployed"},
}

func genApps(w *workspace, g *gen) {
	for i, seed := range appSeeds {
		a := &app{
			ID: w.newID("app"), Name: seed.name, Slug: slugify(seed.name), ProjectID: w.projects[i%len(w.projects)].ID,
			Description: seed.desc, Runtime: seed.runtime, CreatedAt: g.ago(20*24*time.Hour, 120*24*time.Hour),
		}
		a.files = seedFiles(a, g, i == 0)
		a.builds = seedBuilds(w, g, a)
		a.migrations = seedMigrations(w, g, i == 0)
		a.CurrentBuildID = a.builds[0].ID
		a.UpdatedAt = a.builds[0].StartedAt
		a.setStatus(seed.status, w.info.Slug, a.builds[0].StartedAt)
		w.apps = append(w.apps, a)
	}
}

// setStatus moves the app to deployed, paused or undeployed and keeps the
// public URL consistent: a paused app keeps its route (it shows the
// maintenance page), an undeployed one has none.
func (a *app) setStatus(status, wsSlug string, at time.Time) {
	a.Status, a.Maintenance = status, status == "paused"
	switch status {
	case "deployed", "paused":
		a.PublicURL = ptr(fmt.Sprintf("https://%s--%s.apps.supacloud.dev", a.Slug, wsSlug))
		if a.DeployedAt == nil {
			a.DeployedAt = ptr(at)
		}
	default:
		a.PublicURL, a.DeployedAt = nil, nil
	}
	a.UpdatedAt = at
}

func seedFiles(a *app, g *gen, big bool) []*appFile {
	at := g.ago(time.Hour, 10*24*time.Hour)
	bodies := map[string]string{
		"package.json":         fmt.Sprintf("{\n  \"name\": %q,\n  \"private\": true,\n  \"scripts\": {\"start\": \"node dist/server.js\", \"build\": \"tsc\"}\n}\n", a.Slug),
		"README.md":            "# " + a.Name + "\n\n" + a.Description + "\n",
		"src/server.ts":        "import { createServer } from './http';\n\ncreateServer({ port: Number(process.env.PORT ?? 8080) }).listen();\n",
		"src/routes/health.ts": "export const health = () => ({ ok: true });\n",
		"src/routes/orders.ts": "export async function listOrders(db, customerId) {\n  return db.query('select * from orders where customer_id = $1 order by created_at desc', [customerId]);\n}\n",
	}
	if big {
		bodies["public/vendor.min.js"] = strings.Repeat("/*! vendor bundle */!function(e){\"use strict\";var t={};e.exports=t}(module);\n", 1200)
	}
	files := []*appFile{}
	for path, body := range bodies {
		files = append(files, &appFile{Path: path, SizeBytes: len(body), UpdatedAt: at, body: body})
	}
	slices.SortFunc(files, func(x, y *appFile) int { return strings.Compare(x.Path, y.Path) })
	return files
}

func seedBuilds(w *workspace, g *gen, a *app) []*build {
	builds := []*build{}
	at := g.ago(30*time.Minute, 6*time.Hour)
	for i := range g.between(3, 6) {
		status := "succeeded"
		if i > 0 && g.chance(0.25) {
			status = "failed"
		}
		b := &build{ID: w.newID("bld"), AppID: a.ID, Status: status, Commit: g.hex(12), Trigger: g.pick("push", "deploy", "manual"),
			StartedAt: at, DurationSeconds: g.between(35, 240), Summary: "Built " + a.Slug}
		if status == "failed" {
			b.Summary = "tsc: error TS2339 in src/routes/orders.ts"
		}
		builds = append(builds, b)
		at = at.Add(-time.Duration(g.between(5, 72)) * time.Hour)
	}
	return builds
}

func seedMigrations(w *workspace, g *gen, pending bool) []*migration {
	names := []string{"0001_create_customers.sql", "0002_create_orders.sql", "0003_add_order_status_index.sql"}
	ms := []*migration{}
	for i, name := range names {
		m := &migration{ID: w.newID("mig"), Name: name, Status: "applied", Checksum: "sha256:" + g.hex(16)}
		if pending && i == len(names)-1 {
			m.Status = "pending"
		} else {
			m.AppliedAt = ptr(g.ago(time.Duration(3-i)*24*time.Hour, time.Duration(3-i)*48*time.Hour))
		}
		ms = append(ms, m)
	}
	return ms
}

func (a *app) pending() []*migration {
	return filter(a.migrations, 0, func(m *migration) bool { return m.Status == "pending" })
}

func (w *workspace) appByID(id string) *app {
	return find(w.apps, func(a *app) bool { return a.ID == id })
}

// appArg resolves the app_id argument or answers not found.
func (w *workspace) appArg(r *request) (*app, error) {
	a := w.appByID(r.str("app_id"))
	if a == nil {
		return nil, notFound("app", r.str("app_id"))
	}
	return a, nil
}

func appTools() map[string]tool {
	return map[string]tool{
		"apps.list":          {handle: appsList},
		"app.get":            {required: []string{"app_id"}, handle: appGet},
		"app.files.list":     {required: []string{"app_id"}, handle: appFilesList},
		"app.files.get":      {required: []string{"app_id", "path"}, handle: appFilesGet},
		"app.builds.list":    {required: []string{"app_id"}, handle: appBuildsList},
		"app.migration.list": {required: []string{"app_id"}, handle: appMigrationList},
	}
}

func appsList(w *workspace, r *request) (any, error) {
	pid := r.str("project_id")
	return list("apps", filter(w.apps, 0, func(a *app) bool { return pid == "" || a.ProjectID == pid })), nil
}

func appGet(w *workspace, r *request) (any, error) {
	a, err := w.appArg(r)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"app": a, "latest_build": a.builds[0], "file_count": len(a.files),
		"pending_migrations": len(a.pending()), "build_count": len(a.builds),
	}, nil
}

func appFilesList(w *workspace, r *request) (any, error) {
	a, err := w.appArg(r)
	if err != nil {
		return nil, err
	}
	prefix := strings.TrimPrefix(r.str("path_prefix"), "/")
	return list("files", filter(a.files, 0, func(f *appFile) bool { return strings.HasPrefix(f.Path, prefix) })), nil
}

// appFilesGet returns one file; bodies over 64 KiB are cut at the cap and
// marked truncated (app.files.get, docs/requirements.md#read-caps).
func appFilesGet(w *workspace, r *request) (any, error) {
	a, err := w.appArg(r)
	if err != nil {
		return nil, err
	}
	path := strings.TrimPrefix(r.str("path"), "/")
	f := find(a.files, func(f *appFile) bool { return f.Path == path })
	if f == nil {
		return nil, refuse("file %s not found in app %s; list the files with app.files.list", path, a.ID)
	}
	body := f.body
	if len(body) > maxFileBody {
		body = body[:maxFileBody]
	}
	return map[string]any{
		"app_id": a.ID, "path": f.Path, "size_bytes": f.SizeBytes, "updated_at": f.UpdatedAt,
		"content": body, "truncated": len(body) < len(f.body),
	}, nil
}

func appBuildsList(w *workspace, r *request) (any, error) {
	a, err := w.appArg(r)
	if err != nil {
		return nil, err
	}
	return list("builds", a.builds[:min(len(a.builds), r.limit(20, 100))]), nil
}

func appMigrationList(w *workspace, r *request) (any, error) {
	a, err := w.appArg(r)
	if err != nil {
		return nil, err
	}
	status := r.str("status")
	ms := filter(a.migrations, 0, func(m *migration) bool { return status == "" || m.Status == status })
	out := list("migrations", ms)
	out["app_id"], out["pending_count"] = a.ID, len(a.pending())
	return out, nil
}
