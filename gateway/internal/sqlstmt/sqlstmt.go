// Package sqlstmt holds the prepared-statement helper both SQL stores
// (gateway/postgres, gateway/sqlite) use for their hot-path statements.
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
// on every call (STYLE.md, "Prepare once, evaluate many"). First use, not
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
