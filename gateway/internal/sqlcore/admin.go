package sqlcore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
)

// The admin API's reads and deletes, the same SQL on both databases. Reads
// go through R, deletes through W. Every lookup names the workspace, so a
// record of another workspace is never returned or removed. Errors:
// ENotFound (naming what to create) for an unknown workspace or record,
// EConflict for a seat type or org plan that is still referenced.

// MaxListedReferences bounds how many referring records a refusal or a
// deletion reply names; the count is always exact.
const MaxListedReferences = 20

// Workspace returns workspace id.
func (c *Core) Workspace(ctx context.Context, id string) (*gateway.Workspace, error) {
	var r workspaceRow
	err := c.R.GetContext(ctx, &r, c.Q(`SELECT `+workspaceColumns+` FROM workspaces WHERE id = ?`), id)
	if err != nil {
		return nil, c.Translate(err, Msgs{NotFound: WorkspaceNotFound(id)})
	}
	return r.workspace(), nil
}

// workspaceColumns are the columns of a workspaces row a workspaceRow
// holds.
const workspaceColumns = `id, name, slug, org_plan, created_at, flow_rules`

// workspaceRow is one row of workspaceColumns.
type workspaceRow struct {
	ID, Name, Slug string
	OrgPlan        string `db:"org_plan"`
	CreatedAt      Time   `db:"created_at"`
	FlowRules      bool   `db:"flow_rules"`
}

func (r *workspaceRow) workspace() *gateway.Workspace {
	return &gateway.Workspace{ID: r.ID, Name: r.Name, Slug: r.Slug, OrgPlan: r.OrgPlan, CreatedAt: r.CreatedAt.Time, FlowRules: r.FlowRules}
}

// ListWorkspaces returns at most limit workspaces whose id sorts after
// after ("" for the first page), by id.
func (c *Core) ListWorkspaces(ctx context.Context, after string, limit int) ([]gateway.Workspace, error) {
	var rows []workspaceRow
	const q = `SELECT ` + workspaceColumns + ` FROM workspaces WHERE id > ? ORDER BY id LIMIT ?`
	if err := c.R.SelectContext(ctx, &rows, c.Q(q), after, limit); err != nil {
		return nil, c.DriverError(err)
	}
	out := make([]gateway.Workspace, len(rows))
	for i := range rows {
		out[i] = *rows[i].workspace()
	}
	return out, nil
}

// needWorkspace returns ENotFound unless workspace ws exists; it tells an
// empty listing from an unknown parent.
func (c *Core) needWorkspace(ctx context.Context, db sqlx.QueryerContext, ws string) error {
	var one int
	err := sqlx.GetContext(ctx, db, &one, c.Q(`SELECT 1 FROM workspaces WHERE id = ?`), ws)
	return c.Translate(err, Msgs{NotFound: WorkspaceNotFound(ws)})
}

// ListMembers returns the members of ws by user id.
func (c *Core) ListMembers(ctx context.Context, ws string) ([]gateway.Member, error) {
	var rows []gateway.Member
	const q = `SELECT workspace_id, user_id, role, seat_type FROM members WHERE workspace_id = ? ORDER BY user_id`
	if err := c.R.SelectContext(ctx, &rows, c.Q(q), ws); err != nil {
		return nil, c.DriverError(err)
	}
	if len(rows) == 0 {
		return nil, c.needWorkspace(ctx, c.R, ws)
	}
	return rows, nil
}

// Member returns member user of ws.
func (c *Core) Member(ctx context.Context, ws, user string) (*gateway.Member, error) {
	var m gateway.Member
	const q = `SELECT workspace_id, user_id, role, seat_type FROM members WHERE workspace_id = ? AND user_id = ?`
	if err := c.R.GetContext(ctx, &m, c.Q(q), ws, user); err != nil {
		return nil, c.missing(ctx, err, ws, MemberNotFound(ws, user))
	}
	return &m, nil
}

// missing translates err; for no rows it says whether the workspace or
// the record (notFound) is missing.
func (c *Core) missing(ctx context.Context, err error, ws, notFound string) error {
	err = c.Translate(err, Msgs{NotFound: notFound})
	if gateway.ErrorCodeOf(err) != gateway.ENotFound {
		return err
	}
	if werr := c.needWorkspace(ctx, c.R, ws); werr != nil {
		return werr
	}
	return err
}

// DeleteMember removes member user of ws with its permission overrides
// (the foreign key cascades). The member's API access ends with it: a JWT
// whose sub is no longer a member is refused.
func (c *Core) DeleteMember(ctx context.Context, ws, user string) error {
	n, err := c.Delete(ctx, `DELETE FROM members WHERE workspace_id = ? AND user_id = ?`, ws, user)
	return c.deleted(ctx, n, err, ws, MemberNotFound(ws, user))
}

// deleted reports ENotFound (workspace first) when a delete removed no row.
func (c *Core) deleted(ctx context.Context, n int64, err error, ws, notFound string) error {
	if err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if ws != "" {
		if werr := c.needWorkspace(ctx, c.W, ws); werr != nil {
			return werr
		}
	}
	return gateway.Errorf(gateway.ENotFound, "%s", notFound)
}

// profileRow is an agent_profiles row; the lists are JSON.
type profileRow struct {
	WorkspaceID     string `db:"workspace_id"`
	ID              string `db:"id"`
	Name            string `db:"name"`
	Allowlist       []byte `db:"allowlist"`
	ScriptAllowlist []byte `db:"script_allowlist"`
	IsDefault       bool   `db:"is_workspace_default"`
}

const profileColumns = `workspace_id, id, name, allowlist, script_allowlist, is_workspace_default`

func (r profileRow) profile() (gateway.Profile, error) {
	p := gateway.Profile{WorkspaceID: r.WorkspaceID, ID: r.ID, Name: r.Name, IsDefault: r.IsDefault, Allowlist: []string{}}
	err := json.Unmarshal(r.Allowlist, &p.Allowlist)
	if err == nil && r.ScriptAllowlist != nil {
		err = json.Unmarshal(r.ScriptAllowlist, &p.ScriptAllowlist)
		if err == nil && p.ScriptAllowlist == nil {
			p.ScriptAllowlist = []string{} // a stored JSON null is no restriction; keep [] as []
		}
	}
	if err != nil {
		return p, gateway.Wrap(gateway.EInternal, err, "audit store returned an unreadable agent profile")
	}
	return p, nil
}

// ListProfiles returns the agent profiles of ws by id.
func (c *Core) ListProfiles(ctx context.Context, ws string) ([]gateway.Profile, error) {
	var rows []profileRow
	q := `SELECT ` + profileColumns + ` FROM agent_profiles WHERE workspace_id = ? ORDER BY id`
	if err := c.R.SelectContext(ctx, &rows, c.Q(q), ws); err != nil {
		return nil, c.DriverError(err)
	}
	if len(rows) == 0 {
		return nil, c.needWorkspace(ctx, c.R, ws)
	}
	out := make([]gateway.Profile, len(rows))
	for i, r := range rows {
		p, err := r.profile()
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// Profile returns agent profile id of ws.
func (c *Core) Profile(ctx context.Context, ws, id string) (*gateway.Profile, error) {
	var r profileRow
	q := `SELECT ` + profileColumns + ` FROM agent_profiles WHERE workspace_id = ? AND id = ?`
	if err := c.R.GetContext(ctx, &r, c.Q(q), ws, id); err != nil {
		return nil, c.missing(ctx, err, ws, ProfileNotFound(ws, id))
	}
	p, err := r.profile()
	return &p, err
}

// DefaultProfile returns the id of the default profile of ws, or nil when
// none is set.
func (c *Core) DefaultProfile(ctx context.Context, ws string) (*string, error) {
	var ids []string
	const q = `SELECT id FROM agent_profiles WHERE workspace_id = ? AND is_workspace_default`
	if err := c.R.SelectContext(ctx, &ids, c.Q(q), ws); err != nil {
		return nil, c.DriverError(err)
	}
	if len(ids) == 0 {
		return nil, c.needWorkspace(ctx, c.R, ws)
	}
	return &ids[0], nil
}

// DeleteProfile removes agent profile id of ws and remembers its id in
// deleted_agent_profiles, in one transaction: from then on LoadCaller
// reports a session whose JWT names it as Caller.ProfileDeleted, which
// falls back as a session without agent_profile_id does, until a profile
// with that id is created again (ClearDeletedProfile). wasDefault reports
// that it was the workspace default, which is then unset (the flag lives
// on the row). tasks lists, by id and at most MaxListedReferences of them,
// the running tasks of ws whose audited calls ran under the profile
// (requested or as the default), and total counts them all: the sessions
// that relied on it; total is -1 when they could not be read (the profile
// is deleted all the same). API tokens name no profile.
func (c *Core) DeleteProfile(ctx context.Context, ws, id string) (wasDefault bool, tasks []string, total int, err error) {
	var flags []bool
	tx, err := c.W.BeginTxx(ctx, nil)
	if err != nil {
		return false, nil, 0, c.DriverError(err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	const del = `DELETE FROM agent_profiles WHERE workspace_id = ? AND id = ? RETURNING is_workspace_default`
	if err := tx.SelectContext(ctx, &flags, c.Q(del), ws, id); err != nil {
		return false, nil, 0, c.DriverError(err)
	}
	if len(flags) == 0 {
		_ = tx.Rollback()
		return false, nil, 0, c.deleted(ctx, 0, nil, ws, ProfileNotFound(ws, id))
	}
	const remember = `INSERT INTO deleted_agent_profiles (workspace_id, id, deleted_at) VALUES (?, ?, ?)
ON CONFLICT (workspace_id, id) DO UPDATE SET deleted_at = excluded.deleted_at`
	if _, err := tx.ExecContext(ctx, c.Q(remember), ws, id, c.Time(Now())); err != nil {
		return false, nil, 0, c.DriverError(err)
	}
	if err := tx.Commit(); err != nil {
		return false, nil, 0, c.DriverError(err)
	}
	const used = `
SELECT t.id FROM tasks t
 WHERE t.workspace_id = ? AND t.status = 'running'
   AND EXISTS (SELECT 1 FROM audit_events a
                WHERE a.task_id = t.id AND a.workspace_id = t.workspace_id AND a.profile_id = ?)
 ORDER BY t.id`
	if err := c.W.SelectContext(ctx, &tasks, c.Q(used), ws, id); err != nil {
		// The profile is gone; failing to name its tasks must not hide that.
		return flags[0], nil, -1, nil
	}
	total = len(tasks)
	if total > MaxListedReferences {
		tasks = tasks[:MaxListedReferences]
	}
	return flags[0], tasks, total, nil
}

// ClearDeletedProfile forgets, in tx, that profile id of ws was deleted:
// the stores call it when they create or replace a profile, so that a
// profile created again with a deleted id governs the sessions that name
// it once more.
func (c *Core) ClearDeletedProfile(ctx context.Context, tx *sqlx.Tx, ws, id string) error {
	_, err := tx.ExecContext(ctx, c.Q(`DELETE FROM deleted_agent_profiles WHERE workspace_id = ? AND id = ?`), ws, id)
	return c.DriverError(err)
}

// permissionsOf reads (permission_key, granted) rows into a map.
func (c *Core) permissionsOf(ctx context.Context, q string, args ...any) (gateway.Permissions, error) {
	var rows []struct {
		Key     string `db:"permission_key"`
		Granted bool   `db:"granted"`
	}
	if err := c.R.SelectContext(ctx, &rows, c.Q(q), args...); err != nil {
		return nil, c.DriverError(err)
	}
	p := gateway.Permissions{}
	for _, r := range rows {
		p[r.Key] = r.Granted
	}
	return p, nil
}

// WorkspaceOverrides returns the permission overrides of ws ({} when none).
func (c *Core) WorkspaceOverrides(ctx context.Context, ws string) (gateway.Permissions, error) {
	p, err := c.permissionsOf(ctx,
		`SELECT permission_key, granted FROM workspace_permission_overrides WHERE workspace_id = ?`, ws)
	if err == nil && len(p) == 0 {
		err = c.needWorkspace(ctx, c.R, ws)
	}
	return p, err
}

// MemberOverrides returns the permission overrides of member user of ws
// ({} when none).
func (c *Core) MemberOverrides(ctx context.Context, ws, user string) (gateway.Permissions, error) {
	p, err := c.permissionsOf(ctx,
		`SELECT permission_key, granted FROM member_permission_overrides WHERE workspace_id = ? AND user_id = ?`, ws, user)
	if err == nil && len(p) == 0 {
		_, err = c.Member(ctx, ws, user)
	}
	return p, err
}

// DeleteWorkspaceOverride removes the override of key from ws.
func (c *Core) DeleteWorkspaceOverride(ctx context.Context, ws, key string) error {
	n, err := c.Delete(ctx, `DELETE FROM workspace_permission_overrides WHERE workspace_id = ? AND permission_key = ?`, ws, key)
	return c.deleted(ctx, n, err, ws, fmt.Sprintf(
		"workspace %s has no override for %s; GET /admin/v1/workspaces/%s/permission-overrides lists the ones it has", ws, key, ws))
}

// DeleteMemberOverride removes the override of key from member user of ws.
func (c *Core) DeleteMemberOverride(ctx context.Context, ws, user, key string) error {
	n, err := c.Delete(ctx,
		`DELETE FROM member_permission_overrides WHERE workspace_id = ? AND user_id = ? AND permission_key = ?`, ws, user, key)
	if err != nil || n > 0 {
		return err
	}
	if _, err := c.Member(ctx, ws, user); err != nil {
		return err
	}
	return gateway.Errorf(gateway.ENotFound,
		"member %s of workspace %s has no override for %s; GET /admin/v1/workspaces/%s/members/%s/permission-overrides lists the ones it has",
		user, ws, key, ws, user)
}

// namedRow is a seat_types or org_plans row (enterprise_only is false for
// org plans).
type namedRow struct {
	Name           string `db:"name"`
	EnterpriseOnly bool   `db:"enterprise_only"`
	Permissions    []byte `db:"permissions"`
}

func (r namedRow) permissions() (gateway.Permissions, error) {
	p := gateway.Permissions{}
	if err := json.Unmarshal(r.Permissions, &p); err != nil {
		return nil, gateway.Wrap(gateway.EInternal, err, "audit store returned unreadable permissions")
	}
	return p, nil
}

func (c *Core) seatTypes(ctx context.Context, where string, args ...any) ([]gateway.SeatType, error) {
	var rows []namedRow
	if err := c.R.SelectContext(ctx, &rows, c.Q(`SELECT name, enterprise_only, permissions FROM seat_types `+where), args...); err != nil {
		return nil, c.DriverError(err)
	}
	out := make([]gateway.SeatType, len(rows))
	for i, r := range rows {
		p, err := r.permissions()
		if err != nil {
			return nil, err
		}
		out[i] = gateway.SeatType{Name: r.Name, EnterpriseOnly: r.EnterpriseOnly, Permissions: p}
	}
	return out, nil
}

// ListSeatTypes returns every seat type by name.
func (c *Core) ListSeatTypes(ctx context.Context) ([]gateway.SeatType, error) {
	return c.seatTypes(ctx, `ORDER BY name`)
}

// SeatType returns seat type name.
func (c *Core) SeatType(ctx context.Context, name string) (*gateway.SeatType, error) {
	s, err := c.seatTypes(ctx, `WHERE name = ?`, name)
	if err != nil {
		return nil, err
	}
	if len(s) == 0 {
		return nil, gateway.Errorf(gateway.ENotFound, "%s", SeatTypeNotFound(name))
	}
	return &s[0], nil
}

// DeleteSeatType removes seat type name unless a member holds it; then it
// returns EConflict naming the members (workspace/user), so that deleting
// never silently changes what a member may do.
func (c *Core) DeleteSeatType(ctx context.Context, name string) error {
	const q = `DELETE FROM seat_types WHERE name = ? AND NOT EXISTS (SELECT 1 FROM members WHERE seat_type = ?)`
	n, err := c.Delete(ctx, q, name, name)
	if err != nil || n > 0 {
		return err
	}
	if _, err := c.SeatType(ctx, name); err != nil {
		return err
	}
	var refs []string
	const users = `SELECT workspace_id || '/' || user_id FROM members WHERE seat_type = ? ORDER BY workspace_id, user_id`
	if err := c.W.SelectContext(ctx, &refs, c.Q(users), name); err != nil {
		return c.DriverError(err)
	}
	return gateway.Errorf(gateway.EConflict,
		"seat type %s is still held by %s (workspace/user); give them another seat type with PUT /admin/v1/workspaces/{ws}/members/{user}, then delete it",
		name, references(refs, "member", "members"))
}

// references is "3 members: a, b, c", naming at most MaxListedReferences.
func references(refs []string, one, many string) string {
	noun := many
	if len(refs) == 1 {
		noun = one
	}
	shown := refs
	more := ""
	if len(refs) > MaxListedReferences {
		shown, more = refs[:MaxListedReferences], fmt.Sprintf(" and %d more", len(refs)-MaxListedReferences)
	}
	return fmt.Sprintf("%d %s: %s%s", len(refs), noun, strings.Join(shown, ", "), more)
}

func (c *Core) orgPlans(ctx context.Context, where string, args ...any) ([]gateway.OrgPlan, error) {
	var rows []namedRow
	if err := c.R.SelectContext(ctx, &rows, c.Q(`SELECT name, permissions FROM org_plans `+where), args...); err != nil {
		return nil, c.DriverError(err)
	}
	out := make([]gateway.OrgPlan, len(rows))
	for i, r := range rows {
		p, err := r.permissions()
		if err != nil {
			return nil, err
		}
		out[i] = gateway.OrgPlan{Name: r.Name, Permissions: p}
	}
	return out, nil
}

// ListOrgPlans returns every org plan by name.
func (c *Core) ListOrgPlans(ctx context.Context) ([]gateway.OrgPlan, error) {
	return c.orgPlans(ctx, `ORDER BY name`)
}

// OrgPlan returns org plan name.
func (c *Core) OrgPlan(ctx context.Context, name string) (*gateway.OrgPlan, error) {
	o, err := c.orgPlans(ctx, `WHERE name = ?`, name)
	if err != nil {
		return nil, err
	}
	if len(o) == 0 {
		return nil, gateway.Errorf(gateway.ENotFound, "%s", OrgPlanNotFound(name))
	}
	return &o[0], nil
}

// DeleteOrgPlan removes org plan name unless a workspace is on it; then it
// returns EConflict naming the workspaces.
func (c *Core) DeleteOrgPlan(ctx context.Context, name string) error {
	const q = `DELETE FROM org_plans WHERE name = ? AND NOT EXISTS (SELECT 1 FROM workspaces WHERE org_plan = ?)`
	n, err := c.Delete(ctx, q, name, name)
	if err != nil || n > 0 {
		return err
	}
	if _, err := c.OrgPlan(ctx, name); err != nil {
		return err
	}
	var refs []string
	if err := c.W.SelectContext(ctx, &refs, c.Q(`SELECT id FROM workspaces WHERE org_plan = ? ORDER BY id`), name); err != nil {
		return c.DriverError(err)
	}
	return gateway.Errorf(gateway.EConflict,
		"org plan %s is still used by %s; move them to another plan with PUT /admin/v1/workspaces/{ws} (field org_plan), then delete it",
		name, references(refs, "workspace", "workspaces"))
}

// taskRow is a tasks row.
type taskRow struct {
	WorkspaceID string `db:"workspace_id"`
	ID          string `db:"id"`
	Status      string `db:"status"`
	UpdatedAt   Time   `db:"updated_at"`
}

// Task returns task id of ws.
func (c *Core) Task(ctx context.Context, ws, id string) (*gateway.Task, error) {
	var r taskRow
	const q = `SELECT workspace_id, id, status, updated_at FROM tasks WHERE workspace_id = ? AND id = ?`
	if err := c.R.GetContext(ctx, &r, c.Q(q), ws, id); err != nil {
		return nil, c.missing(ctx, err, ws, TaskNotFound(ws, id))
	}
	return &gateway.Task{WorkspaceID: r.WorkspaceID, ID: r.ID, Status: r.Status, UpdatedAt: r.UpdatedAt.Time}, nil
}

// ListTasks returns at most limit tasks of ws whose id sorts after after
// ("" for the first page), by id; status, when not "", keeps only tasks
// in that status.
func (c *Core) ListTasks(ctx context.Context, ws, status, after string, limit int) ([]gateway.Task, error) {
	var rows []taskRow
	const q = `SELECT workspace_id, id, status, updated_at FROM tasks
WHERE workspace_id = ? AND (CAST(? AS TEXT) = '' OR status = ?) AND id > ? ORDER BY id LIMIT ?`
	if err := c.R.SelectContext(ctx, &rows, c.Q(q), ws, status, status, after, limit); err != nil {
		return nil, c.DriverError(err)
	}
	if len(rows) == 0 {
		return nil, c.needWorkspace(ctx, c.R, ws)
	}
	out := make([]gateway.Task, len(rows))
	for i, r := range rows {
		out[i] = gateway.Task{WorkspaceID: r.WorkspaceID, ID: r.ID, Status: r.Status, UpdatedAt: r.UpdatedAt.Time}
	}
	return out, nil
}

// SeatTypeNotFound is the message for an unknown seat type.
func SeatTypeNotFound(name string) string {
	return fmt.Sprintf("seat type %s not found; create it with PUT /admin/v1/seat-types/%s", name, name)
}

// OrgPlanNotFound is the message for an unknown org plan.
func OrgPlanNotFound(name string) string {
	return fmt.Sprintf("org plan %s not found; create it with PUT /admin/v1/org-plans/%s", name, name)
}

// TaskNotFound is the message for an unknown task of a workspace.
func TaskNotFound(ws, id string) string {
	return fmt.Sprintf("task %s not found in workspace %s; create it with PUT /admin/v1/workspaces/%s/tasks/%s (a session's first call also registers it)",
		id, ws, ws, id)
}
