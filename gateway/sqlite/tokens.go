package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlcore"
)

// tokenColumns are read into tokenRow, in this order.
const tokenColumns = `fingerprint, workspace_id, label, scopes, status, token_hash, created_at, last_used_at`

// tokenRow is an api_tokens row as SQLite returns it.
type tokenRow struct {
	Fingerprint string         `db:"fingerprint"`
	WorkspaceID string         `db:"workspace_id"`
	Label       string         `db:"label"`
	Scopes      []byte         `db:"scopes"`
	Status      string         `db:"status"`
	Hash        string         `db:"token_hash"`
	CreatedAt   string         `db:"created_at"`
	LastUsedAt  sql.NullString `db:"last_used_at"`
}

// token converts the row; withHash false leaves Hash empty for listings.
func (r tokenRow) token(withHash bool) (gateway.APIToken, error) {
	t := gateway.APIToken{Fingerprint: r.Fingerprint, WorkspaceID: r.WorkspaceID, Label: r.Label, Status: r.Status}
	if withHash {
		t.Hash = r.Hash
	}
	var err error
	if t.CreatedAt, err = parseTime(r.CreatedAt); err != nil {
		return t, err
	}
	if r.LastUsedAt.Valid {
		at, err := parseTime(r.LastUsedAt.String)
		if err != nil {
			return t, err
		}
		t.LastUsedAt = &at
	}
	if err := json.Unmarshal(r.Scopes, &t.Scopes); err != nil {
		return t, gateway.Wrap(gateway.EInternal, err, "audit store returned unreadable token scopes")
	}
	return t, nil
}

// CreateAPIToken stores t, whose Fingerprint and Hash (SHA-256 of the scmt_
// value, never the value itself; docs/requirements.md#api-tokens) the caller has set. An
// empty Status becomes "active"; a zero CreatedAt becomes now; both are
// written back into t (CreatedAt in UTC, to the microsecond). Errors:
// ENotFound for an unknown workspace, EConflict when the fingerprint or
// hash is already stored.
func (s *Store) CreateAPIToken(ctx context.Context, t *gateway.APIToken) error {
	if t.Status == "" {
		t.Status = "active"
	}
	created := now()
	if !t.CreatedAt.IsZero() {
		created = t.CreatedAt.UTC().Truncate(time.Microsecond)
	}
	const q = `
INSERT INTO api_tokens (fingerprint, workspace_id, label, scopes, status, token_hash, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?)`
	_, err := s.w.ExecContext(ctx, q, t.Fingerprint, t.WorkspaceID, t.Label, sqlcore.JSONList(t.Scopes),
		t.Status, t.Hash, fmtTime(created))
	if err != nil {
		return translate(err, msgs{
			notFound: sqlcore.WorkspaceNotFound(t.WorkspaceID),
			conflict: "an api token with this fingerprint or hash already exists; generate a new token",
		})
	}
	t.CreatedAt = created
	return nil
}

// ListAPITokens returns the tokens of workspaceID, oldest first, revoked
// ones included, without their hashes. Errors: ENotFound for an unknown
// workspace.
func (s *Store) ListAPITokens(ctx context.Context, workspaceID string) ([]gateway.APIToken, error) {
	var rows []tokenRow
	q := `SELECT ` + tokenColumns + ` FROM api_tokens WHERE workspace_id = ? ORDER BY created_at, fingerprint`
	if err := s.r.SelectContext(ctx, &rows, q, workspaceID); err != nil {
		return nil, translate(err, msgs{})
	}
	if len(rows) == 0 {
		// Tell "no tokens" from "no workspace" only when it matters.
		var one int
		err := s.r.QueryRowContext(ctx, `SELECT 1 FROM workspaces WHERE id = ?`, workspaceID).Scan(&one)
		return []gateway.APIToken{}, translate(err, msgs{notFound: sqlcore.WorkspaceNotFound(workspaceID)})
	}
	out := make([]gateway.APIToken, 0, len(rows))
	for _, r := range rows {
		t, err := r.token(false)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// RevokeAPIToken marks the token revoked at once (docs/requirements.md#api-tokens);
// revoking a revoked token succeeds and keeps the first revocation time.
// Errors: ENotFound for an unknown fingerprint.
func (s *Store) RevokeAPIToken(ctx context.Context, fingerprint string) error {
	const q = `UPDATE api_tokens SET status = 'revoked', revoked_at = COALESCE(revoked_at, ?)
WHERE fingerprint = ?`
	res, err := s.w.ExecContext(ctx, q, fmtTime(now()), fingerprint)
	return s.ExpectOne(res, err, sqlcore.TokenNotFound(fingerprint))
}

// APITokenByHash returns the token whose SHA-256 hash is hash, whatever its
// status (the caller refuses revoked tokens), with Hash set. Errors:
// ENotFound when no token has this hash; the message names no token, since
// the caller is not yet authenticated.
func (s *Store) APITokenByHash(ctx context.Context, hash string) (*gateway.APIToken, error) {
	var r tokenRow
	q := `SELECT ` + tokenColumns + ` FROM api_tokens WHERE token_hash = ?`
	if err := s.r.GetContext(ctx, &r, q, hash); err != nil {
		return nil, translate(err, msgs{notFound: "api token not found; create one with POST /admin/v1/workspaces/{ws}/api-tokens"})
	}
	t, err := r.token(true)
	return &t, err
}

// TouchAPIToken records that the token was used at time at (stored in UTC
// to the microsecond); it never moves last_used_at backwards. Errors:
// ENotFound for an unknown fingerprint.
func (s *Store) TouchAPIToken(ctx context.Context, fingerprint string, at time.Time) error {
	// Stored times sort as text, so max() on the text is the later time;
	// coalesce because SQLite's max() of a NULL is NULL.
	const q = `UPDATE api_tokens SET last_used_at = max(coalesce(last_used_at, ''), ?) WHERE fingerprint = ?`
	res, err := s.w.ExecContext(ctx, q, fmtTime(at), fingerprint)
	return s.ExpectOne(res, err, sqlcore.TokenNotFound(fingerprint))
}
