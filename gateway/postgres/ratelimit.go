package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlstmt"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
)

var _ ratelimit.Counters = (*Store)(nil)

// rateStatements are the hot-path statements of the rate-limit counters.
type rateStatements struct {
	add          prepared // addCount
	count        prepared // selectCount
	reserve      prepared // reserveCounts
	reserveAudit prepared // reserveAndAudit
}

func newRateStatements() *rateStatements {
	return &rateStatements{add: prepared{Query: addCount}, count: prepared{Query: selectCount},
		reserve: prepared{Query: reserveCounts}, reserveAudit: prepared{Query: reserveAndAudit}}
}

func (r *rateStatements) close() error {
	return errors.Join(r.add.Close(), r.count.Close(), r.reserve.Close(), r.reserveAudit.Close())
}

// addCount creates or bumps a counter in one statement. The upsert takes
// the row's lock, which is held until the reservation transaction ends:
// a concurrent reservation of the same bucket (in this process or another
// replica) waits and then sees the committed count, so no two calls can
// take the same last slot.
const addCount = `
INSERT INTO rate_limit_counters (bucket_key, window_start, count, expires_at)
VALUES ($1, $2, $3, $4)
ON CONFLICT (bucket_key, window_start) DO UPDATE SET count = rate_limit_counters.count + EXCLUDED.count
RETURNING count`

const selectCount = `SELECT count FROM rate_limit_counters WHERE bucket_key = $1 AND window_start = $2`

// reserveCounts takes a call's slots, all or nothing, with the function of
// migration 00003 (mcpgate_reserve_counts, which locks each counter row as
// addCount does).
const reserveCounts = `SELECT full_slot, counts FROM mcpgate_reserve_counts($1::text[], $2::timestamptz[], $3::timestamptz[], $4::bigint[], $5::text[], $6::text[])`

// reserveAndAudit is reserveCounts and insertAudit in one statement: the
// audit row ($1…$18) is inserted only when every slot had room, and its id
// is returned (0 otherwise). The CTE is materialised so the function runs
// exactly once, before the insert that depends on it.
const reserveAndAudit = `
WITH r AS MATERIALIZED (
    SELECT full_slot, counts FROM mcpgate_reserve_counts($19::text[], $20::timestamptz[], $21::timestamptz[], $22::bigint[], $23::text[], $24::text[])
), ins AS (
    INSERT INTO audit_events (` + auditInsertColumns + `)
    SELECT ` + auditInsertValues + ` FROM r WHERE r.full_slot = 0
    RETURNING id
)
SELECT r.full_slot, r.counts, coalesce((SELECT id FROM ins), 0) FROM r`

// txKey carries the reservation of ReserveAndRecord in a ctx.
type txKey struct{}

// reservation is the value under txKey: the transaction, the store it
// belongs to (so that a ctx from one store is never used by another), and
// the call's audit row, which the first ReserveCounts writes in its own
// statement (recorded) to save a round trip.
type reservation struct {
	store    *Store
	tx       *sqlx.Tx
	ev       *gateway.AuditEvent
	recorded bool
}

// reservationFrom returns the reservation ctx carries for s, or nil.
func (s *Store) reservationFrom(ctx context.Context) *reservation {
	if r, ok := ctx.Value(txKey{}).(*reservation); ok && r.store == s {
		return r
	}
	return nil
}

// txFrom returns the reservation transaction ctx carries for s, or nil.
func (s *Store) txFrom(ctx context.Context) *sqlx.Tx {
	if r := s.reservationFrom(ctx); r != nil {
		return r.tx
	}
	return nil
}

// stmt returns p prepared on the pool, bound to ctx's reservation
// transaction when there is one.
func (s *Store) stmt(ctx context.Context, p *prepared) (*sql.Stmt, error) {
	stmt, err := p.Get(ctx, s.db, driverError)
	if err != nil {
		return nil, err
	}
	if tx := s.txFrom(ctx); tx != nil {
		return tx.StmtContext(ctx, stmt), nil
	}
	return stmt, nil
}

// ReserveAndRecord implements server.Store.ReserveAndRecord: BEGIN, run
// reserve, insert the audit row, COMMIT. When reserve takes rate-limit
// slots (ReserveCounts) the audit row goes into the same statement, so an
// allowed call costs three round trips (BEGIN, reservation, COMMIT)
// however many buckets it has. On any error the transaction is rolled
// back and ev.ID is 0; reserve's *gateway.Error passes through unchanged,
// driver errors are translated (EUnavailable when PostgreSQL cannot be
// reached). A commit whose outcome is unknown (connection lost during
// COMMIT) is reported as EUnavailable: the call is refused, and the slot
// may stay taken — the limiter errs on the side of fewer calls.
func (s *Store) ReserveAndRecord(ctx context.Context, ev *gateway.AuditEvent, reserve func(ctx context.Context) error) error {
	normalizeEvent(ctx, ev)
	audit, err := s.prepareReservation(ctx)
	if err != nil {
		return err
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return translate(err, msgs{})
	}
	r := &reservation{store: s, tx: tx, ev: ev}
	err = reserve(context.WithValue(ctx, txKey{}, r))
	if err == nil && !r.recorded {
		err = tx.StmtContext(ctx, audit).QueryRowContext(ctx, auditArgs(ev)...).Scan(&ev.ID)
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

// prepareReservation prepares the statements a reservation uses before it
// begins: preparing takes a connection from the pool, which inside the
// transaction could wait for ever for the one the transaction holds (every
// connection of a busy pool may be a reservation doing the same). It
// returns the audit insert.
func (s *Store) prepareReservation(ctx context.Context) (*sql.Stmt, error) {
	for _, p := range []*prepared{&s.rate.add, &s.rate.count, &s.rate.reserve, &s.rate.reserveAudit} {
		if _, err := p.Get(ctx, s.db, driverError); err != nil {
			return nil, err
		}
	}
	return s.auditStmt.Get(ctx, s.db, driverError)
}

// ReserveCounts implements ratelimit.Counters with one call of
// mcpgate_reserve_counts (migration 00003). Inside a reservation whose
// audit row is not written yet, the same statement writes it when every
// slot had room (reserveAndAudit).
func (s *Store) ReserveCounts(ctx context.Context, reqs []ratelimit.CountRequest) ([]int64, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	args := countArgs(reqs)
	var full int
	var counts pq.Int64Array
	var err error
	if r := s.reservationFrom(ctx); r != nil && !r.recorded {
		var stmt *sql.Stmt
		if stmt, err = s.stmt(ctx, &s.rate.reserveAudit); err != nil {
			return nil, err
		}
		var id int64
		err = stmt.QueryRowContext(ctx, append(auditArgs(r.ev), args...)...).Scan(&full, &counts, &id)
		if err == nil && id != 0 {
			r.ev.ID, r.recorded = id, true
		}
	} else {
		var stmt *sql.Stmt
		if stmt, err = s.stmt(ctx, &s.rate.reserve); err != nil {
			return nil, err
		}
		err = stmt.QueryRowContext(ctx, args...).Scan(&full, &counts)
	}
	if err != nil {
		return nil, translate(err, msgs{})
	}
	return counts, nil
}

// countArgs are the six parallel arrays of mcpgate_reserve_counts; times
// travel as RFC 3339 text (lib/pq has no timestamptz array type), a window
// that never ends and the task of a windowed counter as NULL.
func countArgs(reqs []ratelimit.CountRequest) []any {
	keys := make([]string, len(reqs))
	windows := make([]string, len(reqs))
	expires := make([]sql.NullString, len(reqs))
	limits := make([]int64, len(reqs))
	workspaces := make([]sql.NullString, len(reqs))
	tasks := make([]sql.NullString, len(reqs))
	for i, q := range reqs {
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
	stmt, err := s.stmt(ctx, &s.rate.add)
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
	stmt, err := s.stmt(ctx, &s.rate.count)
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
	_, err := s.execer(ctx).ExecContext(ctx, q, key, window.UTC())
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

// execer is ctx's reservation transaction, or the pool.
func (s *Store) execer(ctx context.Context) sqlx.ExecerContext {
	if tx := s.txFrom(ctx); tx != nil {
		return tx
	}
	return s.db
}

// deleteRows runs the DELETE q (in ctx's reservation transaction when there
// is one) and returns how many rows it removed.
func (s *Store) deleteRows(ctx context.Context, q string, args ...any) (int64, error) {
	return sqlstmt.Delete(ctx, s.execer(ctx), driverError, q, args...)
}
