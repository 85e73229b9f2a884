package mcp

import (
	"context"
	"net/http"
	"net/url"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/jsonrpc"
	"github.com/mcpgate/mcpgate/gateway/mcp/sessionid"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// legacyAllow is the Allow value of the HTTP+SSE transport's 405 replies.
const legacyAllow = "GET, POST"

// legacyInflight is how many POSTs of one SSE session run at once. A POST
// is answered 202 before its requests run, so without a bound a client
// could start any number of background calls; the next POST waits for a
// slot instead, before its body is read, so that a session holds at most
// this many bodies.
const legacyInflight = 8

// legacyHandler serves the HTTP+SSE transport of MCP 2024-11-05
// (basic/transports, "HTTP with SSE"); see Transport.LegacyHandler.
type legacyHandler struct {
	t           *Transport
	messagePath string
}

// LegacyHandler returns the HTTP+SSE transport of MCP 2024-11-05, for
// clients that do not speak Streamable HTTP yet. A GET opens the session's
// event stream, whose first event ("endpoint") names messagePath with a
// sessionId query parameter; the client POSTs its JSON-RPC messages there,
// each POST is answered 202 Accepted, and the responses come on the stream
// as "message" events, one per response as each is ready (the members of a
// batch too), as do tools/list_changed notifications. The session
// ends when the stream does. Mount the handler on both the stream path
// (e.g. /sse) and messagePath (e.g. /messages); it serves GET and POST on
// either.
//
// It shares everything else with the Streamable HTTP endpoint: the Host,
// Origin and CORS checks, authentication on every request (a session is
// bound to the principal that opened it; another credential gets 404), the
// Handler (so the same policy and audit), and RefreshTools. initialize
// accepts 2024-11-05 as well as the newer versions.
func (t *Transport) LegacyHandler(messagePath string) http.Handler {
	return &legacyHandler{t: t, messagePath: messagePath}
}

// ServeHTTP serves GET (open a session and its stream) and POST (a message
// for a session).
func (l *legacyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, ok := l.t.enter(w, r, legacyAllow)
	if !ok {
		return
	}
	switch r.Method {
	case http.MethodGet:
		l.serveStream(w, r, p)
	case http.MethodPost:
		l.serveMessage(w, r, p)
	default:
		l.t.notAllowed(w, r, legacyAllow, "method %s is not served; the SSE transport takes GET (the event stream) and POST (messages)", r.Method)
	}
}

// serveStream creates a legacy session, sends its endpoint event, and then
// streams responses and notifications until the client disconnects or the
// transport closes; the session ends with the stream.
func (l *legacyHandler) serveStream(w http.ResponseWriter, r *http.Request, p *gateway.Principal) {
	t := l.t
	s, err := t.createSession(p, Version20241105, 0, true)
	if err != nil {
		t.replyError(w, r, nil, err)
		return
	}
	defer t.endSession(s, "SSE stream closed")
	ch, _ := s.openStream() // a new session has no stream yet
	t.stream(w, r, s, ch, l.messagePath+"?sessionId="+url.QueryEscape(s.id))
}

// serveMessage accepts one POST body for a legacy session: 202 once it is
// parsed, then the requests run in the background and their responses go to
// the stream. Problems with the POST itself (no or unknown session, a body
// that is not JSON-RPC) are answered on the POST with their HTTP status.
func (l *legacyHandler) serveMessage(w http.ResponseWriter, r *http.Request, p *gateway.Principal) {
	t := l.t
	id := r.URL.Query().Get("sessionId")
	if id == "" {
		t.replyError(w, r, nil, wire.ErrInvalidRequest("missing sessionId query parameter; POST to the URL named by the endpoint event of GET %s", l.messagePath))
		return
	}
	s, err := t.lookupLegacy(id, p)
	if err != nil {
		t.replyError(w, r, nil, wire.ErrStatus(http.StatusNotFound, gateway.ENotFound,
			"SSE session not found or ended; open a new event stream with GET and use its endpoint"))
		return
	}
	// The slot comes before the body: a session's POSTs waiting for one
	// hold no body, so what one session can make the gateway hold is
	// legacyInflight bodies, and all sessions together MaxHeldBodyBytes.
	select {
	case s.slots <- struct{}{}:
	case <-s.done:
		t.replyError(w, r, nil, wire.ErrStatus(http.StatusNotFound, gateway.ENotFound, "SSE session ended; open a new event stream with GET"))
		return
	case <-r.Context().Done():
		return // the client gave up waiting
	}
	body, release, err := t.readBody(w, r)
	if err != nil {
		<-s.slots
		t.replyError(w, r, nil, err)
		return
	}
	msgs, batch, err := jsonrpc.ParseBody(body, t.opts.MaxBatchMessages)
	if err != nil {
		release()
		<-s.slots
		t.replyError(w, r, failedID(msgs), err)
		return
	}
	ctx := context.WithoutCancel(r.Context()) // the POST ends before the calls do
	done := func() { release(); <-s.slots }
	if !t.goTracked(func() { defer done(); l.run(ctx, s, p, msgs, batch) }) {
		done()
		t.replyError(w, r, nil, errClosed)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// run handles the messages of one POST and delivers each response on the
// session's stream as its own "message" event as soon as it is ready, a
// batch's members included: the SDKs' HTTP+SSE clients read one JSON-RPC
// message per event, and a batch held for one array event would keep
// every response in memory until its slowest member finished. The reply
// budget of handleMessages applies.
func (l *legacyHandler) run(ctx context.Context, s *session, p *gateway.Principal, msgs []jsonrpc.Message, batch bool) {
	answer := func(ctx context.Context, m *jsonrpc.Message) []byte {
		if startsSession(m) {
			return l.initialize(ctx, s, m, batch)
		}
		return l.t.call(ctx, s, p, m, nil) // relayed messages go on the session's stream
	}
	l.t.handleMessages(ctx, s, msgs, answer, func(msg []byte) bool {
		if s.deliver(msg) {
			return true
		}
		l.t.log.Debug("mcp: SSE session ended before its response was sent", zap.String("session", s.id))
		return false
	})
}

// initialize answers the one initialize of a legacy session.
func (l *legacyHandler) initialize(ctx context.Context, s *session, m *jsonrpc.Message, batch bool) []byte {
	t := l.t
	resp := jsonrpc.Response{JSONRPC: "2.0", ID: m.ID}
	var err error
	switch {
	case batch:
		err = wire.ErrInvalidRequest("initialize must not be part of a JSON-RPC batch; send it alone")
	case s.initialized.Swap(true):
		err = wire.ErrInvalidRequest("this SSE session is already initialized; open a new event stream to start another")
	default:
		var res *initializeResult
		var caps sessionid.Caps
		if res, caps, err = t.initialize(m.Params, legacyVersions); err == nil {
			s.elicitForm.Store(caps&sessionid.CapElicitForm != 0)
			resp.Result = res
			t.log.Debug("mcp: SSE session initialized", zap.String("session", s.id), zap.String("version", res.ProtocolVersion))
		} else {
			s.initialized.Store(false)
		}
	}
	if err != nil {
		resp.Error, _ = t.wireError(ctx, err)
	}
	return t.encode(ctx, resp)
}
