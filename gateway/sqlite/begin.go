package sqlite

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// writerBusyTimeout is the write connection's busy_timeout: the longest a
// statement on it waits for another process's write lock. Readers keep
// busyTimeout. It is below the store deadline of a call's reservation and
// finish (5 s from the call's start, and from its finish), so that
// beginWrite can take the path without a watcher goroutine for them.
const writerBusyTimeout = 4 * time.Second

// beginWrite begins a write transaction (BEGIN IMMEDIATE) on the write
// connection for the hot path (a batch of reservations or of finishes);
// end is called once it has been committed or rolled back.
//
// The driver watches a statement's context with a goroutine of its own
// (to interrupt it, and to end its wait for a lock), and BEGIN and COMMIT
// both watch the context given to BeginTx: two goroutines started and
// woken per transaction, which at one call at a time showed as about
// 150 µs of the added p50 on this 2-core VM (two handoffs between cores
// per statement). The only waits of this transaction are for the write
// connection, in the pool, and for the write lock, in BEGIN, when another
// process holds it (COMMIT in WAL mode waits for nobody; the statements
// in between already run without a deadline). When ctx has at least
// writerBusyTimeout left, the connection is taken under ctx (that wait
// ends with ctx) and the transaction begins without ctx's deadline: its
// lock wait ends after writerBusyTimeout at most, so before ctx does.
// With less left (or a cancellable ctx without a deadline), BEGIN and
// COMMIT watch ctx as before.
func (s *Store) beginWrite(ctx context.Context) (tx *sqlx.Tx, end func(), err error) {
	deadline, ok := ctx.Deadline()
	if ctx.Done() == nil || !ok || time.Until(deadline) < writerBusyTimeout {
		tx, err = s.w.BeginTxx(ctx, nil)
		return tx, func() {}, err
	}
	conn, err := s.w.Connx(ctx)
	if err != nil {
		return nil, nil, err
	}
	if tx, err = conn.BeginTxx(context.WithoutCancel(ctx), nil); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	return tx, func() { _ = conn.Close() }, nil
}
