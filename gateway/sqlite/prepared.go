package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
)

// prepared is a hot-path statement, prepared on first use and then reused,
// so that SQLite compiles it once per connection rather than on
// every call (STYLE.md, "Prepare once, evaluate many"). First use, not
// Open, because the tables exist only after Migrate.
type prepared struct {
	query string
	ready atomic.Pointer[sql.Stmt] // lock-free read on the hot path
	mu    sync.Mutex               // serialises preparing and closing
}

// get returns the statement, preparing it on the first call.
func (p *prepared) get(ctx context.Context, db *sqlx.DB) (*sql.Stmt, error) {
	if stmt := p.ready.Load(); stmt != nil {
		return stmt, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if stmt := p.ready.Load(); stmt != nil {
		return stmt, nil
	}
	stmt, err := db.PrepareContext(ctx, p.query)
	if err != nil {
		return nil, translate(err, msgs{})
	}
	p.ready.Store(stmt)
	return stmt, nil
}

// close releases the statement, if it was prepared.
func (p *prepared) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	stmt := p.ready.Swap(nil) // a later get reports the closed pool (EUnavailable)
	if stmt == nil {
		return nil
	}
	return stmt.Close()
}
