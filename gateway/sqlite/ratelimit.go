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
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
)

var _ ratelimit.Counters = (*Store)(nil)

// rateStatements are the hot-path statements of the rate-limit counters.
type rateStatements struct {
	add   prepared // addCount, on w
	count prepared // selectCount, on w (inside reservations) — reads outside use r
}

func newRateStatements() *rateStatements {
	return &rateStatements{add: prepared{Query: addCount}, count: prepared{Query: selectCount}}
}

func (r *rateStatements) close() error { return errors.Join(r.add.Close(), r.count.Close()) }

// addCount creates or bumps a counter in one statement. Every write goes
// through the store's single write connection, and ReserveAndRecord holds
// it (BEGIN IMMEDIATE) for the whole reservation, so reservations never
// interleave.
const addCount = `
INSERT INTO rate_limit_counters (bucket_key, window_start, count, expires_at, task_workspace_id, task_id)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (bucket_key, window_start) DO UPDATE SET count = count + excluded.count,
    task_workspace_id = coalesce(task_workspace_id, excluded.task_workspace_id),
    task_id = coalesce(task_id, excluded.task_id)
RETURNING count`

const selectCount = `SELECT count FROM rate_limit_counters WHERE bucket_key = ? AND window_start = ?`

// txKey carries the reservation transaction of ReserveAndRecord in a ctx.
type txKey struct{}

// reservation is the value under txKey: the transaction and the store it
// belongs to, so that a ctx from one store is never used by another.
type reservation struct {
	store *Store
	tx    *sqlx.Tx
}

// txFrom returns the reservation transaction ctx carries for s, or nil.
// Counter methods must use it when present: the transaction holds the only
// write connection, so going to the pool instead would wait for ever.
func (s *Store) txFrom(ctx context.Context) *sqlx.Tx {
	if r, ok := ctx.Value(txKey{}).(*reservation); ok && r.store == s {
		return r.tx
	}
	return nil
}

// ReserveAndRecord implements server.Store.ReserveAndRecord: BEGIN
// IMMEDIATE on the write connection, insert the audit row, run reserve,
// COMMIT. On any error the transaction is rolled back and ev.ID is 0;
// reserve's *gateway.Error passes through unchanged.
func (s *Store) ReserveAndRecord(ctx context.Context, ev *gateway.AuditEvent, reserve func(ctx context.Context) error) error {
	if len(ev.Arguments) > 0 && !json.Valid(ev.Arguments) {
		return errArgumentsNotJSON()
	}
	normalizeEvent(ctx, ev)
	audit, err := s.prepareReservation(ctx)
	if err != nil {
		return err
	}
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return translate(err, msgs{})
	}
	err = tx.StmtContext(ctx, audit).QueryRowContext(ctx, auditArgs(ev)...).Scan(&ev.ID)
	if err == nil {
		err = reserve(context.WithValue(ctx, txKey{}, &reservation{store: s, tx: tx}))
	}
	if err == nil {
		err = tx.Commit()
	} else {
		_ = tx.Rollback()
	}
	if err != nil {
		ev.ID = 0
		return translate(err, msgs{})
	}
	return nil
}

// writeStmt returns p prepared on the write connection, bound to ctx's
// reservation transaction when there is one.
func (s *Store) writeStmt(ctx context.Context, p *prepared) (*sql.Stmt, error) {
	stmt, err := p.Get(ctx, s.w, driverError)
	if err != nil {
		return nil, err
	}
	if tx := s.txFrom(ctx); tx != nil {
		return tx.StmtContext(ctx, stmt), nil
	}
	return stmt, nil
}

// prepareReservation prepares the statements a reservation uses before it
// begins: preparing takes a connection from the pool, which inside the
// transaction could wait for ever for the one the transaction holds (every
// connection of a busy pool may be a reservation doing the same). It
// returns the audit insert.
func (s *Store) prepareReservation(ctx context.Context) (*sql.Stmt, error) {
	if _, err := s.rate.add.Get(ctx, s.w, driverError); err != nil {
		return nil, err
	}
	if _, err := s.rate.count.Get(ctx, s.w, driverError); err != nil {
		return nil, err
	}
	return s.auditStmt.Get(ctx, s.w, driverError)
}

// AddRateCount implements ratelimit.Counters with one upsert (addCount).
func (s *Store) AddRateCount(ctx context.Context, key string, window, expires time.Time, delta int64) (int64, error) {
	return s.addCount(ctx, ratelimit.CountRequest{Key: key, Window: window, Expires: expires}, delta)
}

// addCount adds delta to q's counter, creating it (with q's task, if any)
// at delta.
func (s *Store) addCount(ctx context.Context, q ratelimit.CountRequest, delta int64) (int64, error) {
	stmt, err := s.writeStmt(ctx, &s.rate.add)
	if err != nil {
		return 0, err
	}
	var exp, workspace, task any
	if !q.Expires.IsZero() {
		exp = fmtTime(q.Expires)
	}
	if q.TaskID != "" {
		workspace, task = q.WorkspaceID, q.TaskID
	}
	var n int64
	err = stmt.QueryRowContext(ctx, q.Key, fmtTime(q.Window), delta, exp, workspace, task).Scan(&n)
	return n, translate(err, msgs{})
}

// RateCount implements ratelimit.Counters; a missing counter is 0. Inside a
// reservation it reads through the transaction (and so sees its own
// changes); outside, through the read pool.
func (s *Store) RateCount(ctx context.Context, key string, window time.Time) (int64, error) {
	var n int64
	var err error
	if s.txFrom(ctx) != nil {
		var stmt *sql.Stmt
		if stmt, err = s.writeStmt(ctx, &s.rate.count); err != nil {
			return 0, err
		}
		err = stmt.QueryRowContext(ctx, key, fmtTime(window)).Scan(&n)
	} else {
		err = s.r.QueryRowContext(ctx, selectCount, key, fmtTime(window)).Scan(&n)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return n, translate(err, msgs{})
}

// ReserveCounts implements ratelimit.Counters: one addCount per counter in
// order, and at the first full one an addCount of -1 for each slot taken.
// Outside a reservation it runs in a write transaction of its own, so it
// is all or nothing there too.
func (s *Store) ReserveCounts(ctx context.Context, reqs []ratelimit.CountRequest) ([]int64, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	if s.txFrom(ctx) != nil {
		return s.reserveCounts(ctx, reqs)
	}
	// Prepare before the transaction takes the only write connection.
	if _, err := s.rate.add.Get(ctx, s.w, driverError); err != nil {
		return nil, err
	}
	var counts []int64
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		counts, err = s.reserveCounts(context.WithValue(ctx, txKey{}, &reservation{store: s, tx: tx}), reqs)
		return err
	})
	return counts, err
}

// reserveCounts is ReserveCounts inside ctx's transaction.
func (s *Store) reserveCounts(ctx context.Context, reqs []ratelimit.CountRequest) ([]int64, error) {
	counts := make([]int64, 0, len(reqs))
	for i, q := range reqs {
		n, err := s.addCount(ctx, q, 1)
		if err != nil {
			return nil, err
		}
		counts = append(counts, n)
		if n <= q.Limit {
			continue
		}
		for _, taken := range reqs[:i+1] {
			if _, err := s.addCount(ctx, taken, -1); err != nil {
				return nil, err
			}
		}
		break
	}
	return counts, nil
}

// DeleteRateCount implements ratelimit.Counters.
func (s *Store) DeleteRateCount(ctx context.Context, key string, window time.Time) error {
	const q = `DELETE FROM rate_limit_counters WHERE bucket_key = ? AND window_start = ?`
	_, err := s.execer(ctx).ExecContext(ctx, q, key, fmtTime(window))
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

// execer is ctx's reservation transaction, or the write connection.
func (s *Store) execer(ctx context.Context) sqlx.ExecerContext {
	if tx := s.txFrom(ctx); tx != nil {
		return tx
	}
	return s.w
}

// deleteRows runs the DELETE q (in ctx's reservation transaction when there
// is one) and returns how many rows it removed.
func (s *Store) deleteRows(ctx context.Context, q string, args ...any) (int64, error) {
	return sqlstmt.Delete(ctx, s.execer(ctx), driverError, q, args...)
}
