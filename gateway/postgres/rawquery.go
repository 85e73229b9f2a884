package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
)

// The two statements of every call's reply path (reserveOneAndAudit and
// finishOneAudit) bypass database/sql's Stmt: for every query with a
// cancellable context it starts a goroutine that waits for the context or
// for the rows to close (Rows.awaitDone), and waking it costs futex round
// trips between the runtime's threads, twice per call. Here the pool still
// hands out the connection under the caller's context (so a wait for a
// free connection ends at its deadline), and the statement runs on the
// driver connection itself, prepared once per connection, under the same
// watch as every other statement (watchedConn) and lib/pq's cancel of a
// statement whose context ends.

// maxBadConnAttempts is how many pooled connections queryRow tries when the
// driver reports one bad before the statement was sent (driver.ErrBadConn),
// as database/sql does for its own queries.
const maxBadConnAttempts = 3

// queryRow runs the statement query with args on a connection of the pool
// and reads its first row into dest, one driver value per column. It
// reports false, with dest untouched, when the statement returned no row.
// Errors are the driver's; translate them.
func (s *Store) queryRow(ctx context.Context, query string, args []any, dest []driver.Value) (bool, error) {
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return false, err
		}
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	var found bool
	var err error
	for range maxBadConnAttempts {
		found, err = s.queryRowOnce(ctx, query, named, dest)
		if !errors.Is(err, driver.ErrBadConn) {
			break
		}
	}
	return found, err
}

func (s *Store) queryRowOnce(ctx context.Context, query string, args []driver.NamedValue, dest []driver.Value) (bool, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = conn.Close() }()
	var found bool
	err = conn.Raw(func(dc any) error {
		wc, ok := dc.(*watchedConn)
		if !ok {
			return errors.New("postgres: a pooled connection is not a watched lib/pq connection")
		}
		found, err = wc.queryRow(ctx, query, args, dest)
		return err
	})
	return found, err
}

// queryRow runs query (prepared on this connection at its first use)
// with args and reads its first row into dest. database/sql holds the
// connection for the caller (sql.Conn.Raw), so no other goroutine uses it
// or its statements meanwhile.
func (c *watchedConn) queryRow(ctx context.Context, query string, args []driver.NamedValue, dest []driver.Value) (bool, error) {
	st, ok := c.stmts[query]
	if !ok {
		ps, err := c.PrepareContext(ctx, query)
		if err != nil {
			return false, err
		}
		if c.stmts == nil {
			c.stmts = map[string]driver.Stmt{}
		}
		st = ps
		c.stmts[query] = st
	}
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return false, err
	}
	err = rows.Next(dest)
	cerr := rows.Close()
	if errors.Is(err, io.EOF) {
		return false, cerr
	}
	if err != nil {
		return false, err
	}
	return true, cerr
}
