package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlstmt"
)

// rateStatements are the hot-path statements of the rate-limit counters,
// all on the write connection.
type rateStatements struct {
	add prepared // addCount
}

func newRateStatements() *rateStatements {
	return &rateStatements{add: prepared{Query: addCount}}
}

func (r *rateStatements) close() error { return r.add.Close() }

// addCount creates or bumps a counter in one statement. Every write goes
// through the store's single write connection, and Reserve holds it (BEGIN
// IMMEDIATE) for the whole reservation, so reservations never interleave.
const addCount = `
INSERT INTO rate_limit_counters (bucket_key, window_start, count, expires_at, task_workspace_id, task_id)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (bucket_key, window_start) DO UPDATE SET count = count + excluded.count,
    task_workspace_id = coalesce(task_workspace_id, excluded.task_workspace_id),
    task_id = coalesce(task_id, excluded.task_id)
RETURNING count`

const selectCount = `SELECT count FROM rate_limit_counters WHERE bucket_key = ? AND window_start = ?`

// Reserve implements server.Store.Reserve: BEGIN IMMEDIATE on the write
// connection; the claim, when r.Claim is set; the audit row; one addCount
// per slot, in order, stopping at the first full one; COMMIT, or ROLLBACK
// when a slot was full or the key was claimed before (the rollback gives
// back the slots taken before the full one).
func (s *Store) Reserve(ctx context.Context, r gateway.Reservation) (gateway.ReservationResult, error) {
	ev := r.Event
	if len(ev.Arguments) > 0 && !json.Valid(ev.Arguments) {
		return gateway.ReservationResult{}, errArgumentsNotJSON()
	}
	normalizeEvent(ev)
	// Prepare before the transaction takes the only write connection.
	audit, err := s.auditStmt.Get(ctx, s.w, driverError)
	if err != nil {
		return gateway.ReservationResult{}, err
	}
	add, err := s.rate.add.Get(ctx, s.w, driverError)
	if err != nil {
		return gateway.ReservationResult{}, err
	}
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return gateway.ReservationResult{}, translate(err, msgs{})
	}
	res, err := reserveIn(ctx, tx, r, audit, add)
	if err != nil || res.AuditID == 0 {
		_ = tx.Rollback()
		return res, err
	}
	if err := tx.Commit(); err != nil {
		return gateway.ReservationResult{}, translate(err, msgs{})
	}
	return res, nil
}

// reserveIn is Reserve's work inside tx; audit and add are the prepared
// insertAudit and addCount.
func reserveIn(ctx context.Context, tx *sqlx.Tx, r gateway.Reservation, audit, add *sql.Stmt) (gateway.ReservationResult, error) {
	if r.Claim != nil {
		prior, err := claimKey(ctx, tx, r.Claim)
		if err != nil || prior != nil {
			return gateway.ReservationResult{Prior: prior}, err
		}
	}
	var id int64
	if err := tx.StmtContext(ctx, audit).QueryRowContext(ctx, auditArgs(r.Event)...).Scan(&id); err != nil {
		return gateway.ReservationResult{}, translate(err, msgs{})
	}
	add = tx.StmtContext(ctx, add)
	for i, slot := range r.Slots {
		n, err := addSlot(ctx, add, slot, 1)
		if err != nil {
			return gateway.ReservationResult{}, err
		}
		if n > slot.Limit {
			return gateway.ReservationResult{Full: i + 1, Used: n - 1}, nil
		}
	}
	return gateway.ReservationResult{AuditID: id}, nil
}

// addSlot adds delta to slot's counter with the addCount statement stmt,
// creating it (with slot's task, if any) at delta.
func addSlot(ctx context.Context, stmt *sql.Stmt, slot gateway.Slot, delta int64) (int64, error) {
	var exp, workspace, task any
	if !slot.Expires.IsZero() {
		exp = fmtTime(slot.Expires)
	}
	if slot.TaskID != "" {
		workspace, task = slot.WorkspaceID, slot.TaskID
	}
	var n int64
	err := stmt.QueryRowContext(ctx, slot.Key, fmtTime(slot.Window), delta, exp, workspace, task).Scan(&n)
	return n, translate(err, msgs{})
}

// AddRateCount implements ratelimit.Counters with one upsert (addCount).
func (s *Store) AddRateCount(ctx context.Context, key string, window, expires time.Time, delta int64) (int64, error) {
	stmt, err := s.rate.add.Get(ctx, s.w, driverError)
	if err != nil {
		return 0, err
	}
	return addSlot(ctx, stmt, gateway.Slot{Key: key, Window: window, Expires: expires}, delta)
}

// RateCount implements ratelimit.Counters through the read pool; a missing
// counter is 0.
func (s *Store) RateCount(ctx context.Context, key string, window time.Time) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, selectCount, key, fmtTime(window)).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return n, translate(err, msgs{})
}

// DeleteRateCount implements ratelimit.Counters.
func (s *Store) DeleteRateCount(ctx context.Context, key string, window time.Time) error {
	const q = `DELETE FROM rate_limit_counters WHERE bucket_key = ? AND window_start = ?`
	_, err := s.w.ExecContext(ctx, q, key, fmtTime(window))
	return translate(err, msgs{})
}

// DeleteEndedTaskCounts implements ratelimit.Counters.
func (s *Store) DeleteEndedTaskCounts(ctx context.Context, before time.Time) (int64, error) {
	const q = `DELETE FROM rate_limit_counters WHERE task_id IS NOT NULL AND EXISTS (
    SELECT 1 FROM tasks t WHERE t.workspace_id = rate_limit_counters.task_workspace_id
      AND t.id = rate_limit_counters.task_id
      AND t.status IN ('completed', 'failed', 'cancelled') AND t.updated_at <= ?)`
	return s.deleteRows(ctx, q, fmtTime(before))
}

// DeleteExpiredRateCounts implements ratelimit.Counters; per-task counters
// (no expiry) are never deleted.
func (s *Store) DeleteExpiredRateCounts(ctx context.Context, before time.Time) (int64, error) {
	const q = `DELETE FROM rate_limit_counters WHERE expires_at <= ?`
	return s.deleteRows(ctx, q, fmtTime(before))
}

// deleteRows runs the DELETE q on the write connection and returns how
// many rows it removed.
func (s *Store) deleteRows(ctx context.Context, q string, args ...any) (int64, error) {
	return sqlstmt.Delete(ctx, s.w, driverError, q, args...)
}
