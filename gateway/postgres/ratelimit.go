package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlcore"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlstmt"
)

// rateStatements are the hot-path statements of the rate-limit counters.
type rateStatements struct {
	add          prepared // addCount
	count        prepared // selectCount
	reserveAudit prepared // reserveAndAudit
}

func newRateStatements() *rateStatements {
	return &rateStatements{add: prepared{Query: addCount}, count: prepared{Query: selectCount},
		reserveAudit: prepared{Query: reserveAndAudit}}
}

func (r *rateStatements) close() error {
	return errors.Join(r.add.Close(), r.count.Close(), r.reserveAudit.Close())
}

// addCount creates or bumps a counter in one statement. The upsert takes
// the row's lock, as the reservation's upserts do, so no change is lost.
const addCount = `
INSERT INTO rate_limit_counters (bucket_key, window_start, count, expires_at)
VALUES ($1, $2, $3, $4)
ON CONFLICT (bucket_key, window_start) DO UPDATE SET count = rate_limit_counters.count + EXCLUDED.count
RETURNING count`

const selectCount = `SELECT count FROM rate_limit_counters WHERE bucket_key = $1 AND window_start = $2`

// reserveAndAudit takes a call's slots, all or nothing, with the function
// of migration 00003 (mcpgate_reserve_counts, which locks each counter row
// until the transaction ends: a concurrent reservation of the same bucket,
// in this process or another replica, waits and then sees the committed
// count), and inserts the audit row ($1…$18) only when every slot had
// room, returning its id (0 otherwise). The CTE is materialised so the
// function runs exactly once, before the insert that depends on it.
const reserveAndAudit = `
WITH r AS MATERIALIZED (
    SELECT full_slot, counts FROM mcpgate_reserve_counts($19::text[], $20::timestamptz[], $21::timestamptz[], $22::bigint[], $23::text[], $24::text[])
), ins AS (
    INSERT INTO audit_events (` + sqlcore.AuditInsertColumns + `)
    SELECT ` + auditInsertValues + ` FROM r WHERE r.full_slot = 0
    RETURNING id
)
SELECT r.full_slot, r.counts, coalesce((SELECT id FROM ins), 0) FROM r`

// prepareReserve is sqlcore.Dialect.PrepareReserve: it prepares
// reserveAndAudit on the pool.
func (s *Store) prepareReserve(ctx context.Context) error {
	_, err := s.rate.reserveAudit.Get(ctx, s.db, driverError)
	return err
}

// takeSlots is sqlcore.Dialect.TakeSlots: one statement
// (reserveAndAudit) takes every slot and inserts the audit row, so an
// allowed call without a claim costs three round trips (BEGIN, this
// statement, COMMIT) however many buckets it has.
func (s *Store) takeSlots(ctx context.Context, tx *sqlx.Tx, audit []any, slots []gateway.Slot) (gateway.ReservationResult, error) {
	stmt, err := s.rate.reserveAudit.Get(ctx, s.db, driverError)
	if err != nil {
		return gateway.ReservationResult{}, err
	}
	var res gateway.ReservationResult
	var full int
	var counts pq.Int64Array
	err = tx.StmtContext(ctx, stmt).QueryRowContext(ctx, append(audit, slotArgs(slots)...)...).Scan(&full, &counts, &res.AuditID)
	if err != nil {
		return gateway.ReservationResult{}, translate(err, msgs{})
	}
	if full > 0 {
		if full > len(counts) {
			return gateway.ReservationResult{}, gateway.Errorf(gateway.EInternal,
				"mcpgate_reserve_counts reported slot %d full with %d counts", full, len(counts))
		}
		return gateway.ReservationResult{Full: full, Used: counts[full-1] - 1}, nil
	}
	return res, nil
}

// slotArgs are the six parallel arrays of mcpgate_reserve_counts; times
// travel as RFC 3339 text (lib/pq has no timestamptz array type), a window
// that never ends and the task of a windowed counter as NULL.
func slotArgs(slots []gateway.Slot) []any {
	keys := make([]string, len(slots))
	windows := make([]string, len(slots))
	expires := make([]sql.NullString, len(slots))
	limits := make([]int64, len(slots))
	workspaces := make([]sql.NullString, len(slots))
	tasks := make([]sql.NullString, len(slots))
	for i, q := range slots {
		keys[i], limits[i] = q.Key, q.Limit
		windows[i] = q.Window.UTC().Format(time.RFC3339Nano)
		if !q.Expires.IsZero() {
			expires[i] = sql.NullString{String: q.Expires.UTC().Format(time.RFC3339Nano), Valid: true}
		}
		if q.TaskID != "" {
			workspaces[i] = sql.NullString{String: q.WorkspaceID, Valid: true}
			tasks[i] = sql.NullString{String: q.TaskID, Valid: true}
		}
	}
	return []any{pq.Array(keys), pq.Array(windows), pq.GenericArray{A: expires}, pq.Array(limits),
		pq.GenericArray{A: workspaces}, pq.GenericArray{A: tasks}}
}

// AddRateCount implements ratelimit.Counters with one upsert (addCount).
func (s *Store) AddRateCount(ctx context.Context, key string, window, expires time.Time, delta int64) (int64, error) {
	stmt, err := s.rate.add.Get(ctx, s.db, driverError)
	if err != nil {
		return 0, err
	}
	var exp any
	if !expires.IsZero() {
		exp = expires.UTC()
	}
	var n int64
	err = stmt.QueryRowContext(ctx, key, window.UTC(), delta, exp).Scan(&n)
	return n, translate(err, msgs{})
}

// RateCount implements ratelimit.Counters; a missing counter is 0.
func (s *Store) RateCount(ctx context.Context, key string, window time.Time) (int64, error) {
	stmt, err := s.rate.count.Get(ctx, s.db, driverError)
	if err != nil {
		return 0, err
	}
	var n int64
	err = stmt.QueryRowContext(ctx, key, window.UTC()).Scan(&n)
	if isNoRows(err) {
		return 0, nil
	}
	return n, translate(err, msgs{})
}

// DeleteRateCount implements ratelimit.Counters.
func (s *Store) DeleteRateCount(ctx context.Context, key string, window time.Time) error {
	const q = `DELETE FROM rate_limit_counters WHERE bucket_key = $1 AND window_start = $2`
	_, err := s.db.ExecContext(ctx, q, key, window.UTC())
	return translate(err, msgs{})
}

// DeleteEndedTaskCounts implements ratelimit.Counters.
func (s *Store) DeleteEndedTaskCounts(ctx context.Context, before time.Time) (int64, error) {
	const q = `DELETE FROM rate_limit_counters c USING tasks t
WHERE c.task_id IS NOT NULL AND t.workspace_id = c.task_workspace_id AND t.id = c.task_id
  AND t.status IN ('completed', 'failed', 'cancelled') AND t.updated_at <= $1`
	return s.deleteRows(ctx, q, before.UTC())
}

// DeleteExpiredRateCounts implements ratelimit.Counters; per-task counters
// (no expiry) are never deleted.
func (s *Store) DeleteExpiredRateCounts(ctx context.Context, before time.Time) (int64, error) {
	const q = `DELETE FROM rate_limit_counters WHERE expires_at <= $1`
	return s.deleteRows(ctx, q, before.UTC())
}

// deleteRows runs the DELETE q and returns how many rows it removed.
func (s *Store) deleteRows(ctx context.Context, q string, args ...any) (int64, error) {
	return sqlstmt.Delete(ctx, s.db, driverError, q, args...)
}
