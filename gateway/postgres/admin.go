package postgres

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlcore"
)

// PutWorkspace creates or replaces workspace w.ID (name, slug, org plan) and
// sets w.CreatedAt to the stored creation time, which a replace keeps.
// Errors: EInvalid for an empty id, EConflict when another workspace uses
// the slug.
func (s *Store) PutWorkspace(ctx context.Context, w *gateway.Workspace) error {
	const q = `
INSERT INTO workspaces (id, name, slug, org_plan) VALUES ($1, $2, $3, $4)
ON CONFLICT (id) DO UPDATE
   SET name = excluded.name, slug = excluded.slug, org_plan = excluded.org_plan, updated_at = now()
RETURNING created_at`
	err := s.db.QueryRowContext(ctx, q, w.ID, w.Name, w.Slug, w.OrgPlan).Scan(&w.CreatedAt)
	return translate(err, msgs{conflict: fmt.Sprintf(
		"workspace slug %q is already used by another workspace; choose another slug", w.Slug)})
}

// PutMember creates or replaces the membership of m.UserID in m.WorkspaceID.
// Errors: ENotFound for an unknown workspace, EInvalid for a role outside
// owner/admin/member/viewer (the previous row stays as it was).
func (s *Store) PutMember(ctx context.Context, m *gateway.Member) error {
	const q = `
INSERT INTO members (workspace_id, user_id, role, seat_type) VALUES ($1, $2, $3, $4)
ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = excluded.role, seat_type = excluded.seat_type`
	_, err := s.db.ExecContext(ctx, q, m.WorkspaceID, m.UserID, m.Role, m.SeatType)
	return translate(err, msgs{notFound: sqlcore.WorkspaceNotFound(m.WorkspaceID)})
}

// PutProfile creates or replaces profile p.ID of p.WorkspaceID. A nil
// Allowlist is stored as []; a nil ScriptAllowlist as NULL (no restriction),
// an empty one as [] (no script). The default flag is not taken from p: it
// keeps its stored value (false for a new profile), which is written back
// into p.IsDefault. Creating a profile with the id of a deleted one
// clears its deletion (Core.ClearDeletedProfile), in the same transaction.
// Errors: ENotFound for an unknown workspace.
func (s *Store) PutProfile(ctx context.Context, p *gateway.Profile) error {
	const q = `
INSERT INTO agent_profiles (workspace_id, id, name, allowlist, script_allowlist)
VALUES ($1, $2, $3, $4::jsonb, $5::jsonb)
ON CONFLICT (workspace_id, id) DO UPDATE
   SET name = excluded.name, allowlist = excluded.allowlist,
       script_allowlist = excluded.script_allowlist, updated_at = now()
RETURNING is_workspace_default`
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		err := tx.QueryRowContext(ctx, q, p.WorkspaceID, p.ID, p.Name,
			sqlcore.JSONList(p.Allowlist), sqlcore.NullableJSONList(p.ScriptAllowlist)).Scan(&p.IsDefault)
		if err != nil {
			return translate(err, msgs{notFound: sqlcore.WorkspaceNotFound(p.WorkspaceID)})
		}
		return s.ClearDeletedProfile(ctx, tx, p.WorkspaceID, p.ID)
	})
}

// SetDefaultProfile makes profileID the default profile of workspaceID,
// clearing the previous default, or clears the default when profileID is
// nil (docs/requirements.md#workspace-default-profile: at most one per workspace, setting one clears the previous).
// Errors: ENotFound for an unknown workspace or a profile that is not in
// this workspace; on error the previous default stays.
func (s *Store) SetDefaultProfile(ctx context.Context, workspaceID string, profileID *string) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		// Locking the workspace row serialises concurrent default changes.
		if err := lockWorkspace(ctx, tx, workspaceID); err != nil {
			return err
		}
		const clear = `UPDATE agent_profiles SET is_workspace_default = false
WHERE workspace_id = $1 AND is_workspace_default`
		if _, err := tx.ExecContext(ctx, clear, workspaceID); err != nil {
			return translate(err, msgs{})
		}
		if profileID == nil {
			return nil
		}
		const set = `UPDATE agent_profiles SET is_workspace_default = true WHERE workspace_id = $1 AND id = $2`
		res, err := tx.ExecContext(ctx, set, workspaceID, *profileID)
		return s.ExpectOne(res, err, sqlcore.ProfileNotFound(workspaceID, *profileID))
	})
}

// PutWorkspaceOverrides replaces the permission overrides of workspaceID
// (third in the precedence chain, docs/requirements.md#precedence) with perms; an empty map removes
// them all. Errors: ENotFound for an unknown workspace.
func (s *Store) PutWorkspaceOverrides(ctx context.Context, workspaceID string, perms gateway.Permissions) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		if err := lockWorkspace(ctx, tx, workspaceID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx,
			`DELETE FROM workspace_permission_overrides WHERE workspace_id = $1`, workspaceID); err != nil {
			return translate(err, msgs{})
		}
		const ins = `INSERT INTO workspace_permission_overrides (workspace_id, permission_key, granted)
SELECT $1, e.key, e.value::boolean FROM jsonb_each($2::jsonb) e`
		_, err := tx.ExecContext(ctx, ins, workspaceID, sqlcore.JSONObject(perms))
		return translate(err, msgs{})
	})
}

// PutMemberOverrides replaces the permission overrides of member userID of
// workspaceID (first in the precedence chain, docs/requirements.md#precedence) with perms; an empty
// map removes them all. Errors: ENotFound when the member does not exist.
func (s *Store) PutMemberOverrides(ctx context.Context, workspaceID, userID string, perms gateway.Permissions) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		var one int
		const lockMember = `SELECT 1 FROM members WHERE workspace_id = $1 AND user_id = $2 FOR NO KEY UPDATE`
		if err := tx.QueryRowContext(ctx, lockMember, workspaceID, userID).Scan(&one); err != nil {
			return translate(err, msgs{notFound: sqlcore.MemberNotFound(workspaceID, userID)})
		}
		const del = `DELETE FROM member_permission_overrides WHERE workspace_id = $1 AND user_id = $2`
		if _, err := tx.ExecContext(ctx, del, workspaceID, userID); err != nil {
			return translate(err, msgs{})
		}
		const ins = `INSERT INTO member_permission_overrides (workspace_id, user_id, permission_key, granted)
SELECT $1, $2, e.key, e.value::boolean FROM jsonb_each($3::jsonb) e`
		_, err := tx.ExecContext(ctx, ins, workspaceID, userID, sqlcore.JSONObject(perms))
		return translate(err, msgs{notFound: sqlcore.MemberNotFound(workspaceID, userID)})
	})
}

// PutSeatType creates or replaces seat type s.Name; nil Permissions are
// stored as {}. Errors: EInvalid for an empty name.
func (s *Store) PutSeatType(ctx context.Context, st *gateway.SeatType) error {
	const q = `
INSERT INTO seat_types (name, enterprise_only, permissions) VALUES ($1, $2, $3::jsonb)
ON CONFLICT (name) DO UPDATE
   SET enterprise_only = excluded.enterprise_only, permissions = excluded.permissions`
	_, err := s.db.ExecContext(ctx, q, st.Name, st.EnterpriseOnly, sqlcore.JSONObject(st.Permissions))
	return translate(err, msgs{})
}

// PutOrgPlan creates or replaces org plan o.Name; nil Permissions are stored
// as {}. Errors: EInvalid for an empty name.
func (s *Store) PutOrgPlan(ctx context.Context, o *gateway.OrgPlan) error {
	const q = `
INSERT INTO org_plans (name, permissions) VALUES ($1, $2::jsonb)
ON CONFLICT (name) DO UPDATE SET permissions = excluded.permissions`
	_, err := s.db.ExecContext(ctx, q, o.Name, sqlcore.JSONObject(o.Permissions))
	return translate(err, msgs{})
}

// PutTask creates or replaces task t.ID of t.WorkspaceID and sets
// t.UpdatedAt to the time of this write. Errors: ENotFound for an unknown
// workspace, EInvalid for a status outside running/completed/failed/cancelled.
func (s *Store) PutTask(ctx context.Context, t *gateway.Task) error {
	const q = `
INSERT INTO tasks (workspace_id, id, status) VALUES ($1, $2, $3)
ON CONFLICT (workspace_id, id) DO UPDATE SET status = excluded.status, updated_at = now()
RETURNING updated_at`
	err := s.db.QueryRowContext(ctx, q, t.WorkspaceID, t.ID, t.Status).Scan(&t.UpdatedAt)
	return translate(err, msgs{notFound: sqlcore.WorkspaceNotFound(t.WorkspaceID)})
}

// PutExternalLimits creates or replaces the external-gateway limits of
// workspaceID; a nil field keeps the default of docs/requirements.md#external-limits. Errors: ENotFound for
// an unknown workspace, EInvalid for a negative limit.
func (s *Store) PutExternalLimits(ctx context.Context, workspaceID string, l gateway.ExternalLimits) error {
	const q = `
INSERT INTO external_limits (workspace_id, reads_per_tool_hourly, ops_per_token_hourly) VALUES ($1, $2, $3)
ON CONFLICT (workspace_id) DO UPDATE
   SET reads_per_tool_hourly = excluded.reads_per_tool_hourly,
       ops_per_token_hourly = excluded.ops_per_token_hourly, updated_at = now()`
	_, err := s.db.ExecContext(ctx, q, workspaceID, l.ReadsPerToolHourly, l.OpsPerTokenHourly)
	return translate(err, msgs{notFound: sqlcore.WorkspaceNotFound(workspaceID)})
}

// ExternalLimits returns the external-gateway limits of workspaceID; fields
// are nil where the default applies (also when none were ever set).
// Errors: ENotFound for an unknown workspace.
func (s *Store) ExternalLimits(ctx context.Context, workspaceID string) (gateway.ExternalLimits, error) {
	const q = `
SELECT l.reads_per_tool_hourly, l.ops_per_token_hourly
  FROM workspaces w LEFT JOIN external_limits l ON l.workspace_id = w.id
 WHERE w.id = $1`
	var l gateway.ExternalLimits
	err := s.db.QueryRowContext(ctx, q, workspaceID).Scan(&l.ReadsPerToolHourly, &l.OpsPerTokenHourly)
	return l, translate(err, msgs{notFound: sqlcore.WorkspaceNotFound(workspaceID)})
}

// lockWorkspace takes a row lock on the workspace for the rest of tx, or
// returns ENotFound when it does not exist. FOR NO KEY UPDATE does not block
// concurrent inserts of children (members, tasks) that reference it.
func lockWorkspace(ctx context.Context, tx *sqlx.Tx, workspaceID string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM workspaces WHERE id = $1 FOR NO KEY UPDATE`, workspaceID).Scan(&one)
	return translate(err, msgs{notFound: sqlcore.WorkspaceNotFound(workspaceID)})
}
