// Package sqlite is mcpgate's embedded audit store for one process, on
// SQLite through the pure-Go modernc.org/sqlite driver. It implements the
// same interfaces and passes the same test suite (gateway/storetest) as the
// PostgreSQL store and returns only *gateway.Error.
package sqlite

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlcore"
	"github.com/mcpgate/mcpgate/gateway/store"
	"github.com/mcpgate/mcpgate/migrations"
)

// Connection settings. busy_timeout lets a writer wait for another
// process's lock instead of failing at once; _txlock=immediate takes the
// write lock at BEGIN, so a transaction never fails half-way on upgrading
// a read lock; WAL lets readers run while the writer writes.
const (
	baseParams   = "_busy_timeout=10000&_foreign_keys=1&_txlock=immediate"
	fileParams   = "&_journal_mode=WAL&_synchronous=NORMAL"
	writerParams = "&_pragma=wal_autocheckpoint(" + walBackstopPages + ")" // see checkpointer
	readerParams = "&_query_only=1"
	memoryPath   = ":memory:"
)

// Store is the embedded audit store. It is safe for concurrent use: all
// writes go through one connection (SQLite admits one writer at a time, so
// queueing them in the pool means no call ever fails with SQLITE_BUSY), and
// reads use a pool of read-only connections.
type Store struct {
	// Core holds the queries both stores share (audit rows, the
	// reservation, idempotency keys) over w and r, with this store's
	// dialect.
	*sqlcore.Core
	w      *sqlx.DB // the one write connection
	r      *sqlx.DB // read-only connections; the same pool as w for ":memory:"
	rate   *rateStatements
	finish prepared // finishAudit, on w
	// res is Reserve's group commit (reserveBatch), fin FinishAudit's
	// (finishBatch).
	res  *sqlcore.Group[*sqlcore.ReserveItem]
	fin  *sqlcore.Group[*gateway.AuditEvent]
	ckpt *checkpointer // background WAL checkpoints; nil for ":memory:"
}

// The store implements the whole store contract.
var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the SQLite database at path, the file
// MCPGATE_DATABASE_URL names (config.SQLitePath reads it from the URL:
// a path that still starts "sqlite:" is refused, so that no second
// reading of the URL's forms grows here). The
// path ":memory:" gives a private in-memory database held by a single
// connection (each connection to ":memory:" would be a database of its own),
// meant for tests. Files use WAL mode. It does not migrate; call Migrate.
// Errors: EInvalid for an empty path or a URL, EUnavailable when the file
// cannot be opened.
func Open(ctx context.Context, path string) (*Store, error) {
	if strings.HasPrefix(path, "sqlite:") {
		return nil, gateway.Errorf(gateway.EInvalid,
			"sqlite.Open takes a file path, not the URL %q; read the path with config.SQLitePath", path)
	}
	if path == "" {
		return nil, gateway.Errorf(gateway.EInvalid,
			"MCPGATE_DATABASE_URL names no SQLite file; use sqlite:PATH, e.g. sqlite:mcpgate.db")
	}
	if path == memoryPath {
		w, err := openPool(ctx, path, baseParams, 1)
		if err != nil {
			return nil, err
		}
		return newStore(w, w), nil
	}
	w, err := openPool(ctx, path, baseParams+fileParams+writerParams, 1)
	if err != nil {
		return nil, err
	}
	r, err := openPool(ctx, path, baseParams+readerParams, max(4, runtime.GOMAXPROCS(0)))
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	ck, err := openPool(ctx, path, baseParams, 1)
	if err != nil {
		_, _ = w.Close(), r.Close()
		return nil, err
	}
	s := newStore(w, r)
	s.ckpt = startCheckpointer(ck)
	return s, nil
}

// newStore wires the pools and the hot-path statements.
func newStore(w, r *sqlx.DB) *Store {
	s := &Store{w: w, r: r, rate: newRateStatements(), finish: prepared{Query: finishAudit}}
	s.Core = sqlcore.New(w, r, dialect)
	s.res = sqlcore.NewReserver(s.reserveBatch)
	s.fin = s.NewFinisher(s.finishBatch)
	return s
}

// dialect is SQLite's sqlcore.Dialect. Times are text (sqlcore.TimeLayout),
// written by the gateway: no SQL function writes that layout.
var dialect = sqlcore.Dialect{
	Bind:     sqlx.QUESTION,
	TimeText: true,
	True:     "1",
	False:    "0",
	// json_each yields true/false as 1/0, the column's representation.
	JSONEach: "json_each(?)",
	JSONBool: "e.value",
	// Stored times sort as text, so max() on the text is the later time;
	// coalesce because SQLite's max() of a NULL is NULL.
	Later:      "max(coalesce(%s, ''), ?)",
	CheckJSON:  true,
	Classify:   classify,
	Unanswered: "audit store unavailable: the SQLite database did not answer; retry shortly, and check the disk if it persists",

	CallerQuery: callerQuery,
	InsertAudit: insertAudit,
	RecordAudit: recordAudit,
	// A sealing round reads, then seals and claims its rows with bound
	// values (no SealRows).
	OneWriter:           true,
	DeleteExpiredCounts: `DELETE FROM rate_limit_counters WHERE expires_at <= ?`,
	DeleteEndedTaskCounts: `DELETE FROM rate_limit_counters WHERE task_id IS NOT NULL AND EXISTS (
    SELECT 1 FROM tasks t WHERE t.workspace_id = rate_limit_counters.task_workspace_id
      AND t.id = rate_limit_counters.task_id
      AND t.status IN ('completed', 'failed', 'cancelled') AND t.updated_at <= ?)`,
}

// openPool opens a pool of at most n connections that are never closed for
// age (closing the only connection of ":memory:" would drop the database).
func openPool(ctx context.Context, path, params string, n int) (*sqlx.DB, error) {
	db, err := sqlx.Open("sqlite", path+"?"+params)
	if err != nil {
		return nil, gateway.Wrap(gateway.EInvalid, err, "cannot open SQLite database "+path)
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, gateway.Wrap(gateway.EUnavailable, err, "audit store unavailable: cannot open SQLite database "+
			path+"; check that its folder exists and is writable (MCPGATE_DATABASE_URL=sqlite:PATH)")
	}
	return db, nil
}

// Close waits for the reservations and FinishAudit calls under way to be
// written (later ones fail with EUnavailable), then releases the prepared
// statements and closes the connections.
func (s *Store) Close() error {
	s.res.Close()
	s.fin.Close()
	errs := []error{s.Core.Close(), s.rate.close(), s.finish.Close()}
	if s.ckpt != nil {
		errs = append(errs, s.ckpt.close())
	}
	errs = append(errs, s.w.Close())
	if s.r != s.w {
		errs = append(errs, s.r.Close())
	}
	return errors.Join(errs...)
}

// DB returns the write pool (a single connection); packages that add
// queries of their own should write through it.
func (s *Store) DB() *sqlx.DB { return s.w }

// pingTimeout bounds Ping (/readyz): the write connection may be held by
// a long write, and a probe must answer quickly all the same.
const pingTimeout = 2 * time.Second

// Ping reports whether the database answers (for /readyz) within ctx's
// deadline and at most pingTimeout (2 s); EUnavailable if not.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := s.w.PingContext(ctx); err != nil {
		return driverError(err)
	}
	return driverError(s.r.PingContext(ctx))
}

// Migrate applies the pending migrations of migrations.SQLite with goose;
// it is idempotent. The embedded store serves one process, so no lock
// beyond SQLite's own is taken. Errors: EUnavailable when the file cannot
// be written, EInternal when a migration fails.
func (s *Store) Migrate(ctx context.Context) error {
	p, err := goose.NewProvider(goose.DialectSQLite3, s.w.DB, migrations.SQLite, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return gateway.Wrap(gateway.EInternal, err, "cannot read the embedded SQLite migrations")
	}
	if _, err := p.Up(ctx); err != nil {
		if e := driverError(err); gateway.ErrorCodeOf(e) == gateway.EUnavailable {
			return e
		}
		return gateway.Wrap(gateway.EInternal, err, "migrating the SQLite schema failed; see the cause in the log")
	}
	return nil
}
