package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
)

// insertKey inserts a key unless its workspace + task + tool + key exists. Claims run in
// the reservation transaction on the single write connection, so two
// claims of one key never interleave.
const insertKey = `
INSERT INTO mcp_idempotency_keys (workspace_id, task_id, tool_name, key, input_hash, created_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (workspace_id, task_id, tool_name, key) DO NOTHING`

const selectKey = `
SELECT input_hash, result, created_at FROM mcp_idempotency_keys
WHERE workspace_id = ? AND task_id = ? AND tool_name = ? AND key = ?`

// claimKey claims rec in tx (Reserve): nil when this call now owns the
// key, else the row claimed before, unchanged. ENotFound when rec's
// workspace does not exist.
func claimKey(ctx context.Context, tx *sqlx.Tx, rec *gateway.IdempotencyRecord) (*gateway.IdempotencyRecord, error) {
	res, err := tx.ExecContext(ctx, insertKey, rec.WorkspaceID, rec.TaskID, rec.Tool, rec.Key, rec.InputHash, fmtTime(now()))
	if err != nil {
		return nil, translate(err, msgs{notFound: workspaceNotFound(rec.WorkspaceID)})
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return nil, translate(err, msgs{})
	}
	got := *rec
	var result sql.NullString
	var created string
	err = tx.QueryRowxContext(ctx, selectKey, rec.WorkspaceID, rec.TaskID, rec.Tool, rec.Key).
		Scan(&got.InputHash, &result, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, gateway.Errorf(gateway.EConflict, "idempotency_key %q of %s changed while this call claimed it; retry", rec.Key, rec.Tool)
	}
	if err != nil {
		return nil, translate(err, msgs{})
	}
	if result.Valid {
		got.Result = []byte(result.String)
	}
	if got.CreatedAt, err = parseTime(created); err != nil {
		return nil, err
	}
	return &got, nil
}

// SaveIdempotencyResult implements server.IdempotencyStore.
func (s *Store) SaveIdempotencyResult(ctx context.Context, rec *gateway.IdempotencyRecord) error {
	const q = `UPDATE mcp_idempotency_keys SET result = ?
WHERE workspace_id = ? AND task_id = ? AND tool_name = ? AND key = ?`
	res, err := s.w.ExecContext(ctx, q, string(rec.Result), rec.WorkspaceID, rec.TaskID, rec.Tool, rec.Key)
	return affectedOne(res, err, "idempotency_key "+rec.Key+" of "+rec.Tool+" is not claimed")
}

// ReleaseIdempotencyKey implements server.IdempotencyStore.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, rec *gateway.IdempotencyRecord) error {
	const q = `DELETE FROM mcp_idempotency_keys
WHERE workspace_id = ? AND task_id = ? AND tool_name = ? AND key = ? AND result IS NULL`
	_, err := s.w.ExecContext(ctx, q, rec.WorkspaceID, rec.TaskID, rec.Tool, rec.Key)
	return translate(err, msgs{})
}

// DeleteEndedIdempotencyKeys implements server.IdempotencyStore. Times are
// stored as fixed-width UTC text, so text order is time order.
func (s *Store) DeleteEndedIdempotencyKeys(ctx context.Context, before time.Time) (int64, error) {
	const q = `DELETE FROM mcp_idempotency_keys WHERE EXISTS (
  SELECT 1 FROM tasks t
  WHERE t.workspace_id = mcp_idempotency_keys.workspace_id AND t.id = mcp_idempotency_keys.task_id
    AND t.status IN ('completed', 'failed', 'cancelled') AND t.updated_at <= ?)`
	return s.deleteRows(ctx, q, fmtTime(before))
}

// affectedOne translates err, and reports ENotFound with notFound when the
// statement changed no row.
func affectedOne(res sql.Result, err error, notFound string) error {
	if err != nil {
		return translate(err, msgs{})
	}
	n, err := res.RowsAffected()
	if err != nil {
		return translate(err, msgs{})
	}
	if n == 0 {
		return gateway.Errorf(gateway.ENotFound, "%s", notFound)
	}
	return nil
}
