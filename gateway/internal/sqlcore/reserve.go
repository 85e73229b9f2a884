package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
)

// Reserve carries out r (pipeline.Store.Reserve): without slots or claim,
// RecordAudit's one INSERT; without a claim on a dialect whose
// reservation statement is atomic alone (Dialect.AtomicTakeSlots), that
// statement in autocommit; otherwise BEGIN (on W; BEGIN IMMEDIATE on
// SQLite), the claim when r.Claim is set, the dialect's reservation
// statement (Dialect.TakeSlots) or, without slots, the audit INSERT alone,
// and COMMIT. A key claimed before or a full slot rolls everything back,
// so nothing is written. A commit whose outcome is unknown (connection
// lost during COMMIT) is reported as EUnavailable: the call is refused,
// and the slots may stay taken — the limiter errs on the side of fewer
// calls.
func (c *Core) Reserve(ctx context.Context, r gateway.Reservation) (gateway.ReservationResult, error) {
	var res gateway.ReservationResult
	if err := c.checkEvent(r.Event); err != nil {
		return res, err
	}
	audit, err := c.Audit.Get(ctx, c.W, c.DriverError)
	if err != nil {
		return res, err
	}
	if len(r.Slots) == 0 && r.Claim == nil {
		err = audit.QueryRowContext(ctx, c.AuditArgs(r.Event)...).Scan(&res.AuditID)
		return res, c.DriverError(err)
	}
	// Prepare before BEGIN: see Dialect.PrepareReserve.
	if err := c.D.PrepareReserve(ctx); err != nil {
		return res, err
	}
	if r.Claim == nil && c.D.AtomicTakeSlots {
		return c.D.TakeSlots(ctx, nil, c.AuditArgs(r.Event), r.Slots)
	}
	tx, err := c.W.BeginTxx(ctx, nil)
	if err != nil {
		return res, c.DriverError(err)
	}
	res, err = c.reserveIn(ctx, tx, r, audit)
	if err != nil || res.AuditID == 0 {
		_ = tx.Rollback()
		return res, err
	}
	if err := tx.Commit(); err != nil {
		return gateway.ReservationResult{}, c.DriverError(err)
	}
	return res, nil
}

// reserveIn is Reserve's work inside tx; audit is the prepared audit
// INSERT.
func (c *Core) reserveIn(ctx context.Context, tx *sqlx.Tx, r gateway.Reservation, audit *sql.Stmt) (gateway.ReservationResult, error) {
	if r.Claim != nil {
		prior, err := c.claimKey(ctx, tx, r.Claim)
		if err != nil || prior != nil {
			return gateway.ReservationResult{Prior: prior}, err
		}
	}
	if len(r.Slots) == 0 {
		var res gateway.ReservationResult
		err := tx.StmtContext(ctx, audit).QueryRowContext(ctx, c.AuditArgs(r.Event)...).Scan(&res.AuditID)
		return res, c.DriverError(err)
	}
	return c.D.TakeSlots(ctx, tx, c.AuditArgs(r.Event), r.Slots)
}

// insertKey inserts a key unless its workspace + task + tool + key exists.
// On PostgreSQL the unique index makes a concurrent claim of the same key
// wait for the first transaction and then do nothing; on SQLite claims run
// on the single write connection and never interleave. Either way exactly
// one caller owns a key.
const insertKey = `
INSERT INTO mcp_idempotency_keys (workspace_id, task_id, tool_name, key, input_hash, created_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (workspace_id, task_id, tool_name, key) DO NOTHING`

const selectKey = `
SELECT input_hash, result, created_at FROM mcp_idempotency_keys
WHERE workspace_id = ? AND task_id = ? AND tool_name = ? AND key = ?`

// claimKey claims rec in tx: nil when this call now owns the key, else the
// row claimed before, unchanged. ENotFound when rec's workspace does not
// exist.
func (c *Core) claimKey(ctx context.Context, tx *sqlx.Tx, rec *gateway.IdempotencyRecord) (*gateway.IdempotencyRecord, error) {
	res, err := tx.ExecContext(ctx, c.Q(insertKey), rec.WorkspaceID, rec.TaskID, rec.Tool, rec.Key, rec.InputHash, c.D.Time(Now()))
	if err != nil {
		return nil, c.Translate(err, Msgs{NotFound: WorkspaceNotFound(rec.WorkspaceID)})
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return nil, c.DriverError(err)
	}
	got := *rec
	var result sql.NullString
	var created Time
	err = tx.QueryRowxContext(ctx, c.Q(selectKey), rec.WorkspaceID, rec.TaskID, rec.Tool, rec.Key).
		Scan(&got.InputHash, &result, &created)
	if errors.Is(err, sql.ErrNoRows) { // released between the insert and the read
		return nil, gateway.Errorf(gateway.EConflict, "idempotency_key %q of %s changed while this call claimed it; retry", rec.Key, rec.Tool)
	}
	if err != nil {
		return nil, c.DriverError(err)
	}
	if result.Valid {
		got.Result = []byte(result.String)
	}
	got.CreatedAt = created.Time
	return &got, nil
}

// SaveIdempotencyResult implements pipeline.IdempotencyStore.
func (c *Core) SaveIdempotencyResult(ctx context.Context, rec *gateway.IdempotencyRecord) error {
	q := c.Q(`UPDATE mcp_idempotency_keys SET result = ?
WHERE workspace_id = ? AND task_id = ? AND tool_name = ? AND key = ?`)
	res, err := c.W.ExecContext(ctx, q, string(rec.Result), rec.WorkspaceID, rec.TaskID, rec.Tool, rec.Key)
	return c.ExpectOne(res, err, "idempotency_key "+rec.Key+" of "+rec.Tool+" is not claimed")
}

// ReleaseIdempotencyKey implements pipeline.IdempotencyStore.
func (c *Core) ReleaseIdempotencyKey(ctx context.Context, rec *gateway.IdempotencyRecord) error {
	q := c.Q(`DELETE FROM mcp_idempotency_keys
WHERE workspace_id = ? AND task_id = ? AND tool_name = ? AND key = ? AND result IS NULL`)
	_, err := c.W.ExecContext(ctx, q, rec.WorkspaceID, rec.TaskID, rec.Tool, rec.Key)
	return c.DriverError(err)
}

// DeleteEndedIdempotencyKeys implements pipeline.IdempotencyStore.
func (c *Core) DeleteEndedIdempotencyKeys(ctx context.Context, before time.Time) (int64, error) {
	const q = `DELETE FROM mcp_idempotency_keys WHERE EXISTS (
  SELECT 1 FROM tasks t
  WHERE t.workspace_id = mcp_idempotency_keys.workspace_id AND t.id = mcp_idempotency_keys.task_id
    AND t.status IN ('completed', 'failed', 'cancelled') AND t.updated_at <= ?)`
	return c.Delete(ctx, q, c.D.Time(before))
}
