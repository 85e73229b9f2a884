package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
)

var _ ratelimit.Counters = (*Store)(nil)

// rateStatements are the hot-path statements of the rate-limit counters.
type rateStatements struct {
	add   prepared // addCount
	count prepared // selectCount
}

func newRateStatements() *rateStatements {
	return &rateStatements{add: prepared{Query: addCount}, count: prepared{Query: selectCount}}
}

func (r *rateStatements) close() error { return errors.Join(r.add.Close(), r.count.Close()) }

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

// txKey carries the reservation transaction of ReserveAndRecord in a ctx.
type txKey struct{}

// reservation is the value under txKey: the transaction and the store it
// belongs to, so that a ctx from one store is never used by another.
type reservation struct {
	store *Store
	tx    *sqlx.Tx
}

// txFrom returns the reservation transaction ctx carries for s, or nil.
func (s *Store) txFrom(ctx context.Context) *sqlx.Tx {
	if r, ok := ctx.Value(txKey{}).(*reservation); ok && r.store == s {
		return r.tx
	}
	return nil
}

// stmt returns p prepared on the pool, bound to ctx's reservation
// transaction when there is one.
func (s *Store) stmt(ctx context.Context, p *prepared) (*sql.Stmt, error) {
	stmt, err := p.Get(ctx, s.db, prepareError)
	if err != nil {
		return nil, err
	}
	if tx := s.txFrom(ctx); tx != nil {
		return tx.StmtContext(ctx, stmt), nil
	}
	return stmt, nil
}

// ReserveAndRecord implements server.Store.ReserveAndRecord: BEGIN, insert
// the audit row, run reserve (whose counter upserts lock their rows), then
// COMMIT. The audit insert comes first so that the hot counter rows stay
// locked for as short a time as possible. On any error the transaction is
// rolled back and ev.ID is 0; reserve's *gateway.Error passes through
// unchanged, driver errors are translated (EUnavailable when PostgreSQL
// cannot be reached). A commit whose outcome is unknown (connection lost
// during COMMIT) is reported as EUnavailable: the call is refused, and the
// slot may stay taken — the limiter errs on the side of fewer calls.
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

// prepareReservation prepares the statements a reservation uses before it
// begins: preparing takes a connection from the pool, which inside the
// transaction could wait for ever for the one the transaction holds (every
// connection of a busy pool may be a reservation doing the same). It
// returns the audit insert.
func (s *Store) prepareReservation(ctx context.Context) (*sql.Stmt, error) {
	if _, err := s.rate.add.Get(ctx, s.db, prepareError); err != nil {
		return nil, err
	}
	if _, err := s.rate.count.Get(ctx, s.db, prepareError); err != nil {
		return nil, err
	}
	return s.auditStmt.Get(ctx, s.db, prepareError)
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

// DeleteExpiredRateCounts implements ratelimit.Counters; per-task counters
// (no expiry) are never deleted.
func (s *Store) DeleteExpiredRateCounts(ctx context.Context, before time.Time) (int64, error) {
	const q = `DELETE FROM rate_limit_counters WHERE expires_at <= $1`
	res, err := s.execer(ctx).ExecContext(ctx, q, before.UTC())
	if err != nil {
		return 0, translate(err, msgs{})
	}
	n, err := res.RowsAffected()
	return n, translate(err, msgs{})
}

// execer is ctx's reservation transaction, or the pool.
func (s *Store) execer(ctx context.Context) sqlx.ExecerContext {
	if tx := s.txFrom(ctx); tx != nil {
		return tx
	}
	return s.db
}
