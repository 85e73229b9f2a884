package postgres

import (
	"context"
	"database/sql"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
)

// insertKey inserts a key unless its workspace + task + tool + key exists; the unique
// index makes a concurrent claim of the same key wait for the first
// transaction and then do nothing, so exactly one caller owns a key.
const insertKey = `
INSERT INTO mcp_idempotency_keys (workspace_id, task_id, tool_name, key, input_hash)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (workspace_id, task_id, tool_name, key) DO NOTHING`

const selectKey = `
SELECT input_hash, result, created_at FROM mcp_idempotency_keys
WHERE workspace_id = $1 AND task_id = $2 AND tool_name = $3 AND key = $4`

// claimKey claims rec in tx (Reserve): nil when this call now owns the
// key, else the row claimed before, unchanged. ENotFound when rec's
// workspace does not exist.
func claimKey(ctx context.Context, tx *sqlx.Tx, rec *gateway.IdempotencyRecord) (*gateway.IdempotencyRecord, error) {
	res, err := tx.ExecContext(ctx, insertKey, rec.WorkspaceID, rec.TaskID, rec.Tool, rec.Key, rec.InputHash)
	if err != nil {
		return nil, translate(err, msgs{notFound: workspaceNotFound(rec.WorkspaceID)})
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return nil, translate(err, msgs{})
	}
	got := *rec
	var result []byte
	err = tx.QueryRowxContext(ctx, selectKey, rec.WorkspaceID, rec.TaskID, rec.Tool, rec.Key).
		Scan(&got.InputHash, &result, &got.CreatedAt)
	if isNoRows(err) { // released between the insert and the read
		return nil, gateway.Errorf(gateway.EConflict, "idempotency_key %q of %s changed while this call claimed it; retry", rec.Key, rec.Tool)
	}
	if err != nil {
		return nil, translate(err, msgs{})
	}
	got.Result = result
	return &got, nil
}

// SaveIdempotencyResult implements server.IdempotencyStore.
func (s *Store) SaveIdempotencyResult(ctx context.Context, rec *gateway.IdempotencyRecord) error {
	const q = `UPDATE mcp_idempotency_keys SET result = $5
WHERE workspace_id = $1 AND task_id = $2 AND tool_name = $3 AND key = $4`
	res, err := s.db.ExecContext(ctx, q, rec.WorkspaceID, rec.TaskID, rec.Tool, rec.Key, string(rec.Result))
	return affectedOne(res, err, "idempotency_key "+rec.Key+" of "+rec.Tool+" is not claimed")
}

// ReleaseIdempotencyKey implements server.IdempotencyStore.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, rec *gateway.IdempotencyRecord) error {
	const q = `DELETE FROM mcp_idempotency_keys
WHERE workspace_id = $1 AND task_id = $2 AND tool_name = $3 AND key = $4 AND result IS NULL`
	_, err := s.db.ExecContext(ctx, q, rec.WorkspaceID, rec.TaskID, rec.Tool, rec.Key)
	return translate(err, msgs{})
}

// DeleteEndedIdempotencyKeys implements server.IdempotencyStore.
func (s *Store) DeleteEndedIdempotencyKeys(ctx context.Context, before time.Time) (int64, error) {
	const q = `DELETE FROM mcp_idempotency_keys k USING tasks t
WHERE t.workspace_id = k.workspace_id AND t.id = k.task_id
  AND t.status IN ('completed', 'failed', 'cancelled') AND t.updated_at <= $1`
	return s.deleteRows(ctx, q, before.UTC())
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
