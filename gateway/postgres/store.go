// Package postgres is mcpgate's audit store on PostgreSQL, the system of
// record: workspaces, members, profiles, tokens, overrides and
// the audit_events rows every tools/call writes. It implements the
// store contract (gateway/store) and returns only *gateway.Error.
package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"hash/fnv"
	"net/url"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlcore"
	"github.com/mcpgate/mcpgate/gateway/store"
	"github.com/mcpgate/mcpgate/migrations"
)

// Pool settings. A gateway replica serves many concurrent calls, each
// needing one short query (LoadCaller) and one reservation transaction;
// 20 connections per replica keeps several replicas under PostgreSQL's
// default max_connections of 100. The pool keeps as many idle connections
// as it may open: with fewer, every burst above the idle count closes
// connections on return and opens new ones (a new PostgreSQL backend,
// with its startup cost) for the next call.
const (
	// DefaultMaxConns is the pool size of Options.MaxConns.
	DefaultMaxConns = 20
	connMaxLifetime = 30 * time.Minute
	connMaxIdleTime = 5 * time.Minute
	// pingTimeout bounds Ping (/readyz): a probe must answer quickly even
	// when the database does not.
	pingTimeout = 2 * time.Second
	// migrateTimeout bounds Migrate when its context has no deadline: the
	// migration lock waits up to 5 minutes for another replica.
	migrateTimeout = 15 * time.Minute
)

// Options are the connection pool settings of OpenWith.
type Options struct {
	// MaxConns is the most connections the pool opens and keeps open
	// (idle connections included); 0 means DefaultMaxConns
	// (MCPGATE_DATABASE_MAX_CONNS).
	MaxConns int
	// OperationTimeout bounds each statement and transaction whose
	// context has no deadline; 0 means DefaultOperationTimeout.
	OperationTimeout time.Duration
}

// Store is the PostgreSQL audit store. It is safe for concurrent use.
type Store struct {
	// Core holds the queries both stores share (audit rows, the
	// reservation, idempotency keys) over db, with this store's dialect.
	*sqlcore.Core
	db     *sqlx.DB
	dsn    string // for the listening connection (Listen)
	rate   *rateStatements
	finish prepared // finishAudits
	// res is Reserve's group commit (reserveGroup), fin FinishAudit's
	// (finishBatch).
	res *sqlcore.Group[*sqlcore.ReserveItem]
	fin *sqlcore.Group[*gateway.AuditEvent]
	// opTimeout is Options.OperationTimeout (commitDeadline).
	opTimeout time.Duration
}

// The store implements the whole store contract.
var _ store.Store = (*Store)(nil)

// Open is OpenWith with the default Options.
func Open(ctx context.Context, url string) (*Store, error) {
	return OpenWith(ctx, url, Options{})
}

// OpenWith connects to the PostgreSQL database at url (a lib/pq URL or
// key=value DSN, e.g. "postgres://user:pw@host:5432/db?sslmode=disable"; a
// search_path parameter selects the schema), pings it and sizes the pool
// by o. Every network operation of the store has a deadline: opening a
// connection DefaultConnectTimeout (unless url sets connect_timeout), a
// statement or transaction the deadline of its context, or
// o.OperationTimeout when the context has none; at that deadline the
// operation returns even when the server stopped answering, and its
// connection is discarded. It does not migrate; call Migrate. Errors:
// EInvalid for a URL lib/pq cannot parse, EUnavailable when the server
// cannot be reached.
func OpenWith(ctx context.Context, url string, o Options) (*Store, error) {
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.OperationTimeout <= 0 {
		o.OperationTimeout = DefaultOperationTimeout
	}
	c, err := newConnector(url, o.OperationTimeout)
	if err != nil {
		// The parser's error quotes the URL, password included: say what
		// to check instead of passing it on.
		return nil, gateway.Errorf(gateway.EInvalid,
			"MCPGATE_DATABASE_URL is not a valid PostgreSQL URL; use postgres://user:password@host:5432/dbname, with characters such as %% @ : / in the password percent-encoded")
	}
	db := sqlx.NewDb(sql.OpenDB(c), "postgres")
	db.SetMaxOpenConns(o.MaxConns)
	db.SetMaxIdleConns(o.MaxConns)
	db.SetConnMaxLifetime(connMaxLifetime)
	db.SetConnMaxIdleTime(connMaxIdleTime)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, openError(err, url)
	}
	s := &Store{db: db, dsn: url, rate: newRateStatements(), finish: prepared{Query: finishAudits}, opTimeout: o.OperationTimeout}
	s.Core = sqlcore.New(db, db, dialect)
	s.res = sqlcore.NewReserver(s.reserveGroup)
	s.fin = s.NewFinisher(s.finishBatch)
	return s, nil
}

// dialect is PostgreSQL's sqlcore.Dialect.
var dialect = sqlcore.Dialect{
	Bind:        sqlx.DOLLAR,
	Now:         "now()",
	True:        "true",
	False:       "false",
	JSONEach:    "jsonb_each(?::jsonb)",
	JSONBool:    "e.value::boolean",
	LockRow:     " FOR NO KEY UPDATE",
	Later:       "GREATEST(%s, ?)",
	Classify:    classify,
	Unreachable: unreachable,
	Unanswered:  "audit store unavailable: PostgreSQL did not answer; retry shortly, and check the database if it persists",

	CallerQuery:           callerQuery,
	InsertAudit:           insertAudit,
	RecordAudit:           recordAudit,
	SealLease:             sealLease,
	SealRows:              sealRows,
	SealVacuum:            sealVacuum,
	SealVacuumAllowed:     sealVacuumAllowed,
	DeleteExpiredCounts:   deleteExpiredCounts,
	DeleteEndedTaskCounts: deleteEndedTaskCounts,
}

// openError explains a failed first ping without echoing the password.
func openError(err error, dsn string) error {
	target := "the database"
	if u, perr := url.Parse(dsn); perr == nil && u.Host != "" {
		target = u.Host + u.Path
	}
	if e := driverError(err); gateway.ErrorCodeOf(e) != gateway.EUnavailable {
		return gateway.Wrap(gateway.EUnavailable, err, "audit store unavailable: PostgreSQL at "+
			target+" refused the connection; check MCPGATE_DATABASE_URL (user, password, database name)")
	}
	return gateway.Wrap(gateway.EUnavailable, err, "audit store unavailable: cannot reach PostgreSQL at "+
		target+"; check that the server runs and MCPGATE_DATABASE_URL points at it")
}

// Close waits for the reservations and FinishAudit calls under way to be
// written (later ones fail with EUnavailable), then releases the prepared
// statements and closes the connection pool.
func (s *Store) Close() error {
	s.res.Close()
	s.fin.Close()
	return errors.Join(s.Core.Close(), s.rate.close(), s.finish.Close(), s.db.Close())
}

// DB returns the connection pool, for packages that add queries of their own
// (e.g. rate-limit counters over audit_events).
func (s *Store) DB() *sqlx.DB { return s.db }

// Ping reports whether PostgreSQL answers (for /readyz) within ctx's
// deadline and at most pingTimeout (2 s); EUnavailable if not. A pooled
// connection that PostgreSQL ended meanwhile (a restart) answers
// driver.ErrBadConn and leaves the pool; database/sql retries that only
// while it picks a connection, not when the ping itself fails, so an
// idle pool would fail one probe per dead connection. Ping tries again
// until a connection answers or the pool has no connection left that it
// did not try (then a new one is opened): the first probe after the
// server is back is ready, and the dead connections are gone before the
// calls need one.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	err := s.db.PingContext(ctx)
	for tries := s.db.Stats().OpenConnections + 1; errors.Is(err, driver.ErrBadConn) && tries > 0 && ctx.Err() == nil; tries-- {
		err = s.db.PingContext(ctx)
	}
	return driverError(err)
}

// Migrate applies the pending migrations of migrations.Postgres with goose.
// It is idempotent, and safe when several replicas start at once: goose holds
// a PostgreSQL session advisory lock while it migrates, keyed by the current
// schema so that stores in different schemas do not wait for each other.
// When ctx has no deadline, Migrate gives up after 15 minutes. Errors:
// EInvalid when search_path names no existing schema, EUnavailable when
// the database is unreachable, EInternal when a migration fails.
func (s *Store) Migrate(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, migrateTimeout)
		defer cancel()
	}
	var schema sql.NullString
	if err := s.db.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return driverError(err)
	}
	if !schema.Valid {
		return gateway.Errorf(gateway.EInvalid,
			"the database has no schema on its search_path; create the schema or fix search_path in MCPGATE_DATABASE_URL")
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID(schema.String)), lock.WithLockTimeout(1, 300))
	if err != nil {
		return gateway.Wrap(gateway.EInternal, err, "cannot set up the migration lock")
	}
	p, err := goose.NewProvider(goose.DialectPostgres, s.db.DB, migrations.Postgres,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return gateway.Wrap(gateway.EInternal, err, "cannot read the embedded PostgreSQL migrations")
	}
	if _, err := p.Up(ctx); err != nil {
		if e := driverError(err); gateway.ErrorCodeOf(e) == gateway.EUnavailable {
			return e
		}
		return gateway.Wrap(gateway.EInternal, err, "migrating the PostgreSQL schema failed; see the cause in the log")
	}
	return nil
}

// lockID derives the advisory lock key from the schema name: replicas that
// share a schema contend for one lock, tests in separate schemas do not.
func lockID(schema string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("mcpgate/migrate/" + schema))
	return int64(h.Sum64() >> 1)
}

// isNoRows reports whether err says a single-row query matched nothing.
func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
