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
	mu    sync.Mutex               // serialises preparing and closing
}

// Get returns the statement, preparing it on db on the first call. A
// prepare error is passed through translate (the store's driver-error
// translation) before it is returned.
func (p *Prepared) Get(ctx context.Context, db *sqlx.DB, translate func(error) error) (*sql.Stmt, error) {
	if stmt := p.ready.Load(); stmt != nil {
		return stmt, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
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
	p.mu.Lock()
	defer p.mu.Unlock()
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
