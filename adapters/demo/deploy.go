package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// The deploy tier (docs/requirements.md#deploy-role). The gateway runs the two-step
// confirmation and the owner/admin check before a call gets here, so these
// handlers only act; confirmation_token and idempotency_key are the
// gateway's business and are ignored.

func deployTools() map[string]tool {
	app := []string{"app_id"}
	return map[string]tool{
		"app.deploy":          {required: app, handle: appDeploy},
		"app.undeploy":        {required: app, handle: appUndeploy},
		"app.pause":           {required: app, handle: appPause},
		"app.resume":          {required: app, handle: appResume},
		"app.migration.apply": {required: app, handle: appMigrationApply},
	}
}

// appDeploy builds the app's current source and routes it publicly.
func appDeploy(w *workspace, r *request) (any, error) {
	a, err := w.appArg(r)
	if err != nil {
		return nil, err
	}
	b := &build{
		ID: w.newID("bld"), AppID: a.ID, Status: "succeeded", Commit: w.digest("commit", 12),
		Trigger: "deploy", StartedAt: r.now, DurationSeconds: 42, Summary: "Built " + a.Slug + " for deployment",
	}
	a.builds = append([]*build{b}, a.builds...)
	a.CurrentBuildID, a.DeployedAt = b.ID, nil
	a.setStatus("deployed", w.info.Slug, r.now)
	rn := w.appRun(a, "deploy", r.now)
	w.log(rn, "deployment_completed", "Deployed build "+b.ID+" to "+*a.PublicURL, r.now, map[string]any{"build_id": b.ID})
	finish(rn, "completed", r.now)
	out := map[string]any{"app": a, "build": b, "deployment_run_id": rn.ID, "pending_migrations": len(a.pending())}
	if n := len(a.pending()); n > 0 {
		out["warning"] = fmt.Sprintf("%d migration(s) are still pending; apply them with app.migration.apply", n)
	}
	return out, nil
}

func appUndeploy(w *workspace, r *request) (any, error) {
	a, err := w.appArg(r)
	if err != nil {
		return nil, err
	}
	if a.Status == "undeployed" {
		return nil, refuse("app %s is not deployed; nothing to undeploy", a.ID)
	}
	previous := *a.PublicURL
	a.setStatus("undeployed", w.info.Slug, r.now)
	return map[string]any{"app": a, "removed_route": previous}, nil
}

func appPause(w *workspace, r *request) (any, error) {
	a, err := w.appArg(r)
	if err != nil {
		return nil, err
	}
	if a.Status != "deployed" {
		return nil, refuse("app %s is %s; only a deployed app can be put into maintenance mode", a.ID, a.Status)
	}
	a.setStatus("paused", w.info.Slug, r.now)
	return map[string]any{"app": a}, nil
}

func appResume(w *workspace, r *request) (any, error) {
	a, err := w.appArg(r)
	if err != nil {
		return nil, err
	}
	if a.Status != "paused" {
		return nil, refuse("app %s is %s, not paused; nothing to resume", a.ID, a.Status)
	}
	a.setStatus("deployed", w.info.Slug, r.now)
	return map[string]any{"app": a}, nil
}

// appMigrationApply applies pending migrations in order; with none pending
// it answers applied: [] rather than failing, so a retry is harmless.
func appMigrationApply(w *workspace, r *request) (any, error) {
	a, err := w.appArg(r)
	if err != nil {
		return nil, err
	}
	applied := a.pending()
	for _, m := range applied {
		m.Status, m.AppliedAt = "applied", ptr(r.now)
	}
	if len(applied) > 0 {
		rn := w.appRun(a, "migration", r.now)
		w.log(rn, "migrations_applied", fmt.Sprintf("Applied %d migration(s).", len(applied)), r.now, nil)
		finish(rn, "completed", r.now)
	}
	return map[string]any{"app_id": a.ID, "applied": applied, "applied_count": len(applied), "pending_count": 0}, nil
}

// appRun starts an app-kind run for a lifecycle action.
func (w *workspace) appRun(a *app, trigger string, at time.Time) *run {
	rn := w.newRun("app", "running", trigger, at)
	rn.AppID, rn.ProjectID = a.ID, a.ProjectID
	return rn
}

// ChangesSummary describes what a deploy-tier call would change, for the
// gateway's confirmation step (docs/requirements.md#deploy-confirmation, step
// 1: changes_summary). It reads the workspace without changing it.
//
// Errors: *gateway.Error EInvalid for a tool without a summary or an
// app_id that is not in call.WorkspaceID; EUnavailable when ctx is done.
func (b *Backend) ChangesSummary(ctx context.Context, call gateway.ToolCall) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", gateway.Wrap(gateway.EUnavailable, err, "demo backend: summary cancelled before it ran")
	}
	w := b.workspace(call.WorkspaceID)
	w.mu.Lock()
	defer w.mu.Unlock()
	id, _ := call.Arguments["app_id"].(string)
	a := w.appByID(id)
	if a == nil {
		return "", gateway.Errorf(gateway.EInvalid, "app %s not found in this workspace", id)
	}
	switch call.Tool {
	case "app.deploy":
		return fmt.Sprintf("Deploy %s (%s): build the current source and route it at https://%s--%s.apps.supacloud.dev (now %s); %d pending migration(s) are not applied by a deploy.",
			a.Name, a.ID, a.Slug, w.info.Slug, a.Status, len(a.pending())), nil
	case "app.migration.apply":
		names := []string{}
		for _, m := range a.pending() {
			names = append(names, m.Name)
		}
		return fmt.Sprintf("Apply %d pending migration(s) to %s (%s): %v.", len(names), a.Name, a.ID, names), nil
	}
	return "", gateway.Errorf(gateway.EInvalid, "%s has no changes summary", call.Tool)
}
