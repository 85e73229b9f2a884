package sqlite

import (
	"context"
	"database/sql"
	"sync"

	"github.com/jmoiron/sqlx"
)

// prepared is a hot-path statement, prepared on first use and then reused,
// so that SQLite compiles it once per connection rather than on
// every call (STYLE.md, "Prepare once, evaluate many"). First use, not
// Open, because the tables exist only after Migrate.
type prepared struct {
	query string
	mu    sync.Mutex
	stmt  *sql.Stmt
}

// get returns the statement, preparing it on the first call.
func (p *prepared) get(ctx context.Context, db *sqlx.DB) (*sql.Stmt, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stmt == nil {
		stmt, err := db.PrepareContext(ctx, p.query)
		if err != nil {
			return nil, translate(err, msgs{})
		}
		p.stmt = stmt
	}
	return p.stmt, nil
}

// close releases the statement, if it was prepared.
func (p *prepared) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stmt == nil {
		return nil
	}
	err := p.stmt.Close()
	p.stmt = nil // a later get reports the closed pool (EUnavailable)
	return err
}
