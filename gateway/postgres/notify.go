package postgres

import (
	"context"
	"encoding/json"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lib/pq"

	"github.com/mcpgate/mcpgate/gateway"
)

// Channels of the store's announcements (LISTEN/NOTIFY). They are
// database-wide: each payload names its schema, and a Listener ignores
// the announcements of other schemas.
const (
	// ChangesChannel carries the change triggers' payloads (migration
	// 00009, 00012): {"s": schema, "t": table, "w": workspace id (absent:
	// every workspace), "k": the token fingerprint (api_tokens) or the
	// session id (EndedSessionsTable)}.
	ChangesChannel = "mcpgate_changes"
	// PolicyChannel carries requests to reload the policy folder on every
	// replica (Store.AnnouncePolicy): {"s": schema, "u": surface ("" for
	// every surface), "r": revision loaded, "o": announcing replica, "t":
	// content hash whose tests passed there ("" none), "n": tests passed,
	// "m": the seal of "t" (gateway.PolicyRequest.Seal)}.
	PolicyChannel = "mcpgate_policy"
)

// PolicyHandler is implemented by a ChangeHandler that also takes the
// policy reload requests of other replicas (PolicyChannel). Like Changed,
// PolicyRequested must return quickly: a reload runs the candidate's
// tests, so it belongs on a goroutine of its own.
type PolicyHandler interface {
	PolicyRequested(r gateway.PolicyRequest)
}

// AnnouncePolicy asks every replica of this schema (this one's listener
// included: compare Origin) to reload its policy folder, on
// PolicyChannel. Errors are EUnavailable.
func (s *Store) AnnouncePolicy(ctx context.Context, r gateway.PolicyRequest) error {
	_, err := s.db.ExecContext(ctx, `SELECT pg_notify($1, json_build_object('s', current_schema(), 'u', $2::text, 'r', $3::text, 'o', $4::text, 't', $5::text, 'n', $6::int, 'm', $7::text)::text)`,
		PolicyChannel, r.Surface, r.Revision, r.Origin, r.Tested, r.Tests, r.Seal)
	if err != nil {
		return gateway.Wrap(gateway.EUnavailable, driverError(err), "cannot ask the other replicas to reload their policy; reload each with `mcpgate policy reload`")
	}
	return nil
}

// EndedSessionsTable is the Change.Table of an ended MCP session
// (migration 00012); its Change.SessionID names the session.
const EndedSessionsTable = "mcp_ended_sessions"

// ChangeHandler receives what a Listener hears. Its methods are called
// from one goroutine, one at a time, and must return quickly (they hold
// up the announcements that follow).
type ChangeHandler interface {
	// Changed is one announced change of the listener's schema.
	Changed(c gateway.Change)
	// Lost says the listening connection dropped or stopped answering:
	// changes made elsewhere are not announced until Resync.
	Lost()
	// Resync says the connection is (again) listening. Changes made
	// while it was down were not announced: drop everything cached.
	Resync()
}

// ListenOptions tune Store.Listen; zero values take the defaults.
type ListenOptions struct {
	// MinReconnect is the first wait before reconnecting after the
	// connection dropped, doubled after each failed attempt up to
	// MaxReconnect. Defaults 100 ms and 5 s.
	MinReconnect, MaxReconnect time.Duration
	// PingInterval is how often an idle connection is checked, and
	// PingTimeout how long a check may take before the connection counts
	// as lost (a server that keeps the socket open but stopped
	// answering). Defaults 5 s and 3 s.
	PingInterval, PingTimeout time.Duration
}

// Listener holds one connection that LISTENs on ChangesChannel and
// reconnects by itself, with backoff, when it drops. Create it with
// Store.Listen and stop it with Close.
type Listener struct {
	pq       *pq.Listener
	h        ChangeHandler
	schema   string
	o        ListenOptions
	received atomic.Uint64
	// unreadable counts the payloads of this listener's channels that
	// are not JSON of the expected shape (Unreadable).
	unreadable atomic.Uint64

	mu sync.Mutex // serializes the handler's calls and guards up
	up bool

	stop chan struct{}
	done sync.WaitGroup
}

// Listen starts listening for the change announcements of this store's
// schema and delivers them to h: Changed for each, Lost when the
// connection drops (or a check of it times out), Resync when it listens
// again, the first time included. It returns once a connection listens,
// or with an EUnavailable error when ctx ends first; the listener then
// keeps trying in the background. Unless the schema could not be read
// (nil Listener), the Listener must be closed either way.
func (s *Store) Listen(ctx context.Context, h ChangeHandler, o ListenOptions) (*Listener, error) {
	if o.MinReconnect <= 0 {
		o.MinReconnect = 100 * time.Millisecond
	}
	if o.MaxReconnect <= 0 {
		o.MaxReconnect = 5 * time.Second
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 5 * time.Second
	}
	if o.PingTimeout <= 0 {
		o.PingTimeout = 3 * time.Second
	}
	var schema string
	if err := s.db.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return nil, driverError(err)
	}
	l := &Listener{h: h, schema: schema, o: o, stop: make(chan struct{})}
	dsn, err := withParam(s.dsn, "application_name", ListenerName(schema))
	if err != nil {
		return nil, gateway.Wrap(gateway.EInvalid, err, "MCPGATE_DATABASE_URL cannot be read for the listening connection")
	}
	l.pq = pq.NewDialListener(listenDialer{}, dsn, o.MinReconnect, o.MaxReconnect, l.event)
	l.done.Add(2)
	go l.receive()
	go l.check()
	// pq's Listen waits until a connection listens, however long that
	// takes; Listen waits for it only until ctx ends.
	listening := make(chan error, 1)
	go func() {
		var err error
		for _, ch := range []string{ChangesChannel, PolicyChannel, RelayChannel} {
			if err = l.pq.Listen(ch); err != nil {
				break
			}
		}
		listening <- err
	}()
	select {
	case err := <-listening:
		if err != nil {
			return l, gateway.Wrap(gateway.EUnavailable, err, "cannot LISTEN for changes made through other replicas")
		}
		return l, nil
	case <-ctx.Done():
		return l, gateway.Wrap(gateway.EUnavailable, ctx.Err(),
			"cannot LISTEN for changes made through other replicas yet; retrying in the background, and until then they are seen within the caller cache's TTL")
	}
}

// ListenerName is the application_name of the listening connection of
// the replicas of schema, as pg_stat_activity shows it:
// "mcpgate listener <schema>".
func ListenerName(schema string) string { return "mcpgate listener " + schema }

// withParam sets a connection parameter in a URL or key=value DSN.
func withParam(dsn, key, value string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", err
		}
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return dsn + " " + key + "='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(value) + "'", nil
}

// Connected reports whether announcements arrive now.
func (l *Listener) Connected() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.up
}

// Received counts the announcements of this schema received so far.
func (l *Listener) Received() uint64 { return l.received.Load() }

// Close stops listening and waits for the handler's last call. Safe to
// call more than once.
func (l *Listener) Close() error {
	select {
	case <-l.stop:
		return nil
	default:
	}
	close(l.stop)
	err := l.pq.Close()
	l.done.Wait()
	return err
}

// event is pq's connection state callback.
func (l *Listener) event(ev pq.ListenerEventType, _ error) {
	switch ev {
	case pq.ListenerEventConnected, pq.ListenerEventReconnected:
		l.setUp(true)
	case pq.ListenerEventDisconnected, pq.ListenerEventConnectionAttemptFailed:
		l.setUp(false)
	}
}

// setUp records the connection's state and tells the handler of a change:
// Resync on every way up, Lost on every way down.
func (l *Listener) setUp(up bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.up == up {
		return
	}
	select {
	case <-l.stop:
		return
	default:
	}
	l.up = up
	if up {
		l.h.Resync()
	} else {
		l.h.Lost()
	}
}

// receive delivers notifications until the listener closes.
func (l *Listener) receive() {
	defer l.done.Done()
	for n := range l.pq.NotificationChannel() {
		if n == nil { // after a reconnect; event already asked for a resync
			continue
		}
		switch n.Channel {
		case PolicyChannel:
			l.policy(n.Extra)
			continue
		case RelayChannel:
			l.relay(n.Extra)
			continue
		}
		c, ok, readable := parseChange(n.Extra, l.schema)
		if !readable {
			l.unreadablePayload(n.Channel)
			continue
		}
		if !ok {
			continue
		}
		l.received.Add(1)
		l.mu.Lock()
		l.h.Changed(c)
		l.mu.Unlock()
	}
}

// policy hands a policy reload request of this schema to the handler,
// when it takes them.
func (l *Listener) policy(extra string) {
	var p struct {
		Schema   string `json:"s"`
		Surface  string `json:"u"`
		Revision string `json:"r"`
		Origin   string `json:"o"`
		Tested   string `json:"t"`
		Tests    int    `json:"n"`
		Seal     string `json:"m"`
	}
	if err := json.Unmarshal([]byte(extra), &p); err != nil {
		l.unreadablePayload(PolicyChannel)
		return
	}
	if p.Schema != l.schema {
		return
	}
	ph, ok := l.h.(PolicyHandler)
	if !ok {
		return
	}
	l.received.Add(1)
	l.mu.Lock()
	ph.PolicyRequested(gateway.PolicyRequest{Surface: p.Surface, Revision: p.Revision, Origin: p.Origin, Tested: p.Tested, Tests: p.Tests, Seal: p.Seal})
	l.mu.Unlock()
}

// relay hands the key of a relayed answer of this schema to the handler,
// when it takes them.
func (l *Listener) relay(extra string) {
	var p struct {
		Schema string `json:"s"`
		Key    string `json:"k"`
	}
	if err := json.Unmarshal([]byte(extra), &p); err != nil {
		l.unreadablePayload(RelayChannel)
		return
	}
	if p.Schema != l.schema {
		return
	}
	if ah, ok := l.h.(AnswerHandler); ok {
		l.mu.Lock()
		ah.RelayAnswered(p.Key)
		l.mu.Unlock()
	}
}

// check pings the connection every PingInterval; a ping that fails or
// takes longer than PingTimeout counts as a lost connection until a ping
// succeeds again. lib/pq notices a closed connection by itself; the ping
// finds a server that stopped answering.
func (l *Listener) check() {
	defer l.done.Done()
	tick := time.NewTicker(l.o.PingInterval)
	defer tick.Stop()
	var pending chan error // a ping still running
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		if pending == nil {
			pending = make(chan error, 1)
			go func(ch chan error) { ch <- l.pq.Ping() }(pending)
		}
		select {
		case err := <-pending:
			pending = nil
			l.setUp(err == nil)
		case <-time.After(l.o.PingTimeout):
			l.setUp(false)
		case <-l.stop:
			return
		}
	}
}

// payload is what the change triggers send.
type payload struct {
	Schema    string  `json:"s"`
	Table     string  `json:"t"`
	Workspace *string `json:"w"`
	Token     string  `json:"k"`
}

// UnreadableHandler is implemented by a ChangeHandler that wants to hear
// of payloads that are not JSON of the expected shape. Only the change
// triggers and the replicas announce on the store's channels, and they
// always send JSON: anything else was sent by someone else who may
// connect to the database, so it is ignored, never read as "everything
// changed" (which would have every replica rebuild every open stream's
// tool list per payload). Unreadable is called for the first such
// payload of a Listener only (the count is Listener.Unreadable), so a
// flood logs one line.
type UnreadableHandler interface {
	Unreadable(channel string)
}

// Unreadable counts the payloads received that were not JSON of the
// expected shape, of any schema (they cannot tell theirs); they were
// ignored.
func (l *Listener) Unreadable() uint64 { return l.unreadable.Load() }

// unreadablePayload counts one unreadable payload on channel and tells
// the handler of the first.
func (l *Listener) unreadablePayload(channel string) {
	if l.unreadable.Add(1) != 1 {
		return
	}
	if uh, ok := l.h.(UnreadableHandler); ok {
		l.mu.Lock()
		uh.Unreadable(channel)
		l.mu.Unlock()
	}
}

// parseChange decodes a trigger's payload: ok is false for another
// schema's, readable false for a payload that is not JSON of the
// triggers' shape (ignored: see UnreadableHandler).
func parseChange(extra, schema string) (c gateway.Change, ok, readable bool) {
	var p payload
	if err := json.Unmarshal([]byte(extra), &p); err != nil {
		return gateway.Change{}, false, false
	}
	if p.Schema != schema {
		return gateway.Change{}, false, true
	}
	c = gateway.Change{Table: p.Table, TokenFingerprint: p.Token}
	if p.Table == EndedSessionsTable {
		c.TokenFingerprint, c.SessionID = "", p.Token
	}
	if p.Workspace != nil {
		c.WorkspaceID = *p.Workspace
	}
	return c, true, true
}

// listenDialer opens the listening connection: connect within
// DefaultConnectTimeout, and TCP keep-alive probes that find a vanished
// server within about 20 s.
type listenDialer struct{}

var listenNetDialer = net.Dialer{
	Timeout:         DefaultConnectTimeout,
	KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: 5 * time.Second, Count: 3},
}

func (listenDialer) Dial(network, address string) (net.Conn, error) {
	return listenNetDialer.Dial(network, address)
}

func (listenDialer) DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	d := listenNetDialer
	d.Timeout = min(timeout, DefaultConnectTimeout)
	return d.Dial(network, address)
}
