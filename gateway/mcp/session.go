package mcp

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/sessionid"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// Header names of the Streamable HTTP transport (MCP 2025-11-25,
// basic/transports, "Session Management" and "Protocol Version Header").
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
)

// session is what this replica holds of one MCP session. A Streamable HTTP
// session is created by initialize (on any replica) and ended by DELETE (on
// any replica) or by its age (Options.SessionMaxAge); this struct is its
// local state, made on the first request this replica sees and dropped by
// Transport.Close, by SessionIdle without a request here, or to make room
// (createSession), none of which ends the session itself (gateway/mcp/sessionid). A
// legacy session (the 2024-11-05 HTTP+SSE transport) is created by its GET
// stream instead, lives exactly as long as that stream, and exists only on
// the replica that serves the stream.
type session struct {
	id        string
	until     time.Time // when the id stops verifying; zero for legacy sessions
	owner     sessionid.Identity
	principal gateway.Principal // snapshot at initialize, for NotifyToolsChanged
	version   string            // negotiated protocol version; legacy sessions keep 2024-11-05 (the transport's version: it picks the reply to a refused tools/call)
	legacy    bool

	initialized atomic.Bool   // legacy: initialize answered (it may come only once)
	slots       chan struct{} // legacy: one token per POST being handled in the background

	lastSeen atomic.Int64 // unix nanoseconds of the last request
	done     chan struct{}
	endOnce  sync.Once

	mu       sync.Mutex
	stream   chan []byte                      // open GET stream's outbox; nil when none
	inflight map[string][]*context.CancelFunc // running requests by raw id; a reused id has several
	tools    toolSet                          // the tool set this session's client last knew
	notice   []byte                           // a listen stream's tools/list_changed; nil: toolsChanged

	logLevel atomic.Pointer[string] // logging/setLevel of this replica's state; nil: defaultLogLevel

	// elicitForm: the client declared elicitation in form mode at
	// initialize (Streamable HTTP: read from the signed id; legacy: set by
	// its initialize), so the gateway may ask its user for approvals.
	elicitForm atomic.Bool
}

func newSession(id string, p *gateway.Principal, version string, legacy bool, now time.Time) *session {
	s := &session{
		id:        id,
		owner:     sessionid.IdentityOf(p),
		principal: *p,
		version:   version,
		legacy:    legacy,
		done:      make(chan struct{}),
		inflight:  map[string][]*context.CancelFunc{},
	}
	s.principal.Scopes = slices.Clone(p.Scopes)
	if legacy {
		s.slots = make(chan struct{}, legacyInflight)
	}
	s.lastSeen.Store(now.UnixNano())
	return s
}

// end closes the session: its GET stream returns and running requests are
// cancelled. Safe to call more than once.
func (s *session) end() {
	s.endOnce.Do(func() {
		close(s.done)
		s.mu.Lock()
		for _, cancels := range s.inflight {
			for _, cancel := range cancels {
				(*cancel)()
			}
		}
		s.mu.Unlock()
	})
}

func (s *session) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// track registers a running request so notifications/cancelled and the end
// of the session can cancel it; the returned func unregisters it. A client
// that reuses the id of a request still running gets both tracked: a later
// request never hides an earlier one from the session's end.
func (s *session) track(ctx context.Context, id string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	entry := &cancel
	s.mu.Lock()
	if s.ended() {
		cancel()
	}
	s.inflight[id] = append(s.inflight[id], entry)
	s.mu.Unlock()
	return ctx, func() {
		s.mu.Lock()
		rest := slices.DeleteFunc(s.inflight[id], func(e *context.CancelFunc) bool { return e == entry })
		if len(rest) == 0 {
			delete(s.inflight, id)
		} else {
			s.inflight[id] = rest
		}
		s.mu.Unlock()
		cancel()
	}
}

// cancel cancels every running request with the raw id.
func (s *session) cancel(id string) {
	s.mu.Lock()
	for _, c := range s.inflight[id] {
		(*c)()
	}
	s.mu.Unlock()
}

// openStream registers the GET stream; ok is false when one is already open.
func (s *session) openStream() (ch chan []byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stream != nil {
		return nil, false
	}
	s.stream = make(chan []byte, streamBuffer)
	return s.stream, true
}

func (s *session) closeStream() {
	s.mu.Lock()
	s.stream = nil
	s.mu.Unlock()
}

// send queues msg on the open GET stream without blocking. It reports false
// when no stream is open or its buffer is full (a client that does not read
// loses notifications rather than stalling the sender).
func (s *session) send(msg []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stream == nil {
		return false
	}
	select {
	case s.stream <- msg:
		return true
	default:
		return false
	}
}

// deliver queues msg on the open stream, waiting while its buffer is full;
// it reports false when no stream is open or the session ends first. Legacy
// sessions send their responses this way: a response may not be dropped.
func (s *session) deliver(msg []byte) bool {
	s.mu.Lock()
	ch := s.stream
	s.mu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case ch <- msg:
		return true
	case <-s.done:
		return false
	}
}

// streamBuffer is how many notifications wait for a slow GET stream reader.
const streamBuffer = 16

// createSession stores a new session for p; it fails when the transport is
// closed.
//
// Sessions are bounded so that initialize in a loop cannot exhaust memory:
// a principal keeps at most MaxSessionsPerPrincipal on this replica (the
// local state of its least recently used session is dropped to make room:
// a legacy session ends, a Streamable HTTP one is rebuilt from its id on
// its next request), and the transport refuses new local state beyond
// MaxSessions.
func (t *Transport) createSession(p *gateway.Principal, version string, caps sessionid.Caps, legacy bool) (*session, error) {
	now := time.Now()
	id := rand.Text() // legacy: 128 bits, base32, visible ASCII as the spec requires
	if !legacy {
		id = t.signer.Mint(p, version, caps, now)
	}
	s := newSession(id, p, version, legacy, now)
	s.elicitForm.Store(caps&sessionid.CapElicitForm != 0)
	if !legacy {
		s.until = now.Add(t.opts.SessionMaxAge)
	}
	if err := t.admit(s); err != nil {
		return nil, err
	}
	t.log.Debug("mcp: session started", zap.String("session", s.id), zap.String("version", version))
	return s, nil
}

// admit stores s under the session limits (see createSession).
func (t *Transport) admit(s *session) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return errClosed
	}
	if len(t.sessions) >= MaxSessions {
		t.mu.Unlock()
		return errTooManySessions
	}
	evict := t.oldestOverLimit(s.owner)
	t.sessions[s.id] = s
	t.mu.Unlock()
	if evict != nil {
		t.endSession(evict, "session limit of its principal reached")
	}
	return nil
}

// Session limits (see createSession).
const (
	MaxSessionsPerPrincipal = 64
	MaxSessions             = 20000
)

var errTooManySessions = gateway.Errorf(gateway.EUnavailable, "this MCP endpoint has too many open sessions; end unused sessions (DELETE) or retry later")

// oldestOverLimit returns owner's least recently used session when owner
// already holds MaxSessionsPerPrincipal, else nil. t.mu must be held.
func (t *Transport) oldestOverLimit(owner sessionid.Identity) *session {
	var oldest *session
	n := 0
	for _, s := range t.sessions {
		if s.owner != owner {
			continue
		}
		n++
		if oldest == nil || s.lastSeen.Load() < oldest.lastSeen.Load() {
			oldest = s
		}
	}
	if n < MaxSessionsPerPrincipal {
		return nil
	}
	return oldest
}

// errClosed answers requests that arrive after Transport.Close.
var errClosed = gateway.Errorf(gateway.EUnavailable, "the MCP endpoint is shutting down; retry against another instance")

// session resolves the Mcp-Session-Id of a non-initialize request for p and
// checks its MCP-Protocol-Version header (MCP 2025-11-25, basic/transports).
func (t *Transport) session(r *http.Request, p *gateway.Principal) (*session, error) {
	id := r.Header.Get(headerSessionID)
	if id == "" {
		return nil, wire.ErrInvalidRequest("missing Mcp-Session-Id header; send initialize first and repeat the session id it returns on every request")
	}
	s, err := t.lookupStreamable(r.Context(), id, p)
	if err != nil {
		return nil, err
	}
	if err := checkVersionHeader(r, s.version); err != nil {
		return nil, err
	}
	return s, nil
}

// errNoSession is lookup's failure; callers turn it into their 404.
var errNoSession = errors.New("no such session")

// errSessionNotFound answers a Streamable HTTP request whose session id
// does not verify for its credential, is too old, or was ended.
var errSessionNotFound = wire.ErrStatus(http.StatusNotFound, gateway.ENotFound,
	"session not found or ended; send initialize again without Mcp-Session-Id")

// sessionCheckTimeout bounds the store lookup of a session's end on every
// request: a database that stops answering must not hold the request
// before its call has even started on its own store budget (the call's
// refusal then comes within a few seconds, not after the driver gives up).
const sessionCheckTimeout = 2 * time.Second

// lookupStreamable returns this replica's state of the Streamable HTTP
// session id owned by p, building it from the id when this replica has not
// seen the session (or dropped its state): the id must verify for p's
// credential, be younger than SessionMaxAge and not be recorded in
// SessionEnds. It marks the session active.
func (t *Transport) lookupStreamable(ctx context.Context, id string, p *gateway.Principal) (*session, error) {
	now := time.Now()
	claims, err := t.signer.Verify(id, p, now)
	if err != nil {
		return nil, errSessionNotFound
	}
	cctx, cancel := context.WithTimeout(ctx, sessionCheckTimeout)
	ended, err := t.opts.SessionEnds.Ended(cctx, id)
	cancel()
	if err != nil {
		return nil, gateway.Wrap(gateway.EUnavailable, err,
			"could not check whether this MCP session has ended; retry shortly")
	}
	if ended {
		return nil, errSessionNotFound
	}
	t.mu.RLock()
	s := t.sessions[id]
	t.mu.RUnlock()
	if s != nil && !s.legacy && !s.ended() {
		s.lastSeen.Store(now.UnixNano())
		return s, nil
	}
	s = newSession(id, p, claims.Version, false, now)
	s.elicitForm.Store(claims.Caps&sessionid.CapElicitForm != 0)
	s.until = claims.Created.Add(t.opts.SessionMaxAge)
	if err := t.admit(s); err != nil {
		return nil, err
	}
	t.log.Debug("mcp: session state built from its id", zap.String("session", id), zap.String("version", claims.Version))
	return s, nil
}

// lookupLegacy returns the live legacy (HTTP+SSE) session id owned by p and
// marks it active. Another principal's session, or a Streamable HTTP one,
// is not found: ids are not shared across credentials or transports.
func (t *Transport) lookupLegacy(id string, p *gateway.Principal) (*session, error) {
	now := time.Now()
	t.mu.RLock()
	s := t.sessions[id]
	t.mu.RUnlock()
	if s == nil || !s.legacy || s.ended() || t.expired(s, now) || s.owner != sessionid.IdentityOf(p) {
		return nil, errNoSession
	}
	s.lastSeen.Store(now.UnixNano())
	return s, nil
}

// expired reports local state to drop: a session idle on this replica for
// longer than SessionIdle, or past its age. A legacy session never expires
// this way: its open stream is the session, and it ends when the stream
// does.
func (t *Transport) expired(s *session, now time.Time) bool {
	return !s.legacy && (now.Sub(time.Unix(0, s.lastSeen.Load())) > t.opts.SessionIdle || now.After(s.until))
}

// endSession removes s and ends it.
func (t *Transport) endSession(s *session, why string) {
	t.mu.Lock()
	if t.sessions[s.id] == s {
		delete(t.sessions, s.id)
	}
	t.mu.Unlock()
	s.end()
	t.log.Debug("mcp: session ended", zap.String("session", s.id), zap.String("why", why))
}

// janitor drops the local state of idle sessions until Close.
func (t *Transport) janitor() {
	defer t.wg.Done()
	// Expiry is also checked on every lookup, so the sweep only frees memory.
	tick := time.NewTicker(max(min(t.opts.SessionIdle/2, time.Minute), 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case now := <-tick.C:
			t.sweep(now)
		}
	}
}

// sweep drops the local state of every session idle for longer than
// SessionIdle (its open GET stream ends, its running calls are cancelled);
// the session itself stays valid and is rebuilt from its id on its next
// request.
func (t *Transport) sweep(now time.Time) {
	var idle []*session
	t.mu.RLock()
	for _, s := range t.sessions {
		if t.expired(s, now) {
			idle = append(idle, s)
		}
	}
	t.mu.RUnlock()
	for _, s := range idle {
		t.endSession(s, "idle")
	}
}

// checkVersionHeader applies the protocol version header rule: absent means
// the session's negotiated version (the spec's 2025-03-26 fallback is only
// for servers with no other way to know); present, it must be supported and
// equal to the negotiated one.
func checkVersionHeader(r *http.Request, negotiated string) error {
	v := r.Header.Get(headerProtocolVersion)
	switch {
	case v == "" || v == negotiated:
		return nil
	case !versionOf(v).Streamable:
		return wire.ErrInvalidRequest("unsupported MCP-Protocol-Version %q; this server supports %v and this session negotiated %s",
			v, supportedVersions, negotiated)
	default:
		return wire.ErrInvalidRequest("MCP-Protocol-Version %q differs from the version %s negotiated by initialize for this session",
			v, negotiated)
	}
}
