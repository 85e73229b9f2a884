package mcp

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
)

// Header names of the Streamable HTTP transport (MCP 2025-11-25,
// basic/transports, "Session Management" and "Protocol Version Header").
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
)

// identity is what binds a session to its owner: the whole identity of the
// credential that opened it, every field of gateway.Principal except the
// expiry (a renewed token keeps its sessions). A session id presented with
// a credential that differs in any of them (another user, workspace, task,
// agent profile, kind, token or scope set) is treated as unknown (404): it
// cannot use, stream, cancel calls of, post to or end the session, so a
// leaked session id is useless without the credential that opened it (MCP
// 2025-11-25, basic/security_best_practices, "Session Hijacking").
type identity struct {
	kind      gateway.PrincipalKind
	subject   string
	workspace string
	task      string
	profile   string
	tokenFP   string
	scopes    string // sorted and quoted: ["mcp:ops" "mcp:read"]
}

func identityOf(p *gateway.Principal) identity {
	scopes := slices.Clone(p.Scopes)
	slices.Sort(scopes)
	return identity{
		kind: p.Kind, subject: p.Subject, workspace: p.WorkspaceID, task: p.TaskID,
		profile: p.ProfileID, tokenFP: p.TokenFingerprint, scopes: fmt.Sprintf("%q", scopes),
	}
}

// session is one MCP session: created by initialize, ended by DELETE,
// Transport.Close or SessionIdle without a request. A legacy session (the
// 2024-11-05 HTTP+SSE transport) is created by its GET stream instead and
// lives exactly as long as that stream.
type session struct {
	id        string
	owner     identity
	principal gateway.Principal // snapshot at initialize, for NotifyToolsChanged
	version   string            // negotiated protocol version; legacy sessions keep 2024-11-05, unread
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
}

func newSession(p *gateway.Principal, version string, legacy bool, now time.Time) *session {
	s := &session{
		id:        rand.Text(), // 128 bits, base32: visible ASCII as the spec requires
		owner:     identityOf(p),
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
// a principal keeps at most MaxSessionsPerPrincipal (its least recently
// used session is ended to make room, and its client re-initializes on the
// 404), and the transport refuses new sessions beyond MaxSessions.
func (t *Transport) createSession(p *gateway.Principal, version string, legacy bool) (*session, error) {
	s := newSession(p, version, legacy, time.Now())
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, errClosed
	}
	if len(t.sessions) >= MaxSessions {
		t.mu.Unlock()
		return nil, errTooManySessions
	}
	evict := t.oldestOverLimit(s.owner)
	t.sessions[s.id] = s
	t.mu.Unlock()
	if evict != nil {
		t.endSession(evict, "session limit of its principal reached")
	}
	t.log.Debug("mcp: session started", zap.String("session", s.id), zap.String("version", version))
	return s, nil
}

// Session limits (see createSession).
const (
	MaxSessionsPerPrincipal = 64
	MaxSessions             = 20000
)

var errTooManySessions = gateway.Errorf(gateway.EUnavailable, "this MCP endpoint has too many open sessions; end unused sessions (DELETE) or retry later")

// oldestOverLimit returns owner's least recently used session when owner
// already holds MaxSessionsPerPrincipal, else nil. t.mu must be held.
func (t *Transport) oldestOverLimit(owner identity) *session {
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
		return nil, errInvalidRequest("missing Mcp-Session-Id header; send initialize first and repeat the session id it returns on every request")
	}
	s, err := t.lookup(id, p, false)
	if err != nil {
		return nil, errStatus(http.StatusNotFound, gateway.ENotFound,
			"session not found or ended; send initialize again without Mcp-Session-Id")
	}
	if err := checkVersionHeader(r, s.version); err != nil {
		return nil, err
	}
	return s, nil
}

// errNoSession is lookup's failure; callers turn it into their 404.
var errNoSession = errors.New("no such session")

// lookup returns the live session id of transport kind legacy owned by p
// and marks it active. Another principal's session, or one of the other
// transport, is not found: ids are not shared across credentials or
// transports.
func (t *Transport) lookup(id string, p *gateway.Principal, legacy bool) (*session, error) {
	now := time.Now()
	t.mu.RLock()
	s := t.sessions[id]
	t.mu.RUnlock()
	if s == nil || s.legacy != legacy || s.ended() || t.expired(s, now) || s.owner != identityOf(p) {
		return nil, errNoSession
	}
	s.lastSeen.Store(now.UnixNano())
	return s, nil
}

// expired reports a session idle for longer than SessionIdle. A legacy
// session never expires this way: its open stream is the session, and it
// ends when the stream does.
func (t *Transport) expired(s *session, now time.Time) bool {
	return !s.legacy && now.Sub(time.Unix(0, s.lastSeen.Load())) > t.opts.SessionIdle
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

// janitor ends idle sessions until Close.
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

// sweep ends every session idle for longer than SessionIdle.
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
	case !slices.Contains(supportedVersions, v):
		return errInvalidRequest("unsupported MCP-Protocol-Version %q; this server supports %v and this session negotiated %s",
			v, supportedVersions, negotiated)
	default:
		return errInvalidRequest("MCP-Protocol-Version %q differs from the version %s negotiated by initialize for this session",
			v, negotiated)
	}
}
