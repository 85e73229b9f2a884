package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/jsonrpc"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// request is one JSON-RPC request being served: who sent it, on which
// session (nil: a stateless request), what checkModern read of a
// stateless one, and the request's own response stream
// (nil: none), on which a tools/call's relayed messages go before its
// response.
type request struct {
	s      *session
	p      *gateway.Principal
	m      *jsonrpc.Message
	modern modernReq // version "" on a session
	stream func([]byte) bool
}

// version is the protocol version of the request: its session's, or for
// a stateless request the one in its _meta, which checkModern has
// validated.
func (rq request) version() string {
	switch {
	case rq.s != nil:
		return rq.s.version
	case rq.modern.version != "":
		return rq.modern.version
	}
	return metaVersionOf(rq.m.Params)
}

// handler serves one request: its result, or an error answered as a
// JSON-RPC error. The request comes by value: the table's calls allocate
// nothing for it.
type handler func(t *Transport, ctx context.Context, rq request) (any, error)

// methodInfo says how the transport serves one method (as the go-sdk's
// server method infos do): where it is served, by which handler, and what
// its reply carries. A method no row names is answered with -32601 (on a
// stateless request: HTTP 404 with -32601); a notification no row names
// needs nothing from a tools-only server.
type methodInfo struct {
	// session serves the request on a session (Streamable HTTP after
	// initialize, or HTTP+SSE); nil: not served there.
	session handler
	// stateless serves it at protocol 2026-07-28, without a session; nil:
	// not served statelessly.
	stateless handler
	// hints are the caching fields of its stateless result
	// (server/utilities/caching); nil: not cacheable.
	hints *cacheHints
	// stream answers a stateless request with an SSE stream of its own
	// instead of one response (subscriptions/listen).
	stream func(t *Transport, w http.ResponseWriter, r *http.Request, rq request)
	// startsSession: the request starts a session (initialize): alone, in
	// a POST without Mcp-Session-Id, never in a batch.
	startsSession bool
	// probe: a POST of it without Mcp-Session-Id is stateless even when it
	// names no protocol version (server/discover, which a client sends
	// before it knows the server's versions).
	probe bool
	// namesTool: at 2026-07-28 its params.name is repeated in the Mcp-Name
	// header, and the members of its params that checkModern reads are kept
	// for the handler (tools/call).
	namesTool bool
	// notify handles the notification of this name on a session.
	notify func(t *Transport, s *session, m *jsonrpc.Message)
}

// methodTable is every method the endpoint knows, by name.
var methodTable = map[string]*methodInfo{
	"initialize": {startsSession: true, session: func(*Transport, context.Context, request) (any, error) {
		return nil, wire.ErrInvalidRequest("initialize may only be sent alone, without Mcp-Session-Id, to start a session")
	}},
	"ping": {session: func(*Transport, context.Context, request) (any, error) { return struct{}{}, nil }},
	"tools/list": {session: listToolsHandler, stateless: listToolsHandler,
		hints: listHints}, // the list is the caller's
	"tools/call": {session: callToolHandler, stateless: callToolHandler, namesTool: true},
	"logging/setLevel": {session: func(t *Transport, _ context.Context, rq request) (any, error) {
		return t.setLogLevel(rq.s, rq.m.Params)
	}},
	"server/discover": {stateless: func(t *Transport, _ context.Context, _ request) (any, error) { return t.discover(), nil },
		hints: discoverHints, probe: true},
	"subscriptions/listen":    {stream: (*Transport).serveListen},
	"notifications/cancelled": {notify: (*Transport).cancelled},
}

// sessionMethods and modernMethods list what a session and a stateless
// request may call, for the -32601 messages.
const (
	sessionMethods = "initialize, ping, tools/list and tools/call"
	modernMethods  = "server/discover, tools/list, tools/call and subscriptions/listen"
)

func listToolsHandler(t *Transport, ctx context.Context, rq request) (any, error) {
	return t.listTools(ctx, rq.s, rq.p, rq.m.Params)
}

func callToolHandler(t *Transport, ctx context.Context, rq request) (any, error) {
	return t.callTool(ctx, rq)
}

// dispatch runs one request of a session by the method table.
func (t *Transport) dispatch(ctx context.Context, rq request) (any, error) {
	if serve := info(rq.m).session; serve != nil {
		return serve(t, ctx, rq)
	}
	t.refusedMethod(ctx, rq.p, rq.m.Method)
	return nil, gateway.Errorf(gateway.EMethodNotFound,
		"method %q is not served by this MCP endpoint; it serves %s", rq.m.Method, sessionMethods)
}

// refusedMethod tells Options.RefusedMethod, when set, that p's request
// of method was refused as not served.
func (t *Transport) refusedMethod(ctx context.Context, p *gateway.Principal, method string) {
	if t.opts.RefusedMethod != nil {
		t.opts.RefusedMethod(ctx, p, method)
	}
}

// notified handles a client notification on session s by the method
// table: notifications/cancelled cancels the named request; everything
// else (initialized, roots changes, ...) needs nothing from a tools-only
// server.
func (t *Transport) notified(s *session, m *jsonrpc.Message) {
	if notify := info(m).notify; notify != nil {
		notify(t, s, m)
	}
}

// cancelled serves notifications/cancelled: the named request of s is
// cancelled.
func (t *Transport) cancelled(s *session, m *jsonrpc.Message) {
	var in struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if decodeParams(m.Params, &in) == nil && in.RequestID != nil {
		s.cancel(string(in.RequestID))
	}
}

// call runs one request of session s and returns its encoded response. The
// context keeps the HTTP request's values but not its cancellation: per
// MCP basic/transports a disconnect is not a cancellation. The call is
// cancelled by notifications/cancelled, by the end of the session, or by
// Close. The request's own context rides along (gateway.WithCarrier): a
// step that only waits for the client, such as a person's approval, ends
// with it. stream, when not nil, sends a message to the client before the
// response on the request's own stream (a tools/call's relayed messages).
func (t *Transport) call(ctx context.Context, s *session, p *gateway.Principal, m *jsonrpc.Message, stream func([]byte) bool) []byte {
	ctx = gateway.WithRequestID(gateway.WithCarrier(context.WithoutCancel(ctx), ctx), newRequestID())
	ctx, done := s.track(ctx, string(m.ID))
	defer done()
	resp := jsonrpc.Response{JSONRPC: "2.0", ID: m.ID}
	res, err := t.safely(ctx, request{s: s, p: p, m: m, stream: stream}, (*Transport).dispatch)
	if err != nil {
		resp.Error, _ = t.wireError(ctx, err)
	} else {
		resp.Result = res
	}
	return t.encode(ctx, resp)
}

// safely runs serve, turning a handler panic into an internal error for
// this one request instead of a dropped connection.
func (t *Transport) safely(ctx context.Context, rq request, serve func(*Transport, context.Context, request) (any, error)) (res any, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = gateway.Wrap(gateway.EInternal, fmt.Errorf("panic in %s: %v\n%s", rq.m.Method, v, debug.Stack()),
				"internal error; the gateway logged the cause")
		}
	}()
	return serve(t, ctx, rq)
}

// handleMessages runs the messages of one POST in order and hands each
// response to emit as soon as it is ready, so the responses of a batch are
// never held together. answer serves one request. Once the responses
// emitted reach MaxBatchReplyBytes, later requests are not answered but
// refused with errReplyBudget; notifications still take effect. It stops
// early when emit reports false (nobody will ever read the rest). ctx
// carries the HTTP request's values.
func (t *Transport) handleMessages(ctx context.Context, s *session, msgs []jsonrpc.Message,
	answer func(context.Context, *jsonrpc.Message) []byte, emit func([]byte) bool) {
	var spent int64
	for i := range msgs {
		m := &msgs[i]
		var out []byte
		switch m.Kind {
		case jsonrpc.KindInvalid:
			e, _ := t.wireError(ctx, m.Err)
			out = t.encode(ctx, jsonrpc.Response{JSONRPC: "2.0", ID: m.ID, Error: e})
		case jsonrpc.KindRequest:
			if spent < t.opts.MaxBatchReplyBytes {
				out = answer(ctx, m)
				break
			}
			e, _ := t.wireError(ctx, errReplyBudget(t.opts.MaxBatchReplyBytes))
			out = t.encode(ctx, jsonrpc.Response{JSONRPC: "2.0", ID: m.ID, Error: e})
		case jsonrpc.KindNotification:
			t.notified(s, m)
			continue
		default:
			t.answered(ctx, s, m) // a response to a request relayed from an upstream
			continue
		}
		spent += int64(len(out))
		if !emit(out) {
			return
		}
	}
}

// errReplyBudget answers the requests of a batch after its responses have
// reached MaxBatchReplyBytes.
func errReplyBudget(budget int64) error {
	return wire.ErrStatus(http.StatusRequestEntityTooLarge, gateway.EInvalid,
		"not run: the responses to this POST already reached %d bytes, the most one POST may produce (an operator can raise MCPGATE_MAX_BATCH_REPLY_BYTES); send this request again in a new POST", budget)
}

// info returns the method table's row of m's method, the zero row for a
// method the table does not name.
func info(m *jsonrpc.Message) *methodInfo {
	if mi := methodTable[m.Method]; mi != nil {
		return mi
	}
	return &unknownMethod
}

// unknownMethod is the row of every method the table does not name.
var unknownMethod methodInfo

// startsSession reports whether m is a request that starts a session
// (initialize).
func startsSession(m *jsonrpc.Message) bool {
	return m.Kind == jsonrpc.KindRequest && info(m).startsSession
}
