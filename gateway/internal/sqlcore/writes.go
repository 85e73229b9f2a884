package sqlcore

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
)

// The admin API's writes, the same SQL on both databases with the
// dialect's literals (Core.sql, Core.now). Writes go through W; a write
// that reads before it writes runs in one transaction (InTx), so a failed
// write changes nothing.

// PutWorkspace creates or replaces workspace w.ID (name, slug, org plan) and
// sets w.CreatedAt to the stored creation time and w.FlowRules to the
// stored switch, which a replace keeps (SetWorkspaceFlowRules sets it).
// Errors: EInvalid for an empty id, EConflict when another workspace uses
// the slug.
func (c *Core) PutWorkspace(ctx context.Context, w *gateway.Workspace) error {
	now, at := c.now()
	q := `
INSERT INTO workspaces (id, name, slug, org_plan, created_at, updated_at) VALUES (?, ?, ?, ?, ` + now + `, ` + now + `)
ON CONFLICT (id) DO UPDATE
   SET name = excluded.name, slug = excluded.slug, org_plan = excluded.org_plan, updated_at = excluded.updated_at
RETURNING created_at, flow_rules`
	args := append(append([]any{w.ID, w.Name, w.Slug, w.OrgPlan}, at...), at...)
	var created Time
	if err := c.W.QueryRowContext(ctx, c.Q(q), args...).Scan(&created, &w.FlowRules); err != nil {
		return c.Translate(err, Msgs{Conflict: fmt.Sprintf(
			"workspace slug %q is already used by another workspace; choose another slug", w.Slug)})
	}
	w.CreatedAt = created.Time
	return nil
}

// SetWorkspaceFlowRules switches the shipped flow rule set on or off for
// workspaceID (gateway.Workspace.FlowRules). Errors: ENotFound for an
// unknown workspace.
func (c *Core) SetWorkspaceFlowRules(ctx context.Context, workspaceID string, on bool) error {
	now, at := c.now()
	q := `UPDATE workspaces SET flow_rules = ?, updated_at = ` + now + ` WHERE id = ?`
	res, err := c.W.ExecContext(ctx, c.Q(q), append(append([]any{on}, at...), workspaceID)...)
	if err != nil {
		return c.DriverError(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return c.DriverError(err)
	} else if n == 0 {
		return gateway.Errorf(gateway.ENotFound, "%s", WorkspaceNotFound(workspaceID))
	}
	return nil
}

// PutMember creates or replaces the membership of m.UserID in m.WorkspaceID.
// Errors: ENotFound for an unknown workspace, EInvalid for a role outside
// owner/admin/member/viewer (the previous row stays as it was).
func (c *Core) PutMember(ctx context.Context, m *gateway.Member) error {
	const q = `
INSERT INTO members (workspace_id, user_id, role, seat_type) VALUES (?, ?, ?, ?)
ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = excluded.role, seat_type = excluded.seat_type`
	_, err := c.W.ExecContext(ctx, c.Q(q), m.WorkspaceID, m.UserID, m.Role, m.SeatType)
	return c.Translate(err, Msgs{NotFound: WorkspaceNotFound(m.WorkspaceID)})
}

// PutProfile creates or replaces profile p.ID of p.WorkspaceID. A nil
// Allowlist is stored as []; a nil ScriptAllowlist as NULL (no restriction),
// an empty one as [] (no script). The default flag is not taken from p: it
// keeps its stored value (false for a new profile), which is written back
// into p.IsDefault. Creating a profile with the id of a deleted one
// clears its deletion (ClearDeletedProfile), in the same transaction.
// Errors: ENotFound for an unknown workspace.
func (c *Core) PutProfile(ctx context.Context, p *gateway.Profile) error {
	now, at := c.now()
	q := `
INSERT INTO agent_profiles (workspace_id, id, name, allowlist, script_allowlist, updated_at)
VALUES (?, ?, ?, ?, ?, ` + now + `)
ON CONFLICT (workspace_id, id) DO UPDATE
   SET name = excluded.name, allowlist = excluded.allowlist,
       script_allowlist = excluded.script_allowlist, updated_at = excluded.updated_at
RETURNING is_workspace_default`
	args := append([]any{p.WorkspaceID, p.ID, p.Name, JSONList(p.Allowlist), NullableJSONList(p.ScriptAllowlist)}, at...)
	return c.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := tx.QueryRowContext(ctx, c.Q(q), args...).Scan(&p.IsDefault); err != nil {
			return c.Translate(err, Msgs{NotFound: WorkspaceNotFound(p.WorkspaceID)})
		}
		return c.ClearDeletedProfile(ctx, tx, p.WorkspaceID, p.ID)
	})
}

// SetDefaultProfile makes profileID the default profile of workspaceID,
// clearing the previous default, or clears the default when profileID is
// nil (docs/requirements.md#workspace-default-profile: at most one per workspace, setting one clears the previous).
// Errors: ENotFound for an unknown workspace or a profile that is not in
// this workspace; on error the previous default stays.
func (c *Core) SetDefaultProfile(ctx context.Context, workspaceID string, profileID *string) error {
	return c.InTx(ctx, func(tx *sqlx.Tx) error {
		// Locking the workspace row serialises concurrent default changes.
		if err := c.lockWorkspace(ctx, tx, workspaceID); err != nil {
			return err
		}
		const clear = `UPDATE agent_profiles SET is_workspace_default = {false}
WHERE workspace_id = ? AND is_workspace_default = {true}`
		if _, err := tx.ExecContext(ctx, c.sql(clear), workspaceID); err != nil {
			return c.DriverError(err)
		}
		if profileID == nil {
			return nil
		}
		const set = `UPDATE agent_profiles SET is_workspace_default = {true} WHERE workspace_id = ? AND id = ?`
		res, err := tx.ExecContext(ctx, c.sql(set), workspaceID, *profileID)
		return c.ExpectOne(res, err, ProfileNotFound(workspaceID, *profileID))
	})
}

// PutWorkspaceOverrides replaces the permission overrides of workspaceID
// (third in the precedence chain, docs/requirements.md#precedence) with perms; an empty map removes
// them all. Errors: ENotFound for an unknown workspace.
func (c *Core) PutWorkspaceOverrides(ctx context.Context, workspaceID string, perms gateway.Permissions) error {
	return c.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := c.lockWorkspace(ctx, tx, workspaceID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx,
			c.Q(`DELETE FROM workspace_permission_overrides WHERE workspace_id = ?`), workspaceID); err != nil {
			return c.DriverError(err)
		}
		const ins = `INSERT INTO workspace_permission_overrides (workspace_id, permission_key, granted)
SELECT ?, e.key, {bool} FROM {each} e`
		_, err := tx.ExecContext(ctx, c.sql(ins), workspaceID, JSONObject(perms))
		return c.DriverError(err)
	})
}

// PutMemberOverrides replaces the permission overrides of member userID of
// workspaceID (first in the precedence chain, docs/requirements.md#precedence) with perms; an empty
// map removes them all. Errors: ENotFound when the member does not exist.
func (c *Core) PutMemberOverrides(ctx context.Context, workspaceID, userID string, perms gateway.Permissions) error {
	return c.InTx(ctx, func(tx *sqlx.Tx) error {
		var one int
		const member = `SELECT 1 FROM members WHERE workspace_id = ? AND user_id = ?{lock}`
		if err := tx.QueryRowContext(ctx, c.sql(member), workspaceID, userID).Scan(&one); err != nil {
			return c.Translate(err, Msgs{NotFound: MemberNotFound(workspaceID, userID)})
		}
		const del = `DELETE FROM member_permission_overrides WHERE workspace_id = ? AND user_id = ?`
		if _, err := tx.ExecContext(ctx, c.Q(del), workspaceID, userID); err != nil {
			return c.DriverError(err)
		}
		const ins = `INSERT INTO member_permission_overrides (workspace_id, user_id, permission_key, granted)
SELECT ?, ?, e.key, {bool} FROM {each} e`
		_, err := tx.ExecContext(ctx, c.sql(ins), workspaceID, userID, JSONObject(perms))
		return c.Translate(err, Msgs{NotFound: MemberNotFound(workspaceID, userID)})
	})
}

// PutSeatType creates or replaces seat type st.Name; nil Permissions are
// stored as {}. Errors: EInvalid for an empty name.
func (c *Core) PutSeatType(ctx context.Context, st *gateway.SeatType) error {
	const q = `
INSERT INTO seat_types (name, enterprise_only, permissions) VALUES (?, ?, ?)
ON CONFLICT (name) DO UPDATE
   SET enterprise_only = excluded.enterprise_only, permissions = excluded.permissions`
	_, err := c.W.ExecContext(ctx, c.Q(q), st.Name, st.EnterpriseOnly, JSONObject(st.Permissions))
	return c.DriverError(err)
}

// PutOrgPlan creates or replaces org plan o.Name; nil Permissions are stored
// as {}. Errors: EInvalid for an empty name.
func (c *Core) PutOrgPlan(ctx context.Context, o *gateway.OrgPlan) error {
	const q = `
INSERT INTO org_plans (name, permissions) VALUES (?, ?)
ON CONFLICT (name) DO UPDATE SET permissions = excluded.permissions`
	_, err := c.W.ExecContext(ctx, c.Q(q), o.Name, JSONObject(o.Permissions))
	return c.DriverError(err)
}

// PutTask creates or replaces task t.ID of t.WorkspaceID and sets
// t.UpdatedAt to the time of this write. Errors: ENotFound for an unknown
// workspace, EInvalid for a status outside running/completed/failed/cancelled.
func (c *Core) PutTask(ctx context.Context, t *gateway.Task) error {
	now, at := c.now()
	q := `
INSERT INTO tasks (workspace_id, id, status, updated_at) VALUES (?, ?, ?, ` + now + `)
ON CONFLICT (workspace_id, id) DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at
RETURNING updated_at`
	var updated Time
	err := c.W.QueryRowContext(ctx, c.Q(q), append([]any{t.WorkspaceID, t.ID, t.Status}, at...)...).Scan(&updated)
	if err != nil {
		return c.Translate(err, Msgs{NotFound: WorkspaceNotFound(t.WorkspaceID)})
	}
	t.UpdatedAt = updated.Time
	return nil
}

// PutExternalLimits creates or replaces the external-gateway limits of
// workspaceID; a nil field keeps the default of docs/requirements.md#external-limits. Errors: ENotFound for
// an unknown workspace, EInvalid for a negative limit.
func (c *Core) PutExternalLimits(ctx context.Context, workspaceID string, l gateway.ExternalLimits) error {
	now, at := c.now()
	q := `
INSERT INTO external_limits (workspace_id, reads_per_tool_hourly, ops_per_token_hourly, updated_at)
VALUES (?, ?, ?, ` + now + `)
ON CONFLICT (workspace_id) DO UPDATE
   SET reads_per_tool_hourly = excluded.reads_per_tool_hourly,
       ops_per_token_hourly = excluded.ops_per_token_hourly, updated_at = excluded.updated_at`
	_, err := c.W.ExecContext(ctx, c.Q(q), append([]any{workspaceID, l.ReadsPerToolHourly, l.OpsPerTokenHourly}, at...)...)
	return c.Translate(err, Msgs{NotFound: WorkspaceNotFound(workspaceID)})
}

// ExternalLimits returns the external-gateway limits of workspaceID; fields
// are nil where the default applies (also when none were ever set).
// Errors: ENotFound for an unknown workspace.
func (c *Core) ExternalLimits(ctx context.Context, workspaceID string) (gateway.ExternalLimits, error) {
	const q = `
SELECT l.reads_per_tool_hourly, l.ops_per_token_hourly
  FROM workspaces w LEFT JOIN external_limits l ON l.workspace_id = w.id
 WHERE w.id = ?`
	var l gateway.ExternalLimits
	err := c.R.QueryRowContext(ctx, c.Q(q), workspaceID).Scan(&l.ReadsPerToolHourly, &l.OpsPerTokenHourly)
	return l, c.Translate(err, Msgs{NotFound: WorkspaceNotFound(workspaceID)})
}

// lockWorkspace returns ENotFound unless the workspace exists, and keeps
// it as read for the rest of tx (Dialect.LockRow: a row lock that does
// not block concurrent inserts of its children on PostgreSQL; on SQLite
// BEGIN IMMEDIATE already holds the only write lock).
func (c *Core) lockWorkspace(ctx context.Context, tx *sqlx.Tx, workspaceID string) error {
	var one int
	err := tx.QueryRowContext(ctx, c.sql(`SELECT 1 FROM workspaces WHERE id = ?{lock}`), workspaceID).Scan(&one)
	return c.Translate(err, Msgs{NotFound: WorkspaceNotFound(workspaceID)})
}
