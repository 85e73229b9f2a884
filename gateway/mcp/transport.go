// Package mcp is mcpgate's MCP transport: Streamable HTTP (JSON-RPC 2.0 over
// POST, GET and DELETE on one endpoint) and, for older clients, the
// 2024-11-05 HTTP+SSE transport (LegacyHandler), with every request
// authenticated, sessions bound to the authenticated principal, Host,
// Origin and CORS checks before authentication, and tools/list and
// tools/call handed to a Handler (docs/http.md; MCP specification
// 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25 and 2026-07-28,
// basic/transports and basic/lifecycle or basic/versioning). It also
// serves OAuth protected resource metadata (RFC 9728, MetadataHandler) and
// announces tool set changes (RefreshTools).
//
// The transport moves messages; protocol behaviour is tables. Three thin
// HTTP fronts read top to bottom: Streamable HTTP with sessions
// (streamable.go), the stateless 2026-07-28 protocol on the same endpoint
// (modern.go: server/discover, per-request _meta, the standard headers
// checked against the body, subscriptions/listen) and the HTTP+SSE
// transport (legacy.go). Each parses the body (gateway/mcp/jsonrpc), takes
// the authenticated principal and serves each request by the method table
// (dispatch.go: per method, its handler on a session and statelessly,
// whether it starts a session, its cache hints); what differs between
// protocol versions is the version table (versions.go). Session ids of the
// session-based versions are signed and self-contained
// (gateway/mcp/sessionid), so any replica that shares the key serves any
// session.
//
// During a tools/call on a session, the upstream's messages are relayed
// to the client through a wire.Relay in the call's context (relay.go):
// notifications and server-to-client requests on the call's own stream,
// the client's responses routed back.
//
// What it deliberately leaves out: SSE event ids and resumption (streams
// carry no ids, so clients do not send Last-Event-ID), relaying on the
// stateless 2026-07-28 path (no progress there, and the input-required
// results that replace server-to-client requests are not relayed). The
// 2026-07-28 Mcp-Param-* headers are checked by the pipeline
// (a direct call of wire.CheckParamHeaders), once the policy
// allowed the tool.
package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/semaphore"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/jsonrpc"
	"github.com/mcpgate/mcpgate/gateway/mcp/sessionid"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// Authenticator authenticates one HTTP request. On failure it returns a
// *gateway.Error with Code EUnauthenticated (answered with HTTP 401); any
// other error is answered with its own class (e.g. EUnavailable: 503).
type Authenticator interface {
	Authenticate(r *http.Request) (*gateway.Principal, error)
}

// Handler serves MCP methods for an authenticated principal. Errors are
// *gateway.Error (or wrap one); any other error is reported as Internal.
type Handler interface {
	// ListTools returns every tool p may see, in order; the transport
	// paginates.
	ListTools(ctx context.Context, p *gateway.Principal) ([]gateway.ListedTool, error)
	// CallTool runs one tools/call. The result is sent as the MCP
	// CallToolResult.
	CallTool(ctx context.Context, p *gateway.Principal, call *gateway.CallRequest) (*gateway.ToolResult, error)
}

// Options configure a Transport. Authenticator and Handler are required;
// every other field has a default.
type Options struct {
	Authenticator Authenticator
	Handler       Handler
	// RefusedMethod, when set, is told of every request this endpoint
	// refuses with -32601 because it does not serve the method (on a
	// session, or statelessly), with the authenticated caller and the
	// method as sent, and the request's context (its trace); it runs on
	// the request's goroutine, so keep it fast (the server queues an
	// audit event of kind method). nil: nobody is told.
	RefusedMethod func(ctx context.Context, p *gateway.Principal, method string)
	// Logger receives internal errors (error level) and request details
	// (debug). Never a credential. Default: no logging.
	Logger *zap.Logger
	// MaxBodyBytes caps a POST body; larger bodies get HTTP 413 with a
	// JSON-RPC error. Default 1 MiB.
	MaxBodyBytes int64
	// MaxBatchMessages caps the members (requests, notifications and
	// responses) of one JSON-RPC batch, which 2025-03-26 sessions and the
	// HTTP+SSE transport accept. A larger batch is refused whole, before
	// any member runs, with HTTP 413 and a -32600 error naming the limit.
	// Default DefaultMaxBatchMessages.
	MaxBatchMessages int
	// MaxBatchReplyBytes is the reply budget of one POST, in bytes of
	// encoded JSON-RPC responses. The members of a batch run in order;
	// once the responses sent so far reach the budget, each later request
	// is answered with a -32600 error naming the budget (data.status 413)
	// instead of running. A request that ran keeps its response, so one
	// POST's replies exceed the budget by at most one response, and a
	// single request is never refused by it. Default
	// DefaultMaxBatchReplyBytes.
	MaxBatchReplyBytes int64
	// MaxHeldBodyBytes bounds the request bodies the transport holds at
	// once, in bytes, summed over every request of every client: a body
	// is held from the moment it is read until its requests are answered
	// (for the HTTP+SSE transport, until its background work ends). A POST
	// that would exceed it is refused with HTTP 503 and Retry-After, so
	// many slow requests cannot pin the gateway's memory whatever the
	// connection and session limits. Default DefaultMaxHeldBodyBytes.
	MaxHeldBodyBytes int64
	// PageSize is the number of tools per tools/list page. Default
	// DefaultPageSize.
	PageSize int
	// ServerName and ServerVersion are sent as serverInfo. Default "mcpgate", "dev".
	ServerName, ServerVersion string
	// Instructions are sent in the initialize result when not empty.
	Instructions string
	// AllowedOrigins lists the Origin header values accepted (e.g.
	// "https://app.example.com"; "*" accepts every origin). A request with
	// an Origin not listed gets HTTP 403 before authentication, so by
	// default browsers are refused (MCP basic/transports, "Security
	// Warning"). A listed origin gets CORS headers and its preflight
	// OPTIONS requests are answered with 204. Requests without Origin pass
	// and get no CORS headers.
	AllowedOrigins []string
	// AllowedHosts lists the Host header values accepted, against DNS
	// rebinding (MCP 2025-11-25, basic/security_best_practices, "Local MCP
	// Server Compromise"): "name" matches on any port, "name:port" only on
	// that port, IPv6 in brackets ("[::1]"), "*" matches every host. Any
	// other Host gets HTTP 403 with a JSON-RPC error, before
	// authentication. Empty: no Host check.
	AllowedHosts []string
	// CORSMaxAge is the Access-Control-Max-Age of preflight answers, in
	// seconds. Default DefaultCORSMaxAge.
	CORSMaxAge int
	// ResourceMetadataURL is the URL of this server's OAuth protected
	// resource metadata (RFC 9728, see MetadataURL); when set, the default
	// challenge names it so OAuth clients can discover the authorization
	// server (MCP 2025-06-18, basic/authorization, "Authorization Server
	// Location").
	ResourceMetadataURL string
	// Challenge returns the WWW-Authenticate value of a 401 for the
	// authentication error err. Default: Bearer realm="mcpgate", then
	// resource_metadata="<ResourceMetadataURL>" when set, then, when the
	// request carried an Authorization header, error="invalid_token",
	// error_description="<message>" (RFC 6750 §3.1: a request without
	// credentials gets no error code).
	Challenge func(err error) string
	// SessionIdle drops this replica's state of a Streamable HTTP session
	// (its GET stream, its running calls) after this long without a request
	// here; an open GET stream does not count as activity. The session
	// stays valid: its next request, here or on another replica, is served
	// from its signed id. Default 1 hour.
	SessionIdle time.Duration
	// SessionMaxAge is how long a Streamable HTTP session id is valid after
	// initialize, on every replica; then the client gets 404 and
	// initializes again. Default DefaultSessionMaxAge.
	SessionMaxAge time.Duration
	// SessionSecret is the HMAC key that signs session ids (at least
	// MinSessionSecretBytes). Replicas that share it serve each other's
	// sessions. Empty: a random key for this Transport only, so its
	// sessions are refused by every other replica and after a restart.
	SessionSecret []byte
	// SessionEnds records ended sessions (DELETE) for every replica; all
	// replicas must share one. Default: a MemorySessionEnds of this
	// Transport only.
	SessionEnds SessionEnds
	// Answers carries the client's responses to relayed requests between
	// replicas, for a response POSTed to another replica than the one
	// holding the call (RelayAnswers). nil: responses reach only the
	// requests of this Transport (one process).
	Answers RelayAnswers
	// KeepAlive is the interval of SSE comment lines on an open GET stream,
	// so proxies do not close it. Default 25 seconds.
	KeepAlive time.Duration
	// WriteTimeout bounds each write to a client that may come long after
	// the request: every event (and keep-alive) of an SSE stream, and the
	// reply to a POST, counted from when its calls are done. It replaces
	// the HTTP server's write deadline for those writes, so that deadline
	// cuts neither streams nor the replies of slow tool calls, while a
	// client that stops reading is still cut off. Default 0: no bound.
	WriteTimeout time.Duration
}

// Defaults of Options.
const (
	DefaultMaxBodyBytes       = 1 << 20
	DefaultMaxBatchMessages   = 100
	DefaultMaxBatchReplyBytes = 4 << 20
	DefaultMaxHeldBodyBytes   = 256 << 20
	DefaultPageSize           = 100
	DefaultSessionIdle        = time.Hour
	DefaultSessionMaxAge      = 24 * time.Hour
	DefaultKeepAlive          = 25 * time.Second
)

// Transport serves the MCP endpoint; it implements http.Handler for POST,
// GET and DELETE on one path (any other method: 405). It is safe for
// concurrent use. Create it with NewHandler and stop it with Close.
type Transport struct {
	opts      Options
	log       *zap.Logger
	origins   map[string]bool
	anyOrigin bool
	hosts     hostSet
	bodies    *semaphore.Weighted // bytes of request bodies held (Options.MaxHeldBodyBytes)
	signer    *sessionid.Signer
	// serverInfo is the encoded Implementation of ServerName and
	// ServerVersion, which every 2026-07-28 result carries in _meta.
	serverInfo json.RawMessage

	mu        sync.RWMutex
	sessions  map[string]*session
	listeners map[*session]struct{}                // open subscriptions/listen streams (2026-07-28) wanting tool list changes
	streams   map[sessionid.Identity][]*streamHold // open long-lived streams by owner, oldest first (holdStream)
	closed    bool

	pending sync.Map // session id + "\x00" + request id → chan jsonrpc.Message: relayed requests awaiting the client (callRelay)

	closeOnce sync.Once
	stop      chan struct{}
	ctx       context.Context // background work (RefreshTools, legacy calls); cancelled by Close
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// NewHandler checks opts, applies defaults and starts the idle-session
// janitor. It fails with an EInvalid *gateway.Error when a required field is
// missing or a value is negative.
func NewHandler(opts Options) (*Transport, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts.setDefaults()
	t := &Transport{
		opts:      opts,
		log:       opts.Logger,
		origins:   map[string]bool{},
		sessions:  map[string]*session{},
		listeners: map[*session]struct{}{},
		streams:   map[sessionid.Identity][]*streamHold{},
		stop:      make(chan struct{}),
		bodies:    semaphore.NewWeighted(opts.MaxHeldBodyBytes),
	}
	for _, o := range opts.AllowedOrigins {
		t.origins[normalizeOrigin(o)] = true
		t.anyOrigin = t.anyOrigin || strings.TrimSpace(o) == "*"
	}
	t.hosts = newHostSet(opts.AllowedHosts)
	t.serverInfo, _ = json.Marshal(implementation{Name: opts.ServerName, Version: opts.ServerVersion})
	t.signer = sessionid.NewSigner(opts.SessionSecret, opts.SessionMaxAge, func(v string) bool { return versionOf(v).Streamable })
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.wg.Add(1)
	go t.janitor()
	return t, nil
}

func (o *Options) validate() error {
	switch {
	case o.Authenticator == nil:
		return gateway.Errorf(gateway.EInvalid, "mcp: Options.Authenticator is nil; pass the authenticator of this endpoint")
	case o.Handler == nil:
		return gateway.Errorf(gateway.EInvalid, "mcp: Options.Handler is nil; pass the handler that serves tools/list and tools/call")
	case o.MaxBodyBytes < 0, o.MaxBatchMessages < 0, o.MaxBatchReplyBytes < 0, o.MaxHeldBodyBytes < 0, o.PageSize < 0, o.SessionIdle < 0, o.SessionMaxAge < 0, o.KeepAlive < 0, o.CORSMaxAge < 0, o.WriteTimeout < 0:
		return gateway.Errorf(gateway.EInvalid, "mcp: MaxBodyBytes, MaxBatchMessages, MaxBatchReplyBytes, MaxHeldBodyBytes, PageSize, SessionIdle, SessionMaxAge, KeepAlive, CORSMaxAge and WriteTimeout must not be negative; use 0 for the default")
	case len(o.SessionSecret) > 0 && len(o.SessionSecret) < MinSessionSecretBytes:
		return gateway.Errorf(gateway.EInvalid, "mcp: Options.SessionSecret is %d bytes; it must be at least %d (MCPGATE_SESSION_SECRET)", len(o.SessionSecret), MinSessionSecretBytes)
	}
	return nil
}

func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxBatchMessages == 0 {
		o.MaxBatchMessages = DefaultMaxBatchMessages
	}
	if o.MaxBatchReplyBytes == 0 {
		o.MaxBatchReplyBytes = DefaultMaxBatchReplyBytes
	}
	if o.MaxHeldBodyBytes == 0 {
		o.MaxHeldBodyBytes = DefaultMaxHeldBodyBytes
	}
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	if o.ServerName == "" {
		o.ServerName = "mcpgate"
	}
	if o.ServerVersion == "" {
		o.ServerVersion = "dev"
	}
	if o.CORSMaxAge == 0 {
		o.CORSMaxAge = DefaultCORSMaxAge
	}
	if o.SessionIdle == 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	if o.KeepAlive == 0 {
		o.KeepAlive = DefaultKeepAlive
	}
	if o.SessionMaxAge == 0 {
		o.SessionMaxAge = DefaultSessionMaxAge
	}
	if len(o.SessionSecret) == 0 {
		o.SessionSecret = make([]byte, 32)
		_, _ = rand.Read(o.SessionSecret)
	}
	if o.SessionEnds == nil {
		o.SessionEnds = NewMemorySessionEnds()
	}
}

// enter runs what both HTTP fronts (ServeHTTP, LegacyHandler) do before
// they look at the method: the Host, Origin and CORS checks (guard, with
// allow the methods a preflight is told), then authentication. It returns
// the request's principal, or writes the reply and reports false.
func (t *Transport) enter(w http.ResponseWriter, r *http.Request, allow string) (*gateway.Principal, bool) {
	if !t.guard(w, r, allow) {
		return nil, false
	}
	return t.authenticate(w, r)
}

// notAllowed answers a request of a method the front does not serve
// (HTTP 405 with the Allow header, allow), its message saying what the
// front takes.
func (t *Transport) notAllowed(w http.ResponseWriter, r *http.Request, allow, format string, args ...any) {
	w.Header().Set("Allow", allow)
	t.replyError(w, r, nil, wire.ErrStatus(http.StatusMethodNotAllowed, gateway.EInvalid, format, args...))
}

// authenticate returns the request's principal, or writes the error reply
// (401 with a challenge, or 503 after Close) and reports false.
func (t *Transport) authenticate(w http.ResponseWriter, r *http.Request) (*gateway.Principal, bool) {
	p, err := t.opts.Authenticator.Authenticate(r)
	if err == nil && p == nil {
		err = gateway.Errorf(gateway.EInternal, "authenticator returned no principal")
	}
	if err != nil {
		t.replyError(w, r, nil, err)
		return nil, false
	}
	t.mu.RLock()
	closed := t.closed
	t.mu.RUnlock()
	if closed {
		t.replyError(w, r, nil, errClosed)
		return nil, false
	}
	return p, true
}

// newRequestID returns 16 random hex characters.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// toolsChanged is the notification NotifyToolsChanged sends.
var toolsChanged, _ = json.Marshal(jsonrpc.Notification{JSONRPC: "2.0", Method: "notifications/tools/list_changed"})

// NotifyToolsChanged sends notifications/tools/list_changed on the open GET
// stream of every session whose principal (as authenticated at initialize)
// satisfies match, and on every subscriptions/listen stream (2026-07-28)
// that asked for tool list changes and whose principal satisfies match. Sessions without an open stream, or whose stream has a
// full buffer, miss the notification. match runs without locks held.
func (t *Transport) NotifyToolsChanged(match func(p *gateway.Principal) bool) {
	for _, s := range t.allStreams() {
		p := s.principal
		if match(&p) && !s.send(s.listChanged()) {
			t.log.Debug("mcp: tools/list_changed not delivered", zap.String("session", s.id))
		}
	}
}

// Close ends all sessions and their streams and stops the janitor. Later
// requests are answered with HTTP 503. Safe to call more than once.
func (t *Transport) Close() {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closed = true
		all := t.sessions
		t.sessions = map[string]*session{}
		listening := t.listeners
		t.listeners = map[*session]struct{}{}
		t.mu.Unlock()
		for _, s := range all {
			s.end()
		}
		for s := range listening {
			s.end() // each stream sends its graceful-closure result
		}
		t.endStreams() // the listen streams not in listeners too
		t.cancel()
		close(t.stop)
		t.wg.Wait()
	})
}
