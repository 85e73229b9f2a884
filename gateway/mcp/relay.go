package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/jsonrpc"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// callRelay is the wire.Relay of one tools/call on a session: what the
// upstream sends during the call goes to the client on the call's own
// response stream (the POST's reply, switched to an event stream when the
// client accepts one), else on the session's GET stream; the client's
// answers to relayed requests come back in POSTs of responses
// (Transport.answered). A response that a load balancer sends to another
// replica reaches the call through Options.Answers.
type callRelay struct {
	t      *Transport
	s      *session
	token  json.RawMessage
	stream func([]byte) bool // writes on the call's response stream; nil or false: none
}

var _ wire.Relay = (*callRelay)(nil)

// newCallRelay is the relay of call on session s; stream is the call's
// response stream, nil when it has none (a batch member, HTTP+SSE).
func (t *Transport) newCallRelay(s *session, call *gateway.CallRequest, stream func([]byte) bool) *callRelay {
	r := &callRelay{t: t, s: s, stream: stream}
	r.token = progressToken(call.Meta)
	return r
}

// withCallRelay returns ctx carrying the relay of call on session s and,
// when s's client declared elicitation in form mode, its Elicitor: the
// gateway's own elicitation/create requests go the relay's way.
func (t *Transport) withCallRelay(ctx context.Context, s *session, call *gateway.CallRequest, stream func([]byte) bool) context.Context {
	r := t.newCallRelay(s, call, stream)
	ctx = wire.WithRelay(ctx, r)
	if s.elicitForm.Load() {
		ctx = wire.WithElicitor(ctx, callElicitor{r})
	}
	return ctx
}

func (r *callRelay) ProgressToken() json.RawMessage { return r.token }

// ElicitationModes is what the client declared at initialize: form mode
// (capsOf), and never URL mode, which the gateway does not declare to its
// upstream either, so an upstream that asks in URL mode is refused.
func (r *callRelay) ElicitationModes() (form, url bool) { return r.s.elicitForm.Load(), false }

var _ wire.ElicitationModes = (*callRelay)(nil)

// progressToken is the progressToken of a request's _meta as the client
// wrote it, nil when absent or null.
func progressToken(meta json.RawMessage) json.RawMessage {
	tok := metaMember(meta, "progressToken")
	if string(tok) == "null" {
		return nil
	}
	return tok
}

// errNoStream: the client holds no stream the message could go on.
var errNoStream = errors.New("the client holds no stream for messages of this call")

// errBelowLevel: a log message below the level the client asked for.
var errBelowLevel = errors.New("log message below the level the client set")

func (r *callRelay) Notify(_ context.Context, method string, params json.RawMessage) error {
	if method == "notifications/message" && !r.s.wantsLog(params) {
		return errBelowLevel
	}
	msg := rawMessage(nil, method, params)
	if r.send(msg) {
		return nil
	}
	return errNoStream
}

func (r *callRelay) send(msg []byte) bool {
	return (r.stream != nil && r.stream(msg)) || r.s.send(msg)
}

// Request sends the request with an id of the gateway's own and waits for
// the client's response (POSTed here, or to another replica and carried
// by Options.Answers), the end of the session, or ctx.
func (r *callRelay) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := json.RawMessage(strconv.Quote("mcpgate-" + hex.EncodeToString(b[:])))
	key := r.s.id + "\x00" + string(id)
	ch := make(chan jsonrpc.Message, 1)
	r.t.pending.Store(key, ch)
	defer r.t.pending.Delete(key)
	remote := r.t.expectAnswer(ctx, r.s, id, ch)
	defer remote()
	if !r.send(rawMessage(id, method, params)) {
		return nil, &wire.RPCError{Code: wire.RPCInternalError, Message: "the gateway's client holds no stream to receive " + method + " (open the session's GET stream, or accept text/event-stream on the POST)"}
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			var e wire.RPCError
			if json.Unmarshal(m.Error, &e) != nil {
				return nil, &wire.RPCError{Code: wire.RPCInternalError, Message: "the client answered " + method + " with a malformed error"}
			}
			return nil, &e
		}
		return m.Result, nil
	case <-r.s.done:
		return nil, &wire.RPCError{Code: wire.RPCInternalError, Message: "the client's session ended before it answered " + method}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// callElicitor is the wire.Elicitor of one tools/call whose client
// declared elicitation in form mode: the gateway's own elicitation/create
// request (MCP client/elicitation), sent and answered like a relayed one.
type callElicitor struct{ r *callRelay }

var _ wire.Elicitor = callElicitor{}

// Elicit sends req as elicitation/create ("mode": "form" at protocol
// 2025-11-25, which names modes; the form is the default before) and
// returns the client's answer. A client's JSON-RPC error, a session with no
// stream to send on, an ended session and a malformed answer are
// EUnavailable errors; the end of ctx is ctx.Err().
func (e callElicitor) Elicit(ctx context.Context, req wire.ElicitRequest) (wire.ElicitResult, error) {
	var params struct {
		Mode string `json:"mode,omitempty"`
		wire.ElicitRequest
	}
	params.ElicitRequest = req
	if versionOf(e.r.s.version).ElicitationModes {
		params.Mode = "form"
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return wire.ElicitResult{}, gateway.Wrap(gateway.EInternal, err, "the elicitation request could not be encoded")
	}
	out, err := e.r.Request(ctx, "elicitation/create", raw)
	if err != nil {
		if ctx.Err() != nil {
			return wire.ElicitResult{}, ctx.Err()
		}
		return wire.ElicitResult{}, gateway.Wrap(gateway.EUnavailable, err, "the client did not answer the elicitation: "+err.Error())
	}
	var res wire.ElicitResult
	if json.Unmarshal(out, &res) != nil || !slices.Contains([]string{wire.ElicitAccept, wire.ElicitDecline, wire.ElicitCancel}, res.Action) {
		return wire.ElicitResult{}, gateway.Errorf(gateway.EUnavailable, "the client answered elicitation/create without an action of accept, decline or cancel")
	}
	return res, nil
}

// answered routes a client's response (m) to the relayed request waiting
// for it on session s: on this replica, else through Options.Answers to
// the replica holding it. A response nobody waits for (an unknown or
// expired id, another credential's) is dropped.
func (t *Transport) answered(ctx context.Context, s *session, m *jsonrpc.Message) {
	v, ok := t.pending.Load(s.id + "\x00" + string(m.ID))
	if !ok {
		t.deliverAnswer(ctx, s, m)
		return
	}
	select {
	case v.(chan jsonrpc.Message) <- *m:
	default: // answered twice: the first counts
	}
}

// RelayAnswers carries the client's responses to relayed requests between
// the replicas of one database. Keys and owners are opaque strings (hashes
// of the session id with the request id, and of the session's credential
// identity); an answer is the JSON object {"result": …} or {"error": …}.
type RelayAnswers interface {
	// Expect records that this replica waits, until until, for the answer
	// to key from owner, and calls deliver with it once another replica
	// recorded it (Deliver). The returned stop ends the wait and forgets
	// the record. An error means answers POSTed elsewhere cannot reach
	// this request.
	Expect(ctx context.Context, key, owner string, until time.Time, deliver func(answer []byte)) (stop func(), err error)
	// Deliver records the answer to key from owner for the replica that
	// waits for it; false when none does (unknown key, expired, answered
	// already, or another owner's).
	Deliver(ctx context.Context, key, owner string, answer []byte) (bool, error)
}

// answerWait bounds a relayed request with no deadline of its own in
// the record other replicas see.
const answerWait = time.Hour

// answerKey and answerOwner name a relayed request and its session's
// owner to Options.Answers: hashes, so the record holds neither the
// session id nor the credential.
func answerKey(s *session, id json.RawMessage) string {
	h := sha256.Sum256([]byte(s.id + "\x00" + string(id)))
	return hex.EncodeToString(h[:])
}

func answerOwner(s *session) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%#v", s.owner)))
	return hex.EncodeToString(h[:])
}

// answerTimeout bounds each exchange with Options.Answers.
const answerTimeout = 2 * time.Second

// expectAnswer has Options.Answers hand the answer to request id of s,
// recorded by another replica, to ch; it returns the function that stops
// waiting. Without Answers, or when the record cannot be made (logged),
// only answers POSTed to this replica arrive.
func (t *Transport) expectAnswer(ctx context.Context, s *session, id json.RawMessage, ch chan jsonrpc.Message) func() {
	if t.opts.Answers == nil || s.legacy {
		return func() {}
	}
	until, ok := ctx.Deadline()
	if !ok {
		until = time.Now().Add(answerWait)
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), answerTimeout)
	defer cancel()
	stop, err := t.opts.Answers.Expect(ectx, answerKey(s, id), answerOwner(s), until, func(answer []byte) {
		var a struct{ Result, Error json.RawMessage }
		if json.Unmarshal(answer, &a) != nil {
			return
		}
		select {
		case ch <- jsonrpc.Message{Kind: jsonrpc.KindResponse, ID: id, Result: a.Result, Error: a.Error}:
		default: // answered already
		}
	})
	if err != nil {
		t.log.Warn("mcp: a relayed request can be answered on this replica only; a response the load balancer sends elsewhere waits until the call's deadline",
			zap.String("session", s.id), zap.Error(err))
		return func() {}
	}
	return stop
}

// deliverAnswer hands m, a response to no request of this replica, to
// the replica that waits for it, if any.
func (t *Transport) deliverAnswer(ctx context.Context, s *session, m *jsonrpc.Message) {
	if t.opts.Answers == nil || s.legacy {
		return
	}
	answer, _ := json.Marshal(struct {
		Result json.RawMessage `json:"result,omitempty"`
		Error  json.RawMessage `json:"error,omitempty"`
	}{m.Result, m.Error})
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), answerTimeout)
	defer cancel()
	ok, err := t.opts.Answers.Deliver(dctx, answerKey(s, m.ID), answerOwner(s), answer)
	if err != nil || !ok {
		t.log.Debug("mcp: a response to no waiting request was dropped", zap.String("session", s.id), zap.Bool("recorded", ok), zap.Error(err))
	}
}

// rawMessage encodes a JSON-RPC request (id set) or notification with raw
// params.
func rawMessage(id json.RawMessage, method string, params json.RawMessage) []byte {
	b := []byte(`{"jsonrpc":"2.0",`)
	if id != nil {
		b = append(append(append(b, `"id":`...), id...), ',')
	}
	b = append(append(b, `"method":`...), strconv.Quote(method)...)
	if len(params) > 0 {
		b = append(append(b, `,"params":`...), params...)
	}
	return append(b, '}')
}

// logLevels are the syslog levels of MCP server/utilities/logging, least
// severe first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// defaultLogLevel applies to a session whose client never sent
// logging/setLevel.
const defaultLogLevel = "info"

// setLogLevel serves logging/setLevel: the least severe level of the log
// messages relayed to this session from now on.
func (t *Transport) setLogLevel(s *session, params json.RawMessage) (any, error) {
	var in struct {
		Level string `json:"level"`
	}
	if err := decodeParams(params, &in); err != nil || !slices.Contains(logLevels, in.Level) {
		return nil, gateway.Errorf(gateway.EInvalid, "logging/setLevel params must be an object with \"level\" one of %v", logLevels)
	}
	if s == nil {
		return nil, gateway.Errorf(gateway.EInvalid, "logging/setLevel needs a session; at protocol 2026-07-28 send the level in each request's _meta")
	}
	s.logLevel.Store(&in.Level)
	return struct{}{}, nil
}

// wantsLog reports whether a notifications/message with params is at or
// above the session's level.
func (s *session) wantsLog(params json.RawMessage) bool {
	want := defaultLogLevel
	if l := s.logLevel.Load(); l != nil {
		want = *l
	}
	return levelAtLeast(params, want)
}

// levelAtLeast reports whether the notifications/message with params is
// at or above level want.
func levelAtLeast(params json.RawMessage, want string) bool {
	var in struct {
		Level string `json:"level"`
	}
	_ = json.Unmarshal(params, &in)
	return slices.Index(logLevels, in.Level) >= slices.Index(logLevels, want)
}

// metaLogLevel is the per-request log level of MCP 2026-07-28: log
// messages of a request that does not set it are not sent.
const metaLogLevel = "io.modelcontextprotocol/logLevel"

// modernRelay is the wire.InputRelay of one stateless 2026-07-28
// tools/call: the upstream's progress and log messages go on the call's
// response stream (when the client accepts one; log messages only at or
// above the request's _meta log level, none without one), requests during
// the call are refused (the revision has none: an upstream asks with an
// input-required result), and the client's inputResponses, requestState
// and capabilities are the round the adapter passes upstream.
type modernRelay struct {
	token    json.RawMessage
	logLevel string // "" when the request set none
	round    wire.InputRound
	stream   func([]byte) bool
}

var _ wire.InputRelay = (*modernRelay)(nil)

// newModernRelay is the relay of the tools/call of a stateless request,
// whose _meta checkModern has read into m; stream writes on its response
// stream (nil: none).
func newModernRelay(m *modernReq, stream func([]byte) bool) *modernRelay {
	r := &modernRelay{stream: stream, round: wire.InputRound{Capabilities: m.capabilities}}
	if string(m.progress) != "null" {
		r.token = m.progress
	}
	if l, ok := stringValue(m.logLevel); ok && slices.Contains(logLevels, l) {
		r.logLevel = l
	}
	// Only a retry carries these (an object and a string).
	if isJSONKind(m.split.InputResponses, '{') {
		r.round.Responses = m.split.InputResponses
	}
	if isJSONKind(m.split.RequestState, '"') {
		r.round.State = m.split.RequestState
	}
	return r
}

// isJSONKind reports whether raw is a JSON value starting with c.
func isJSONKind(raw json.RawMessage, c byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == c
}

func (r *modernRelay) ProgressToken() json.RawMessage { return r.token }

func (r *modernRelay) Round() *wire.InputRound { return &r.round }

// InputRequired refuses nothing: the policy's checks wrap this relay.
func (r *modernRelay) InputRequired(context.Context, json.RawMessage) error { return nil }

func (r *modernRelay) Notify(_ context.Context, method string, params json.RawMessage) error {
	if method == "notifications/message" && (r.logLevel == "" || !levelAtLeast(params, r.logLevel)) {
		return errBelowLevel
	}
	if r.stream != nil && r.stream(rawMessage(nil, method, params)) {
		return nil
	}
	return errNoStream
}

// Request refuses: at protocol 2026-07-28 a server sends no requests.
func (r *modernRelay) Request(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	return nil, &wire.RPCError{Code: wire.RPCMethodNotFound, Message: "the gateway's client speaks MCP 2026-07-28, which has no server-to-client requests: ask for " + method + " with an input-required result (inputRequests) instead"}
}
