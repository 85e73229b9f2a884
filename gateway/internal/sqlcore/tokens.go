package sqlcore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// tokenColumns are read into tokenRow, in this order.
const tokenColumns = `fingerprint, workspace_id, label, scopes, status, token_hash, created_at, last_used_at`

// tokenRow is an api_tokens row.
type tokenRow struct {
	Fingerprint string   `db:"fingerprint"`
	WorkspaceID string   `db:"workspace_id"`
	Label       string   `db:"label"`
	Scopes      []byte   `db:"scopes"`
	Status      string   `db:"status"`
	Hash        string   `db:"token_hash"`
	CreatedAt   Time     `db:"created_at"`
	LastUsedAt  NullTime `db:"last_used_at"`
}

// token converts the row; withHash false leaves Hash empty for listings.
func (r tokenRow) token(withHash bool) (gateway.APIToken, error) {
	t := gateway.APIToken{Fingerprint: r.Fingerprint, WorkspaceID: r.WorkspaceID, Label: r.Label,
		Status: r.Status, CreatedAt: r.CreatedAt.Time}
	if withHash {
		t.Hash = r.Hash
	}
	if r.LastUsedAt.Valid {
		at := r.LastUsedAt.Time.Time
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
func (c *Core) CreateAPIToken(ctx context.Context, t *gateway.APIToken) error {
	if t.Status == "" {
		t.Status = "active"
	}
	created, at := c.now()
	if !t.CreatedAt.IsZero() {
		created, at = "?", []any{c.Time(t.CreatedAt)}
	}
	q := `
INSERT INTO api_tokens (fingerprint, workspace_id, label, scopes, status, token_hash, created_at)
VALUES (?, ?, ?, ?, ?, ?, ` + created + `)
RETURNING created_at`
	args := append([]any{t.Fingerprint, t.WorkspaceID, t.Label, JSONList(t.Scopes), t.Status, t.Hash}, at...)
	var stored Time
	if err := c.W.QueryRowContext(ctx, c.Q(q), args...).Scan(&stored); err != nil {
		return c.Translate(err, Msgs{
			NotFound: WorkspaceNotFound(t.WorkspaceID),
			Conflict: "an api token with this fingerprint or hash already exists; generate a new token",
		})
	}
	t.CreatedAt = stored.Time
	return nil
}

// ListAPITokens returns the tokens of workspaceID, oldest first, revoked
// ones included, without their hashes. Errors: ENotFound for an unknown
// workspace.
func (c *Core) ListAPITokens(ctx context.Context, workspaceID string) ([]gateway.APIToken, error) {
	var rows []tokenRow
	q := `SELECT ` + tokenColumns + ` FROM api_tokens WHERE workspace_id = ? ORDER BY created_at, fingerprint`
	if err := c.R.SelectContext(ctx, &rows, c.Q(q), workspaceID); err != nil {
		return nil, c.DriverError(err)
	}
	if len(rows) == 0 {
		// Tell "no tokens" from "no workspace" only when it matters.
		return []gateway.APIToken{}, c.needWorkspace(ctx, c.R, workspaceID)
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

// APIToken returns the token with this fingerprint, revoked ones
// included, without its hash. Errors: ENotFound for an unknown
// fingerprint.
func (c *Core) APIToken(ctx context.Context, fingerprint string) (*gateway.APIToken, error) {
	var r tokenRow
	q := `SELECT ` + tokenColumns + ` FROM api_tokens WHERE fingerprint = ?`
	if err := c.R.GetContext(ctx, &r, c.Q(q), fingerprint); err != nil {
		return nil, c.Translate(err, Msgs{NotFound: TokenNotFound(fingerprint)})
	}
	t, err := r.token(false)
	return &t, err
}

// RevokeAPIToken marks the token revoked at once (docs/requirements.md#api-tokens);
// revoking a revoked token succeeds and keeps the first revocation time.
// Errors: ENotFound for an unknown fingerprint.
func (c *Core) RevokeAPIToken(ctx context.Context, fingerprint string) error {
	now, at := c.now()
	q := `UPDATE api_tokens SET status = 'revoked', revoked_at = COALESCE(revoked_at, ` + now + `)
WHERE fingerprint = ?`
	res, err := c.W.ExecContext(ctx, c.Q(q), append(at, fingerprint)...)
	return c.ExpectOne(res, err, TokenNotFound(fingerprint))
}

// APITokenByHash returns the token whose SHA-256 hash is hash, whatever its
// status (the caller refuses revoked tokens), with Hash set. Errors:
// ENotFound when no token has this hash; the message names no token, since
// the caller is not yet authenticated.
func (c *Core) APITokenByHash(ctx context.Context, hash string) (*gateway.APIToken, error) {
	var r tokenRow
	q := `SELECT ` + tokenColumns + ` FROM api_tokens WHERE token_hash = ?`
	if err := c.R.GetContext(ctx, &r, c.Q(q), hash); err != nil {
		return nil, c.Translate(err, Msgs{NotFound: "api token not found; create one with POST /admin/v1/workspaces/{ws}/api-tokens"})
	}
	t, err := r.token(true)
	return &t, err
}

// TouchAPIToken records that the token was used at time at (UTC, stored to
// the microsecond); it never moves last_used_at backwards
// (Dialect.Later). Errors: ENotFound for an unknown fingerprint.
func (c *Core) TouchAPIToken(ctx context.Context, fingerprint string, at time.Time) error {
	q := `UPDATE api_tokens SET last_used_at = ` + fmt.Sprintf(c.D.Later, "last_used_at") + ` WHERE fingerprint = ?`
	res, err := c.W.ExecContext(ctx, c.Q(q), c.Time(at), fingerprint)
	return c.ExpectOne(res, err, TokenNotFound(fingerprint))
}
