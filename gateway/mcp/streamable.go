package mcp

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/jsonrpc"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// The Streamable HTTP front with sessions (MCP 2025-03-26 to 2025-11-25,
// basic/transports): POST carries JSON-RPC messages (initialize starts a
// session; every later request names it in Mcp-Session-Id), GET opens the
// session's server-to-client event stream, DELETE ends the session. A POST
// of the stateless 2026-07-28 protocol, served on the same endpoint, goes
// to the stateless front (modern.go) once the body is parsed.

// allowHeader is the Allow value of 405 replies.
const allowHeader = "GET, POST, DELETE"

// ServeHTTP checks the Host and Origin headers (answering CORS preflight
// requests), authenticates the request, then serves POST (JSON-RPC
// messages), GET (the server-to-client SSE stream) or DELETE (end the
// session).
func (t *Transport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, ok := t.enter(w, r, allowHeader)
	if !ok {
		return
	}
	switch r.Method {
	case http.MethodPost:
		t.servePOST(w, r, p)
	case http.MethodGet:
		t.serveGET(w, r, p)
	case http.MethodDelete:
		t.serveDELETE(w, r, p)
	default:
		t.notAllowed(w, r, allowHeader, "method %s is not served; the MCP endpoint takes POST, GET and DELETE", r.Method)
	}
}

// servePOST handles one POST body: a single message, or a batch when the
// session's version allows batching (versions.go). It reads the body,
// parses it (jsonrpc.ParseBody), hands a stateless request to the
// stateless front (serveModern) and initialize to serveInitialize; any
// other POST names its session, and each of its messages is served by the
// method table (handleMessages, call), its response written as soon as it
// is ready.
func (t *Transport) servePOST(w http.ResponseWriter, r *http.Request, p *gateway.Principal) {
	f, ok := replyFormat(r)
	if !ok {
		t.replyError(w, r, nil, wire.ErrStatus(http.StatusNotAcceptable, gateway.EInvalid,
			"Accept must allow application/json or text/event-stream"))
		return
	}
	body, release, err := t.readBody(w, r)
	if err != nil {
		t.replyError(w, r, nil, err)
		return
	}
	defer release()
	msgs, batch, err := jsonrpc.ParseBody(body, t.opts.MaxBatchMessages)
	if err != nil {
		t.replyError(w, r, failedID(msgs), err)
		return
	}
	if modernRequest(r, msgs, batch) {
		t.serveModern(w, r, p, msgs, batch, f)
		return
	}
	if !batch && startsSession(&msgs[0]) {
		t.serveInitialize(w, r, p, &msgs[0], f)
		return
	}
	s, err := t.checkPOST(r, p, msgs, batch)
	if err != nil {
		t.replyError(w, r, singleID(msgs, batch), err)
		return
	}
	reply := newReplyWriter(w, f, batch, t.writeDeadline)
	_, reply.canSSE = acceptable(r.Header.Values("Accept"))
	t.handleMessages(r.Context(), s, msgs, func(ctx context.Context, m *jsonrpc.Message) []byte {
		return t.call(ctx, s, p, m, reply.stream)
	}, reply.write)
	reply.finish() // 202 when there were only notifications and responses
}

// checkPOST applies the session and batch rules to a non-initialize POST
// and returns its session.
func (t *Transport) checkPOST(r *http.Request, p *gateway.Principal, msgs []jsonrpc.Message, batch bool) (*session, error) {
	if batch {
		for i := range msgs {
			if startsSession(&msgs[i]) {
				return nil, wire.ErrInvalidRequest("initialize must not be part of a JSON-RPC batch; send it alone")
			}
		}
	}
	s, err := t.session(r, p)
	if err != nil {
		return nil, err
	}
	if batch && !versionOf(s.version).Batching {
		return nil, wire.ErrInvalidRequest("JSON-RPC batching was removed in MCP 2025-06-18 and this session negotiated %s; send one message per POST", s.version)
	}
	return s, nil
}

// serveInitialize answers initialize and, on success, starts a session whose
// id is sent in the Mcp-Session-Id header.
func (t *Transport) serveInitialize(w http.ResponseWriter, r *http.Request, p *gateway.Principal, m *jsonrpc.Message, f format) {
	if r.Header.Get(headerSessionID) != "" {
		t.replyError(w, r, m.ID, wire.ErrInvalidRequest("initialize starts a new session; send it without Mcp-Session-Id"))
		return
	}
	ctx := gateway.WithRequestID(r.Context(), newRequestID())
	resp := jsonrpc.Response{JSONRPC: "2.0", ID: m.ID}
	res, caps, err := t.initialize(m.Params, supportedVersions)
	if err == nil {
		var s *session
		if s, err = t.createSession(p, res.ProtocolVersion, caps, false); err == nil {
			w.Header().Set(headerSessionID, s.id)
			resp.Result = res
		}
	}
	if err != nil {
		if gateway.ErrorCodeOf(err) == gateway.EUnavailable {
			t.replyError(w, r, m.ID, err)
			return
		}
		resp.Error, _ = t.wireError(ctx, err)
	}
	reply := newReplyWriter(w, f, false, t.writeDeadline)
	reply.write(t.encode(ctx, resp))
	reply.finish()
}

// failedID is the id to echo when jsonrpc.ParseBody fails: that of the one message,
// when it could be read.
func failedID(msgs []jsonrpc.Message) json.RawMessage {
	if len(msgs) == 1 {
		return msgs[0].ID
	}
	return nil
}

func singleID(msgs []jsonrpc.Message, batch bool) json.RawMessage {
	if batch {
		return nil
	}
	return msgs[0].ID
}

// serveGET opens the server-to-client SSE stream of a session (one per
// session). It carries notifications and keep-alive comments and ends on
// DELETE, Close, idle expiry or client disconnect.
func (t *Transport) serveGET(w http.ResponseWriter, r *http.Request, p *gateway.Principal) {
	if _, sseOK := acceptable(r.Header.Values("Accept")); !sseOK || len(r.Header.Values("Accept")) == 0 {
		t.notAllowed(w, r, allowHeader, "GET opens the server-to-client event stream; send Accept: text/event-stream")
		return
	}
	s, err := t.session(r, p)
	if err != nil {
		t.replyError(w, r, nil, err)
		return
	}
	ch, ok := s.openStream()
	if !ok {
		t.replyError(w, r, nil, wire.ErrStatus(http.StatusConflict, gateway.EConflict,
			"this session already has an open GET stream; close it before opening another"))
		return
	}
	defer s.closeStream()
	t.stream(w, r, s, ch, "")
}

// serveDELETE ends the caller's session on every replica (MCP
// basic/transports, "Session Management": clients SHOULD send DELETE when
// done): it is recorded in SessionEnds, then this replica's state of it is
// dropped.
func (t *Transport) serveDELETE(w http.ResponseWriter, r *http.Request, p *gateway.Principal) {
	s, err := t.session(r, p)
	if err != nil {
		t.replyError(w, r, nil, err)
		return
	}
	if err := t.opts.SessionEnds.End(r.Context(), s.id, s.until); err != nil {
		t.replyError(w, r, nil, gateway.Wrap(gateway.EUnavailable, err,
			"could not record the end of this MCP session; send DELETE again"))
		return
	}
	t.endSession(s, "deleted by client")
	w.WriteHeader(http.StatusOK)
}
