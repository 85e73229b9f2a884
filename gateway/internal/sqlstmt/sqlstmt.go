// Package sqlstmt holds the statement helpers both SQL stores
// (gateway/postgres, gateway/sqlite) share: prepared hot-path statements
// and counted deletes.
package sqlstmt

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
)

// Prepared is a hot-path statement, prepared on first use and then reused,
// so that the database parses and plans it once per connection rather than
// on every call (docs/architecture.md, Conventions: "Prepare once, evaluate many"). First use, not
// Open, because the tables exist only after Migrate. The zero value with
// Query set is ready to use; it is safe for concurrent use.
type Prepared struct {
	Query string
	ready atomic.Pointer[sql.Stmt] // lock-free read on the hot path
	// sem serialises preparing and closing. A channel rather than a mutex:
	// a prepare on a database that does not answer holds it until its own
	// context ends, and a caller with an earlier deadline (a call's store
	// deadline) must give up at that deadline, not queue behind it.
	sem  chan struct{}
	init sync.Once
}

// lock takes p's semaphore, or returns ctx's error once ctx ends first.
func (p *Prepared) lock(ctx context.Context) error {
	p.init.Do(func() { p.sem = make(chan struct{}, 1) })
	select {
	case p.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Prepared) unlock() { <-p.sem }

// Get returns the statement, preparing it on db on the first call. A
// prepare error, or ctx's error when ctx ends while another caller is
// preparing it, is passed through translate (the store's driver-error
// translation) before it is returned.
func (p *Prepared) Get(ctx context.Context, db *sqlx.DB, translate func(error) error) (*sql.Stmt, error) {
	if stmt := p.ready.Load(); stmt != nil {
		return stmt, nil
	}
	if err := p.lock(ctx); err != nil {
		return nil, translate(err)
	}
	defer p.unlock()
	if stmt := p.ready.Load(); stmt != nil {
		return stmt, nil
	}
	stmt, err := db.PrepareContext(ctx, p.Query)
	if err != nil {
		return nil, translate(err)
	}
	p.ready.Store(stmt)
	return stmt, nil
}

// Close releases the statement, if it was prepared; a later Get prepares
// it again (and so reports a closed pool as the store's error).
func (p *Prepared) Close() error {
	_ = p.lock(context.Background())
	defer p.unlock()
	stmt := p.ready.Swap(nil)
	if stmt == nil {
		return nil
	}
	return stmt.Close()
}

// Delete runs the DELETE q with args on e and returns how many rows it
// removed; errors are passed through translate (the store's driver-error
// translation).
func Delete(ctx context.Context, e sqlx.ExecerContext, translate func(error) error, q string, args ...any) (int64, error) {
	res, err := e.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, translate(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, translate(err)
	}
	return n, nil
}
