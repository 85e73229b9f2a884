package postgres

import (
	"context"
	"database/sql/driver"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
)

// Deadlines of the store's network operations. A PostgreSQL server that
// keeps the connection open but stops answering (a hung host, a proxy that
// forwards nothing) would otherwise hold a call for as long as the kernel
// keeps the socket: lib/pq reads without a deadline, and its answer to a
// cancelled context, a CancelRequest on a new connection, goes to the
// same unresponsive server.
const (
	// DefaultConnectTimeout bounds opening a connection (TCP connect and
	// startup), unless the URL sets connect_timeout itself.
	DefaultConnectTimeout = 5 * time.Second
	// DefaultOperationTimeout bounds a statement, or a transaction from
	// BEGIN to COMMIT, whose context has no deadline of its own. A
	// context with a deadline, or one that is cancelled, ends the
	// operation at that deadline or cancellation instead.
	DefaultOperationTimeout = 10 * time.Second
)

// expiredDeadline is a read/write deadline in the past: it fails the
// connection's blocked and future reads and writes at once.
var expiredDeadline = time.Unix(1, 0)

// connector opens lib/pq connections whose network reads and writes end
// when the context of the operation using them ends (watch), so a caller
// returns at its deadline whatever the server does.
type connector struct {
	pq *pq.Connector
	// opTimeout is DefaultOperationTimeout, or a test's shorter one.
	opTimeout time.Duration
}

var _ driver.Connector = (*connector)(nil)

// newConnector parses dsn (URL or key=value) and applies
// DefaultConnectTimeout when dsn has no connect_timeout.
func newConnector(dsn string, opTimeout time.Duration) (*connector, error) {
	cfg, err := pq.NewConfig(dsn)
	if err != nil {
		return nil, err
	}
	if cfg.ConnectTimeout <= 0 {
		// lib/pq applies it to the dial and the startup handshake, and to
		// the connection of a CancelRequest, which it then never clears:
		// a cancel sent to a stalled server gives up after it too.
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	c, err := pq.NewConnectorConfig(cfg)
	if err != nil {
		return nil, err
	}
	c.Dialer(dialer{})
	return &connector{pq: c, opTimeout: opTimeout}, nil
}

// Connect opens one connection, with the net.Conn the dialer wrapped.
// When ctx ends first, the connection being opened is expired: lib/pq
// uses ctx only for the dial, not for the startup handshake.
func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	d := &dialing{}
	stop := context.AfterFunc(ctx, d.expire)
	dc, err := c.pq.Connect(context.WithValue(ctx, dialingKey{}, d))
	if !stop() && err == nil {
		_ = dc.Close()
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	nc := d.conn()
	if nc == nil { // cannot happen: every connection goes through dialer
		_ = dc.Close()
		return nil, driver.ErrBadConn
	}
	return &watchedConn{Conn: dc, nc: nc, opTimeout: c.opTimeout}, nil
}

// Driver implements driver.Connector.
func (c *connector) Driver() driver.Driver { return c.pq.Driver() }

// dialingKey carries a *dialing in Connect's context.
type dialingKey struct{}

// dialing is where dialer puts the connection Connect is opening, and
// whether Connect's context ended (expire) before it was opened.
type dialing struct {
	mu      sync.Mutex
	nc      *netConn
	expired bool
}

func (d *dialing) set(nc *netConn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nc = nc
	if d.expired {
		nc.expire()
	}
}

func (d *dialing) expire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expired = true
	if d.nc != nil {
		d.nc.expire()
	}
}

func (d *dialing) conn() *netConn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.nc
}

// cancelTimeout bounds lib/pq's CancelRequest connections, which it dials
// outside Connect once a statement's context ended, and for which the
// statement then waits: the request is one packet, written right after
// the dial, so a healthy server has it at once, and a stalled server does
// not hold the caller for more than this past its deadline.
const cancelTimeout = 250 * time.Millisecond

// dialer dials TCP (or a Unix socket) and wraps the connection in a netConn.
type dialer struct{}

var netDialer = net.Dialer{KeepAlive: 30 * time.Second}

func (dialer) Dial(network, address string) (net.Conn, error) {
	return dialer{}.DialContext(context.Background(), network, address)
}

func (dialer) DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return dialer{}.DialContext(ctx, network, address)
}

func (dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	d, forConnect := ctx.Value(dialingKey{}).(*dialing)
	var limit time.Time
	if !forConnect { // a CancelRequest
		limit = time.Now().Add(cancelTimeout)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, limit)
		defer cancel()
	}
	c, err := netDialer.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	nc := &netConn{Conn: c, limit: limit}
	if forConnect {
		d.set(nc)
	} else {
		_ = c.SetDeadline(limit)
	}
	return nc, nil
}

// netConn is a connection whose pending and future reads and writes can be
// failed from another goroutine (expire), and whose deadlines never go
// past limit when it is set.
type netConn struct {
	net.Conn
	limit   time.Time
	expired atomic.Bool
}

// expire fails the connection's I/O now; the connection is then bad and
// database/sql discards it.
func (c *netConn) expire() {
	c.expired.Store(true)
	_ = c.Conn.SetDeadline(expiredDeadline)
}

func (c *netConn) clamp(t time.Time) time.Time {
	if !c.limit.IsZero() && (t.IsZero() || t.After(c.limit)) {
		return c.limit
	}
	return t
}

func (c *netConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(c.clamp(t)) }
func (c *netConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(c.clamp(t)) }
func (c *netConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.clamp(t)) }

// watchedConn is a lib/pq connection whose every operation is watched: when the
// operation's context ends (its deadline, a cancellation, or
// opTimeout when it has no deadline) before the operation returns, the
// network connection is expired, so the operation returns at once with an
// error instead of waiting for a server that does not answer.
type watchedConn struct {
	driver.Conn
	nc        *netConn
	opTimeout time.Duration
	// stmts are the statements queryRow prepared on this connection, by
	// query; they end with it.
	stmts map[string]driver.Stmt
}

// The interfaces lib/pq's connection implements, which database/sql looks for.
var (
	_ driver.ConnPrepareContext = (*watchedConn)(nil)
	_ driver.ConnBeginTx        = (*watchedConn)(nil)
	_ driver.ExecerContext      = (*watchedConn)(nil)
	_ driver.QueryerContext     = (*watchedConn)(nil)
	_ driver.Pinger             = (*watchedConn)(nil)
	_ driver.SessionResetter    = (*watchedConn)(nil)
	_ driver.Validator          = (*watchedConn)(nil)
	_ driver.NamedValueChecker  = (*watchedConn)(nil)
)

// watch expires the connection when ctx ends (or after opTimeout when ctx
// has no deadline) before the returned stop is called.
func (c *watchedConn) watch(ctx context.Context) (stop func()) {
	cancel := context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		ctx, cancel = context.WithTimeout(ctx, c.opTimeout)
	}
	unwatch := context.AfterFunc(ctx, c.nc.expire)
	return func() {
		unwatch()
		cancel()
	}
}

func (c *watchedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	stop := c.watch(ctx)
	defer stop()
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &watchedStmt{Stmt: st, c: c}, nil
}

// BeginTx watches the transaction from BEGIN until its COMMIT or ROLLBACK
// returns: lib/pq's Commit and Rollback take no context.
func (c *watchedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	stop := c.watch(ctx)
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		stop()
		return nil, err
	}
	return &watchedTx{Tx: tx, stop: stop}, nil
}

func (c *watchedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	stop := c.watch(ctx)
	defer stop()
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *watchedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	stop := c.watch(ctx)
	r, err := c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	if err != nil {
		stop()
		return nil, err
	}
	return &watchedRows{Rows: r, stop: stop}, nil
}

func (c *watchedConn) Ping(ctx context.Context) error {
	stop := c.watch(ctx)
	defer stop()
	return c.Conn.(driver.Pinger).Ping(ctx)
}

// ResetSession reports an expired connection as bad, so that it is not
// reused.
func (c *watchedConn) ResetSession(ctx context.Context) error {
	if c.nc.expired.Load() {
		return driver.ErrBadConn
	}
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

// IsValid is false for an expired connection, so that database/sql closes
// it instead of returning it to the pool.
func (c *watchedConn) IsValid() bool {
	return !c.nc.expired.Load() && c.Conn.(driver.Validator).IsValid()
}

func (c *watchedConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.Conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

// Close sends lib/pq's Terminate within opTimeout and closes the socket.
func (c *watchedConn) Close() error {
	stop := c.watch(context.Background())
	defer stop()
	return c.Conn.Close()
}

// watchedTx ends the transaction's watch once COMMIT or ROLLBACK has returned.
type watchedTx struct {
	driver.Tx
	stop func()
}

func (t *watchedTx) Commit() error {
	defer t.stop()
	return t.Tx.Commit()
}

func (t *watchedTx) Rollback() error {
	defer t.stop()
	return t.Tx.Rollback()
}

// watchedStmt is a prepared statement of a watched conn.
type watchedStmt struct {
	driver.Stmt
	c *watchedConn
}

var (
	_ driver.StmtExecContext  = (*watchedStmt)(nil)
	_ driver.StmtQueryContext = (*watchedStmt)(nil)
)

func (s *watchedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	stop := s.c.watch(ctx)
	defer stop()
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *watchedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	stop := s.c.watch(ctx)
	r, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		stop()
		return nil, err
	}
	return &watchedRows{Rows: r, stop: stop}, nil
}

// Close deallocates the statement on the server within opTimeout
// (database/sql closes statements without a context).
func (s *watchedStmt) Close() error {
	stop := s.c.watch(context.Background())
	defer stop()
	return s.Stmt.Close()
}

// watchedRows keeps the query's watch until the rows are closed: lib/pq reads
// the remaining rows from the network in Next and Close.
type watchedRows struct {
	driver.Rows
	stop func()
}

func (r *watchedRows) Close() error {
	defer r.stop()
	return r.Rows.Close()
}

// ColumnTypeDatabaseTypeName forwards lib/pq's column type names.
func (r *watchedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

// HasNextResultSet and NextResultSet forward lib/pq's multiple result sets.
func (r *watchedRows) HasNextResultSet() bool {
	if m, ok := r.Rows.(driver.RowsNextResultSet); ok {
		return m.HasNextResultSet()
	}
	return false
}

func (r *watchedRows) NextResultSet() error {
	if m, ok := r.Rows.(driver.RowsNextResultSet); ok {
		return m.NextResultSet()
	}
	return io.EOF
}
