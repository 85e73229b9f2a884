package mcpupstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
	"github.com/mcpgate/mcpgate/gateway/tracing"
)

// upSession is the adapter's session with the upstream.
type upSession struct {
	id      string // Mcp-Session-Id; "" when the upstream keeps no session
	version string // the protocol version the upstream negotiated
	// tool is the tool of a stateless (2026-07-28) tools/call, sent as
	// Mcp-Method and Mcp-Name; "" for a session.
	tool string
	// params are the call's Mcp-Param-* headers (name, value) of a
	// stateless tools/call, from the tool's x-mcp-header annotations.
	params [][2]string
	// stop ends the session's standalone GET stream (listen.go); nil
	// when none was opened.
	stop context.CancelFunc
}

// stopListening ends s's GET stream, if it has one.
func (s *upSession) stopListening() {
	if s.stop != nil {
		s.stop()
	}
}

// JSON-RPC error codes the adapter tells apart (JSON-RPC 2.0, section 5.1).
const (
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternal       = -32603
)

// Bounds of what one upstream reply can make the gateway hold (issue 22:
// one event of many data lines took the gateway from 59 MB to 1.47 GB,
// and 3,000 elicitation requests in one reply delayed its result 30 s).
// Past any of them the call fails with an errReplyLimit.
const (
	// maxMessageBytes bounds one JSON-RPC message: one SSE event (all its
	// data lines), or a JSON body.
	maxMessageBytes = 16 << 20
	// maxReplyBytes bounds all the bytes of one reply's event stream.
	maxReplyBytes = 64 << 20
	// maxReplyEvents bounds the messages (events with data) of one reply.
	maxReplyEvents = 10_000
	// maxRelayedRequests bounds the requests (elicitation, sampling,
	// roots) the upstream sends the client during one call.
	maxRelayedRequests = 32
)

// replyLimits are the bounds of one reply; an Adapter's are
// defaultReplyLimits (tests lower them).
type replyLimits struct {
	messageBytes, replyBytes int
	events, requests         int
}

var defaultReplyLimits = replyLimits{maxMessageBytes, maxReplyBytes, maxReplyEvents, maxRelayedRequests}

// errReplyLimit is a reply that went past one of replyLimits: what went
// past it, and the limit as people read it ("16 MiB", "32 requests").
type errReplyLimit struct {
	what  string
	limit string
}

func (e *errReplyLimit) Error() string {
	return fmt.Sprintf("%s past the gateway's limit of %s", e.what, e.limit)
}

// sizeText writes a byte limit for people: "16 MiB", else bytes.
func sizeText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// boundedReader fails a read past n bytes with an errReplyLimit.
type boundedReader struct {
	r io.Reader
	n int // bytes still allowed
	e *errReplyLimit
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.n <= 0 {
		// One byte more tells a reply that ends exactly at the bound
		// from one that goes on.
		var one [1]byte
		if k, err := b.r.Read(one[:]); k == 0 {
			return 0, err
		}
		return 0, b.e
	}
	if len(p) > b.n {
		p = p[:b.n]
	}
	k, err := b.r.Read(p)
	b.n -= k
	return k, err
}

// errSessionLost is the upstream's 404 for the session id sent: the
// upstream no longer knows the session and ran nothing of the request.
var errSessionLost = errors.New("the upstream answered 404 for the session: it no longer knows it")

// errHTTPStatus is an HTTP status other than 200/202 with no JSON-RPC
// error in its body.
type errHTTPStatus struct {
	status int
	body   string
}

func (e *errHTTPStatus) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.status, http.StatusText(e.status), e.body)
}

// sessionKind says which of the adapter's sessions with the upstream a
// request goes on: the set of client capabilities (capSampling,
// capElicitation, capRoots) the gateway declares at its initialize.
type sessionKind int

const (
	capSampling sessionKind = 1 << iota
	capElicitation
	capRoots
	// relaying declares every capability the gateway can relay: the
	// session of clients that take the upstream's requests during a call
	// (protocols with sessions), and of tools/list.
	relaying     = capSampling | capElicitation | capRoots
	sessionKinds = relaying + 1
)

// capParts are the members of the capabilities object each bit declares.
var capParts = [...]struct {
	bit  sessionKind
	name string
	decl string
}{{capSampling, "sampling", `"sampling":{}`}, {capElicitation, "elicitation", `"elicitation":{"form":{}}`}, {capRoots, "roots", `"roots":{}`}}

// declared is the capabilities object the session of kind k declares.
func declared(k sessionKind) string {
	var parts []string
	for _, c := range capParts {
		if k&c.bit != 0 {
			parts = append(parts, c.decl)
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// kindOf is the session of a stateless 2026-07-28 client whose call goes
// to an upstream that serves sessions only: it declares what the client
// declared (caps, its _meta clientCapabilities as the policy left them)
// and nothing more, so that the upstream relies on no capability the
// client lacks and refuses a tool that needs one before running it
// (-32021, SEP-2575) instead of running it on capabilities nobody honours.
func kindOf(caps json.RawMessage) sessionKind {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(caps, &m)
	var k sessionKind
	for _, c := range capParts {
		if v, ok := m[c.name]; ok && isJSONObject(v) {
			k |= c.bit
		}
	}
	return k
}

// currentSession returns the live session of kind k or initializes a new
// one. Holding the lock while initializing makes concurrent callers share
// one.
func (a *Adapter) currentSession(ctx context.Context, k sessionKind) (*upSession, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, notDispatched(gateway.Errorf(gateway.EUnavailable,
			"upstream MCP adapter for %s is closed; restart the gateway", a.display))
	}
	if a.sessions[k] != nil {
		return a.sessions[k], nil
	}
	s, err := a.initialize(ctx, declared(k))
	if err != nil {
		return nil, notDispatched(a.unavailable(a.scrub(err)))
	}
	a.sessions[k] = s
	if a.onTools != nil && k == relaying && s.id != "" {
		a.listen(s)
	}
	return s, nil
}

// clientCapabilities are what the gateway declares to the upstream on
// its relaying session ({"sampling":{},"elicitation":{"form":{}},"roots":{}}): it can relay the upstream's requests for
// sampling, form elicitation and roots to its clients (whether it does
// for a call is the policy's).
var clientCapabilities = declared(relaying)

// initialize runs the MCP handshake: initialize, then
// notifications/initialized, then, when the upstream offers logging,
// logging/setLevel debug, so that every log message reaches the relay,
// which filters by what each client asked for.
func (a *Adapter) initialize(ctx context.Context, capabilities string) (*upSession, error) {
	id := a.ids.Add(1)
	body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":%q,"capabilities":%s,"clientInfo":%s}}`,
		id, a.version, capabilities, a.clientInfo)
	pending := &upSession{version: a.version}
	raw, sid, err := a.exchange(ctx, pending, id, body, nil)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Logging json.RawMessage `json:"logging"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.ProtocolVersion == "" {
		return nil, fmt.Errorf("initialize: the upstream's result is not an InitializeResult: %s", clip(raw))
	}
	s := &upSession{id: sid, version: res.ProtocolVersion}
	if err := a.notify(ctx, s, "notifications/initialized", nil); err != nil {
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	if len(res.Capabilities.Logging) > 0 {
		id := a.ids.Add(1)
		if _, _, err := a.exchange(ctx, s, id, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"logging/setLevel","params":{"level":"debug"}}`, id), nil); err != nil {
			return nil, fmt.Errorf("logging/setLevel: %w", err)
		}
	}
	return s, nil
}

// roundTrip sends the request body(id) on the live session (initializing
// one first when needed) and returns its result. When the attempt fails in
// a way that shows the request never reached the upstream's handler (or
// the request is safe to repeat), the session is dropped and the request
// is sent once more on a fresh one. relay, when not nil, receives what the
// upstream sends during the request.
func (a *Adapter) roundTrip(ctx context.Context, what string, safeToRepeat bool, relay wire.Relay, body func(id int64) []byte) (json.RawMessage, error) {
	return a.roundTripOn(ctx, relaying, what, safeToRepeat, relay, body)
}

// roundTripOn is roundTrip on the session of kind k.
func (a *Adapter) roundTripOn(ctx context.Context, k sessionKind, what string, safeToRepeat bool, relay wire.Relay, body func(id int64) []byte) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		s, err := a.currentSession(ctx, k)
		if err != nil {
			return nil, err
		}
		id := a.ids.Add(1)
		raw, _, err := a.exchange(ctx, s, id, body(id), relay)
		if err == nil {
			return raw, nil
		}
		err = a.scrub(err)
		var rpc *wire.RPCError
		if errors.As(err, &rpc) {
			return nil, a.rpcError(what, rpc, err)
		}
		if lerr := a.limitError(what, err); lerr != nil {
			a.cancelUpstream(s, id, err) // the reply is no longer read: the upstream may stop
			return nil, lerr
		}
		never := neverDelivered(err)
		if ctx.Err() != nil {
			if !never {
				a.cancelUpstream(s, id, ctx.Err())
			}
			return nil, a.timedOut(ctx, what, err)
		}
		a.drop(s)
		if attempt == 0 && (safeToRepeat || never) {
			continue
		}
		if never {
			return nil, notDispatched(a.unavailable(err))
		}
		return nil, a.unavailable(err)
	}
}

// drop forgets s if it is still the live session, so that the next request
// initializes a new one. The upstream expires what it kept of s.
func (a *Adapter) drop(s *upSession) {
	a.mu.Lock()
	for k := range a.sessions {
		if a.sessions[k] == s {
			a.sessions[k] = nil
			s.stopListening()
		}
	}
	a.mu.Unlock()
}

// cancelUpstream tells the upstream, in the background, that the caller
// gave up request id (MCP basic/utilities/cancellation).
func (a *Adapter) cancelUpstream(s *upSession, id int64, cause error) {
	reason := "the gateway's caller cancelled the request"
	var big *errReplyLimit
	switch {
	case errors.Is(cause, context.DeadlineExceeded):
		reason = "the gateway's deadline for the request passed"
	case errors.As(cause, &big):
		reason = "the reply went past the gateway's limit: " + big.Error()
	}
	params := fmt.Appendf(nil, `{"requestId":%d,"reason":%q}`, id, reason)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.notify(ctx, s, "notifications/cancelled", params)
	}()
}

// notify posts a notification on session s; the upstream answers 202.
func (a *Adapter) notify(ctx context.Context, s *upSession, method string, params json.RawMessage) error {
	body := []byte(`{"jsonrpc":"2.0","method":` + strconv.Quote(method))
	if params != nil {
		body = append(append(body, `,"params":`...), params...)
	}
	return a.post(ctx, s, append(body, '}'))
}

// post sends a message that gets no JSON-RPC response (a notification or
// a response to the upstream's request): 202, or 200 with a body ignored.
func (a *Adapter) post(ctx context.Context, s *upSession, body []byte) error {
	resp, err := a.send(ctx, s, body)
	if err != nil {
		return err
	}
	defer drain(resp)
	if resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusOK {
		return nil
	}
	if resp.StatusCode == http.StatusNotFound && s.id != "" {
		return errSessionLost
	}
	return statusError(resp)
}

// send POSTs body with the session's headers.
func (a *Adapter) send(ctx context.Context, s *upSession, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{"application/json, text/event-stream"}
	if s.id != "" {
		h["Mcp-Session-Id"] = []string{s.id}
	}
	h["Mcp-Protocol-Version"] = []string{s.version}
	if tp, ts := tracing.Inject(ctx); tp != "" {
		// The call's trace goes on to the upstream (docs/operations.md, "Traces"), in the
		// headers as in params._meta (callBody).
		h["Traceparent"] = []string{tp}
		if ts != "" {
			h["Tracestate"] = []string{ts}
		}
	}
	if s.tool != "" {
		h["Mcp-Method"] = []string{"tools/call"}
		h["Mcp-Name"] = []string{headerName(s.tool)}
		for _, kv := range s.params {
			h.Set(kv[0], kv[1])
		}
	}
	return a.http.Do(req)
}

// deleteSession ends s on the upstream (HTTP DELETE); an upstream that
// no longer knows it, or does not take DELETE, is fine.
func (a *Adapter) deleteSession(ctx context.Context, s *upSession) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, a.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("Mcp-Protocol-Version", s.version)
	resp, err := a.http.Do(req)
	if err != nil {
		return err
	}
	defer drain(resp)
	switch resp.StatusCode {
	case http.StatusOK, http.StatusAccepted, http.StatusNoContent, http.StatusNotFound, http.StatusMethodNotAllowed:
		return nil
	}
	return statusError(resp)
}

// exchange posts the request body (JSON-RPC id) on session s and reads
// the reply, a JSON body or an event stream, until the response to id. It
// returns the response's result, the Mcp-Session-Id the upstream set (for
// initialize), or the upstream's JSON-RPC error as a *wire.RPCError.
// Messages of the stream before the response go to relay (call). An event
// stream is closed once the response is read, not drained: an upstream
// that keeps it open must not hold the call until the timeout.
func (a *Adapter) exchange(ctx context.Context, s *upSession, id int64, body []byte, relay wire.Relay) (json.RawMessage, string, error) {
	resp, err := a.send(ctx, s, body)
	if err != nil {
		return nil, "", err
	}
	stream := false
	defer func() {
		if stream { // an event stream may stay open after the response: never wait for its end
			_ = resp.Body.Close()
			return
		}
		drain(resp)
	}()
	switch {
	case resp.StatusCode == http.StatusNotFound && s.id != "":
		return nil, "", errSessionLost
	case resp.StatusCode != http.StatusOK:
		return nil, "", statusError(resp)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		lim := a.limits.messageBytes
		msg, err := io.ReadAll(&boundedReader{r: resp.Body, n: lim, e: &errReplyLimit{"a JSON reply body", sizeText(lim)}})
		if err != nil {
			return nil, "", err
		}
		res, err := responseTo(id, msg)
		return res, sid, err
	}
	stream = true
	c := &call{a: a, s: s, id: id, relay: relay}
	defer c.wait()
	res, err := c.readStream(ctx, resp.Body)
	return res, sid, err
}

// message is one JSON-RPC message as read from the upstream.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *wire.RPCError  `json:"error"`
}

// responseTo decodes msg as the response to id: its result, or its error
// as a *wire.RPCError.
func responseTo(id int64, msg []byte) (json.RawMessage, error) {
	var m message
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, fmt.Errorf("the upstream's reply is not a JSON-RPC message: %s", clip(msg))
	}
	if string(m.ID) != strconv.FormatInt(id, 10) {
		return nil, fmt.Errorf("the upstream answered request %s instead of %d", clip(m.ID), id)
	}
	if m.Error != nil {
		return nil, m.Error
	}
	if m.Result == nil {
		return nil, fmt.Errorf("the upstream's response has neither result nor error: %s", clip(msg))
	}
	return m.Result, nil
}

// call is one request's read of its response stream.
type call struct {
	a     *Adapter
	s     *upSession
	id    int64
	relay wire.Relay

	answers  sync.WaitGroup // relayed requests still being answered
	stop     context.CancelFunc
	events   int // messages read so far (limits.events)
	requests int // requests relayed so far (limits.requests)
}

// wait ends the relayed requests still waiting for the client (the
// upstream answered without them) and waits for their goroutines.
func (c *call) wait() {
	if c.stop != nil {
		c.stop()
	}
	c.answers.Wait()
}

// readStream reads SSE events (MCP basic/transports: one JSON-RPC message
// per event) until the response to c.id, relaying every other message.
func (c *call) readStream(ctx context.Context, body io.Reader) (json.RawMessage, error) {
	rctx, stop := context.WithCancel(ctx)
	c.stop = stop
	lim := c.a.limits
	tooBig := &errReplyLimit{"one event of the reply", sizeText(lim.messageBytes)}
	sc := bufio.NewScanner(&boundedReader{r: body, n: lim.replyBytes, e: &errReplyLimit{"the reply's event stream", sizeText(lim.replyBytes)}})
	sc.Buffer(make([]byte, 0, 4096), lim.messageBytes+len("data: \n"))
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if len(data) == 0 {
				continue
			}
			if c.events++; c.events > lim.events {
				return nil, &errReplyLimit{"the reply's messages", strconv.Itoa(lim.events) + " messages"}
			}
			res, done, err := c.handle(rctx, data)
			if done {
				return res, err
			}
			data = data[:0]
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[5:], []byte(" "))
			if len(data)+1+len(v) > lim.messageBytes {
				return nil, tooBig
			}
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return nil, tooBig
	case err != nil:
		return nil, err
	}
	return nil, io.ErrUnexpectedEOF
}

// handle takes one message of the stream; done reports the response to
// c.id (res or err).
func (c *call) handle(ctx context.Context, data []byte) (res json.RawMessage, done bool, err error) {
	var m message
	if json.Unmarshal(data, &m) != nil {
		return nil, false, nil // not a message: nothing to relay
	}
	if m.Method == "" {
		if string(m.ID) != strconv.FormatInt(c.id, 10) {
			return nil, false, nil // a response to another request
		}
		if m.Error != nil {
			return nil, true, m.Error
		}
		return m.Result, true, nil
	}
	if m.ID == nil {
		c.relayNotification(ctx, m.Method, m.Params)
		return nil, false, nil
	}
	if c.s.tool != "" {
		return nil, false, nil // a stateless call has no channel for an answer; 2026-07-28 servers send no requests
	}
	if c.requests++; c.requests > c.a.limits.requests {
		return nil, true, &errReplyLimit{"the upstream's requests to the client during the call (" + m.Method + ")", strconv.Itoa(c.a.limits.requests) + " requests"}
	}
	c.answers.Add(1)
	go func() {
		defer c.answers.Done()
		c.relayRequest(ctx, m)
	}()
	return nil, false, nil
}

// relayNotification passes the upstream's progress (its token mapped back
// to the client's) and log messages to the relay; everything else, and
// everything of a call without a relay, is dropped.
func (c *call) relayNotification(ctx context.Context, method string, params json.RawMessage) {
	if method == methodToolsChanged && c.a.onTools != nil {
		c.a.onTools()
		return
	}
	if c.relay == nil {
		return
	}
	switch method {
	case "notifications/progress":
		client := c.relay.ProgressToken()
		if client == nil {
			return
		}
		var p map[string]json.RawMessage
		if json.Unmarshal(params, &p) != nil || !bytes.Equal(p["progressToken"], progressToken(c.id)) {
			return // another call's progress, or malformed
		}
		p["progressToken"] = client
		params, _ = json.Marshal(p)
	case "notifications/message":
	default:
		return
	}
	_ = c.relay.Notify(ctx, method, params)
}

// relayRequest asks the client, through the relay, what the upstream asks
// (m, a request), and posts the answer back upstream: the client's result,
// or an error (the client's, the policy's refusal, or -32601 when the call
// has no relay).
func (c *call) relayRequest(ctx context.Context, m message) {
	var res json.RawMessage
	var err error
	if c.relay == nil {
		err = &wire.RPCError{Code: codeMethodNotFound, Message: "the gateway cannot relay " + m.Method + " for this call"}
	} else {
		res, err = c.relay.Request(ctx, m.Method, m.Params)
	}
	body := []byte(`{"jsonrpc":"2.0","id":`)
	body = append(body, m.ID...)
	var rpc *wire.RPCError
	switch {
	case err == nil:
		body = append(append(body, `,"result":`...), res...)
	case errors.As(err, &rpc):
		e, _ := json.Marshal(rpc)
		body = append(append(body, `,"error":`...), e...)
	default:
		e, _ := json.Marshal(&wire.RPCError{Code: codeInternal, Message: "the gateway could not relay " + m.Method + " to its client: " + err.Error()})
		body = append(append(body, `,"error":`...), e...)
	}
	body = append(body, '}')
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.a.timeout)
	defer cancel()
	_ = c.a.post(pctx, c.s, body) // a lost answer fails the upstream's tool, which reports it
}

// drain reads what is left of resp's body (so the connection is reused)
// and closes it.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

// statusError is the error of an HTTP status other than 200 and 202: the
// JSON-RPC error of its body when there is one, else the status and the
// start of the body.
func statusError(resp *http.Response) error {
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var m message
	if json.Unmarshal(msg, &m) == nil && m.Error != nil {
		return m.Error
	}
	return &errHTTPStatus{status: resp.StatusCode, body: string(clip(bytes.TrimSpace(msg)))}
}

// clip shortens b for an error message.
func clip(b []byte) []byte {
	if len(b) > 200 {
		return append(b[:200:200], "..."...)
	}
	return b
}

// neverDelivered reports whether err proves the request never reached a
// tool handler, so that sending it again cannot run a tool twice: the
// connection could not be dialled, or the upstream refused the session
// (404) before it read the request. Each request has its own HTTP
// exchange, so a 404 says nothing about other requests in flight.
func neverDelivered(err error) bool {
	if errors.Is(err, errSessionLost) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// rpcError translates a JSON-RPC error the upstream answered. Invalid
// params and method not found are protocol errors raised before a tool
// runs (MCP reports a failing tool as an isError result instead), so they
// are marked not dispatched; any other code leaves the outcome unknown.
// An upstream that answers -32602 after its tool had side effects breaks
// that MCP rule and, with it, this marking.
func (a *Adapter) rpcError(what string, rpc *wire.RPCError, err error) error {
	switch rpc.Code {
	case codeInvalidParams:
		return notDispatched(gateway.Wrap(gateway.EInvalid, err, fmt.Sprintf(
			"upstream MCP server %s rejected %s as invalid: %s; check the tool name and arguments against the upstream's tools/list", a.display, what, rpc.Message)))
	case wire.RPCMissingClientCapability:
		// SEP-2575: the upstream refused before running the tool because
		// the client (whose capabilities the stateless call carries) did
		// not declare one the tool needs; the client gets the same error.
		var data struct {
			Required json.RawMessage `json:"requiredCapabilities"`
		}
		_ = json.Unmarshal(rpc.Data, &data)
		e := gateway.Wrap(gateway.EMissingCapability, err, fmt.Sprintf(
			"upstream MCP server %s needs a client capability to run %s that the client did not declare or the policy does not relay (%s); declare it in _meta %q, or use a client that supports it", a.display, what, rpc.Message, metaClientCapabilities))
		if isJSONObject(data.Required) {
			e.RequiredCapabilities = data.Required
		}
		return notDispatched(e)
	case codeMethodNotFound:
		return notDispatched(gateway.Wrap(gateway.EUnavailable, err, fmt.Sprintf(
			"upstream MCP server %s does not know %s (JSON-RPC %d: %s); check that %s points at the server that implements it", a.display, what, rpc.Code, rpc.Message, a.setting)))
	}
	return gateway.Wrap(gateway.EUnavailable, err, fmt.Sprintf(
		"upstream MCP server %s answered %s with JSON-RPC error %d: %s", a.display, what, rpc.Code, rpc.Message))
}

// limitError is the error of a call whose reply went past one of the
// reply's bounds (errReplyLimit), naming the upstream and the limit; nil
// when err is another failure.
func (a *Adapter) limitError(what string, err error) error {
	var big *errReplyLimit
	if !errors.As(err, &big) {
		return nil
	}
	return gateway.Wrap(gateway.EUnavailable, err, fmt.Sprintf(
		"upstream MCP server %s: %s went past the gateway's limit of %s, so the gateway stopped reading it and %s failed; make the upstream send less in one reply", a.display, big.what, big.limit, what))
}

func (a *Adapter) timedOut(ctx context.Context, what string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return gateway.Wrap(gateway.EUnavailable, err, fmt.Sprintf(
			"upstream MCP server %s did not answer %s in time (limit %s); check the upstream's health or raise the timeout", a.display, what, a.timeout))
	}
	return gateway.Wrap(gateway.EUnavailable, err, fmt.Sprintf(
		"%s to upstream MCP server %s was cancelled by the caller", what, a.display))
}

func (a *Adapter) unavailable(err error) *gateway.Error {
	return gateway.Wrap(gateway.EUnavailable, err, fmt.Sprintf(
		"upstream MCP server %s unreachable: %s; check that it is running and that %s points at its MCP endpoint", a.display, shortCause(err), a.setting))
}

// shortCause names the root of a transport failure in a few words; the full
// chain stays in the wrapped error for the logs.
func shortCause(err error) string {
	var op *net.OpError
	var st *errHTTPStatus
	switch {
	case errors.As(err, &op):
		return op.Op + ": " + op.Err.Error()
	case errors.Is(err, errSessionLost):
		return "it no longer knows the session and a new one could not be used"
	case errors.As(err, &st):
		return st.Error()
	default:
		return err.Error()
	}
}

// notDispatched marks e's cause with gateway.ErrNotDispatched: the request
// provably never reached a tool handler.
func notDispatched(e *gateway.Error) *gateway.Error {
	e.Err = gateway.NotDispatched(e.Err)
	return e
}

// isJSONObject reports whether raw is a JSON object.
func isJSONObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{' && json.Valid(raw)
}
