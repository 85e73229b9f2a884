package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	_ "github.com/lib/pq"  // registers the "postgres" driver
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// The -store values.
const (
	storeNone     = "none"
	storeSQLite   = "sqlite"
	storePostgres = "postgres"
)

// floorTable is the one table the floor writes: one row per tools/call.
const floorTable = "floor_calls"

// dialect is one database's statements for sqlStore.
type dialect struct {
	driver string
	create string // creates floorTable if it does not exist
	// insert inserts a row ($1 session id, $2 tool name from the Mcp-Name
	// header, both possibly empty) with status statusAllowed and returns
	// its id.
	insert string
	// update sets a row's status ($2) and latency in µs ($3) by id ($1).
	update string
}

var postgresDialect = dialect{
	driver: "postgres",
	create: `CREATE TABLE IF NOT EXISTS ` + floorTable + ` (
    id bigserial PRIMARY KEY,
    session_id text NOT NULL,
    name text NOT NULL,
    status text NOT NULL,
    latency_us bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now())`,
	// Autocommit with the server's synchronous_commit (on by default): the
	// row is on disk before the call is forwarded.
	insert: `INSERT INTO ` + floorTable + ` (session_id, name, status) VALUES ($1, $2, '` + statusAllowed + `') RETURNING id`,
	// The gateway's lone finish: the materialised CTE turns
	// synchronous_commit off for this statement's transaction before the
	// UPDATE runs, so the commit does not wait for the WAL flush.
	update: `WITH o AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true))
UPDATE ` + floorTable + ` SET status = $2, latency_us = $3 FROM o WHERE id = $1`,
}

var sqliteDialect = dialect{
	driver: "sqlite",
	create: `CREATE TABLE IF NOT EXISTS ` + floorTable + ` (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    latency_us INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))`,
	insert: `INSERT INTO ` + floorTable + ` (session_id, name, status) VALUES ($1, $2, '` + statusAllowed + `') RETURNING id`,
	update: `UPDATE ` + floorTable + ` SET status = $2, latency_us = $3 WHERE id = $1`,
}

// sqliteParams are the gateway's SQLite write-connection settings: WAL,
// synchronous=NORMAL (a commit is in the WAL, not fsynced, before it
// returns), a busy timeout and BEGIN IMMEDIATE. Unlike the gateway's store
// the floor runs no background checkpointer: SQLite's automatic checkpoint
// (every 1,000 WAL pages, with its fsyncs) runs inside the commit that
// crosses it, which shows in p99 rather than in p50.
const sqliteParams = "_busy_timeout=10000&_txlock=immediate&_journal_mode=WAL&_synchronous=NORMAL"

// postgresConns is the pool size on PostgreSQL, the gateway's default
// (MCPGATE_DATABASE_MAX_CONNS); idle connections are kept so that no run
// opens connections after its warm-up.
const postgresConns = 20

// sqlStore writes the floor's rows through database/sql with two prepared
// statements.
type sqlStore struct {
	db             *sql.DB
	insert, update *sql.Stmt
}

// openStore opens the store kind names (storeNone gives a nil store),
// creates floorTable and prepares the statements. dsn is PostgreSQL's URL,
// sqlitePath SQLite's file.
func openStore(ctx context.Context, kind, dsn, sqlitePath string) (store, error) {
	var d dialect
	var source string
	conns := postgresConns
	switch kind {
	case storeNone:
		return nil, nil
	case storePostgres:
		if dsn == "" {
			return nil, errors.New("-store postgres needs -dsn, the database URL")
		}
		d, source = postgresDialect, dsn
	case storeSQLite:
		if sqlitePath == "" {
			return nil, errors.New("-store sqlite needs -sqlite-path, the database file")
		}
		// One connection: SQLite has one writer at a time, and the
		// gateway queues its writes on one connection as well.
		d, source, conns = sqliteDialect, sqlitePath+"?"+sqliteParams, 1
	default:
		return nil, fmt.Errorf("-store %q: want none, sqlite or postgres", kind)
	}
	db, err := sql.Open(d.driver, source)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	s := &sqlStore{db: db}
	if err := s.prepare(ctx, d); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("%s store: %w", kind, err)
	}
	return s, nil
}

func (s *sqlStore) prepare(ctx context.Context, d dialect) error {
	if _, err := s.db.ExecContext(ctx, d.create); err != nil {
		return fmt.Errorf("create table %s: %w", floorTable, err)
	}
	var err error
	if s.insert, err = s.db.PrepareContext(ctx, d.insert); err != nil {
		return fmt.Errorf("prepare the insert: %w", err)
	}
	if s.update, err = s.db.PrepareContext(ctx, d.update); err != nil {
		return fmt.Errorf("prepare the update: %w", err)
	}
	return nil
}

func (s *sqlStore) begin(ctx context.Context, session, name string) (int64, error) {
	var id int64
	err := s.insert.QueryRowContext(ctx, session, name).Scan(&id)
	return id, err
}

func (s *sqlStore) finish(ctx context.Context, id int64, status string, latency time.Duration) error {
	res, err := s.update.ExecContext(ctx, id, status, latency.Microseconds())
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("update of row %d: %d rows affected (%v)", id, n, err)
	}
	return nil
}

// Close closes the statements and the pool.
func (s *sqlStore) Close() error {
	_, _ = s.insert.Close(), s.update.Close()
	return s.db.Close()
}
