package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/canon"
	"github.com/mcpgate/mcpgate/gateway/mcp/jsonrpc"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// The stateless protocol 2026-07-28 (MCP 2026-07-28: basic/transports/
// streamable-http, basic/versioning, server/discover, server/utilities/
// caching, basic/patterns/subscriptions). It has no initialize and no
// session: every POST carries one request whose params._meta names the
// protocol version and the client's capabilities, the MCP-Protocol-Version,
// Mcp-Method and Mcp-Name headers repeat the body and are checked against
// it, and list changes come on the response stream of subscriptions/listen.
// The transport serves it on the same endpoint as the session-based
// versions: a POST without Mcp-Session-Id is stateless when its
// MCP-Protocol-Version header names a version other than the session-based
// ones, or when it is server/discover or carries the per-request _meta
// version (modernRequest). A refused tools/call is answered as at
// 2025-11-25 (ToolError: a tool execution error for a policy denial, a
// rate limit and a schema violation); what 2026-07-28 adds around
// tools/call is transport only.
const (
	headerMethod = "Mcp-Method"
	headerName   = "Mcp-Name"

	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"

	// JSON-RPC codes of MCP 2026-07-28 (basic/index, "Error Codes").
	rpcHeaderMismatch      = wire.RPCHeaderMismatch
	rpcUnsupportedProtocol = wire.RPCUnsupportedProtocol

	// listTTLMillis is the ttlMs of tools/list results: 0, immediately
	// stale, because the list follows the caller's profile, which an
	// operator may change at any moment (taking effect within 1 s on every
	// replica); subscriptions/listen tells of changes as they happen.
	listTTLMillis = 0
	// discoverTTLMillis is the ttlMs of server/discover: its versions,
	// capabilities and instructions change only with a new release.
	discoverTTLMillis = 5 * 60 * 1000
)

// modernRequest reports whether a POST without Mcp-Session-Id is a
// 2026-07-28 request: its MCP-Protocol-Version header names a version that
// is not session-based (so also an unknown one, answered with
// UnsupportedProtocolVersion), or, without such a header, it is
// server/discover or carries the per-request protocol version in _meta.
func modernRequest(r *http.Request, msgs []jsonrpc.Message, batch bool) bool {
	if r.Header.Get(headerSessionID) != "" {
		return false
	}
	if v := strings.TrimSpace(r.Header.Get(headerProtocolVersion)); v != "" {
		return !versionOf(v).LegacySSE // a session-based version of either transport
	}
	if batch || msgs[0].Kind != jsonrpc.KindRequest || startsSession(&msgs[0]) {
		return false
	}
	return info(&msgs[0]).probe || metaVersionOf(msgs[0].Params) != ""
}

// metaVersionOf returns params._meta's protocol version, "" when absent.
func metaVersionOf(params json.RawMessage) string {
	var in struct {
		Meta json.RawMessage `json:"_meta"`
	}
	if decodeParams(params, &in) != nil {
		return ""
	}
	v, _ := stringValue(metaMember(in.Meta, metaProtocolVersion))
	return v
}

// errMetaInvalid is HTTP 400 with -32602: a required _meta field is missing
// or malformed (MCP 2026-07-28, basic/index, "Per-request protocol fields").
func errMetaInvalid(format string, args ...any) error {
	e := wire.ErrInvalidRequest(format, args...)
	e.Code = wire.RPCInvalidParams
	return e
}

// errUnsupportedVersion is HTTP 400 with UnsupportedProtocolVersion
// (-32022), listing the versions served and echoing the one requested.
func errUnsupportedVersion(requested string) error {
	msg := "unsupported protocol version %q; this server speaks %v (2026-07-28 statelessly; the others after initialize, with a session)"
	if versionOf(requested).Streamable {
		msg = "protocol version %q is served with initialize and a session (Mcp-Session-Id), not with per-request _meta; this server speaks %v"
	}
	e := wire.ErrInvalidRequest(msg, requested, discoverVersions)
	e.Code = rpcUnsupportedProtocol
	e.Supported, e.Requested = discoverVersions, requested
	return e
}

// errModernMethodNotFound is HTTP 404 with -32601 (MCP 2026-07-28,
// streamable-http, "Protocol Version Header").
func errModernMethodNotFound(method string) error {
	return &wire.ProtocolError{Status: http.StatusNotFound, Code: wire.RPCMethodNotFound, Class: gateway.EMethodNotFound,
		Msg: "method " + wire.Quote(method) + " is not served by this MCP endpoint at protocol 2026-07-28; it serves " + modernMethods}
}

// serveModern answers one stateless POST.
func (t *Transport) serveModern(w http.ResponseWriter, r *http.Request, p *gateway.Principal, msgs []jsonrpc.Message, batch bool, f format) {
	if batch {
		t.replyError(w, r, nil, wire.ErrInvalidRequest("protocol 2026-07-28 takes one JSON-RPC message per POST; JSON-RPC batches are not part of it"))
		return
	}
	m := &msgs[0]
	switch m.Kind {
	case jsonrpc.KindNotification: // none is defined on Streamable HTTP; accepted and ignored
		w.WriteHeader(http.StatusAccepted)
		return
	case jsonrpc.KindResponse:
		t.replyError(w, r, nil, wire.ErrInvalidRequest("protocol 2026-07-28 clients send no JSON-RPC responses: this server sends no requests"))
		return
	}
	rq := request{p: p, m: m}
	if err := checkModern(r, m, &rq.modern); err != nil {
		t.replyError(w, r, m.ID, err)
		return
	}
	mi := info(m)
	switch {
	case mi.stream != nil:
		mi.stream(t, w, r, rq)
		return
	case mi.stateless == nil:
		t.refusedMethod(r.Context(), p, m.Method)
		t.replyError(w, r, m.ID, errModernMethodNotFound(m.Method))
		return
	}
	// Closing the response stream cancels the request (MCP 2026-07-28,
	// streamable-http, "Cancellation"): ctx keeps r's cancellation.
	// Progress and log messages of a tools/call go on its response stream
	// before the result, when the client accepts one (streamable-http,
	// "Sending Messages to the Server": the stream carries messages
	// related to the request).
	ctx := gateway.WithRequestID(r.Context(), newRequestID())
	reply := newReplyWriter(w, f, false, t.writeDeadline)
	_, reply.canSSE = acceptable(r.Header.Values("Accept"))
	rq.stream = reply.stream
	res, err := t.safely(ctx, rq, mi.stateless)
	t.replyModern(ctx, w, r, reply, m, res, err, mi.hints)
}

// replyModern answers a stateless request with its result res (the
// fields of every 2026-07-28 result added, and hints, its caching fields),
// or with err: a refusal of the transport or a missing capability with its
// own HTTP status, any other error as a JSON-RPC error in a 200 reply.
func (t *Transport) replyModern(ctx context.Context, w http.ResponseWriter, r *http.Request, reply *replyWriter, m *jsonrpc.Message, res any, err error, hints *cacheHints) {
	resp := jsonrpc.Response{JSONRPC: "2.0", ID: m.ID}
	var body json.RawMessage
	enveloped := err == nil && isToolResult(res) && m.ID != nil && jsonrpc.PlainID(m.ID)
	if err == nil {
		var id json.RawMessage
		if enveloped {
			id = m.ID
		}
		body, err = t.modernResult(res, hints, id)
	}
	switch {
	case err != nil && (wire.IsProtocolError(err) || gateway.ErrorCodeOf(err) == gateway.EMissingCapability) && reply.fail(func() { t.replyError(w, r, m.ID, err) }):
		// A refusal of the transport that the handler passed on (an
		// Mcp-Param-* header, CheckParamHeaders), or a capability the
		// client did not declare (SEP-2575: "For HTTP, the response
		// status code MUST be 400"): its own HTTP status.
		return
	case err != nil: // an error that is not a tool execution error: a JSON-RPC error in a 200 reply, as in a session
		resp.Error, _ = t.wireError(ctx, err)
		reply.write(t.encode(ctx, resp))
	case enveloped:
		// modernResult wrote compact JSON as encoding/json would, in its
		// envelope: no second pass over it.
		reply.write(body)
	default:
		resp.Result = body
		reply.write(t.encode(ctx, resp))
	}
	reply.finish()
}

// checkModern validates a stateless request: the standard headers against
// the body (HeaderMismatch), the per-request _meta (-32602), and the
// version (UnsupportedProtocolVersion). On success it records the version
// in mr, with what else it read of the request, so that later steps need
// not decode params again.
func checkModern(r *http.Request, m *jsonrpc.Message, mr *modernReq) error {
	headerVersion, ok := headerValue(r, headerProtocolVersion)
	if !ok {
		return wire.ErrHeaderMismatch("header MCP-Protocol-Version has invalid characters; send the protocol version of params._meta[%q]", metaProtocolVersion)
	}
	if headerVersion == "" {
		return wire.ErrHeaderMismatch("missing MCP-Protocol-Version header; protocol 2026-07-28 requires it on every POST, equal to params._meta[%q]", metaProtocolVersion)
	}
	method, ok := headerValue(r, headerMethod)
	switch {
	case !ok:
		return wire.ErrHeaderMismatch("header Mcp-Method has invalid characters; send the request's method")
	case method == "":
		return wire.ErrHeaderMismatch("missing Mcp-Method header; protocol 2026-07-28 requires it on every request, equal to the body's method %q", m.Method)
	case method != m.Method:
		return wire.ErrHeaderMismatch("header mismatch: Mcp-Method header value %q does not match body method %q", method, m.Method)
	}
	// One pass over params serves the Mcp-Name check and the _meta checks,
	// and one over _meta finds the members the transport reads (also the
	// progress token and log level of the call's relay); name stays raw so
	// that a name of the wrong type is the handler's to refuse, as a
	// malformed body is. Nothing is decoded that is not checked.
	in, decodeErr := modernFields(m.Params)
	if decodeErr == nil {
		decodeErr = checkMetaObject(in.Meta)
	}
	if repeated, ok := decodeErr.(jsonrpc.RepeatedMember); ok { // which name the headers should match is unknown (not errors.As: its target would be allocated on every request)
		return errMetaInvalid("params: %s", repeated.Error())
	}
	namesTool := info(m).namesTool
	if namesTool {
		name, _ := stringValue(in.Name)
		if err := checkNameHeader(r, name); err != nil {
			return err
		}
	}
	if decodeErr != nil {
		return errMetaInvalid("params must be an object%s", typeProblem(decodeErr))
	}
	var rawVersion, caps json.RawMessage
	if len(in.Meta) > 0 && in.Meta[0] == '{' {
		canon.Members(in.Meta, func(name, value []byte) {
			switch string(name) {
			case metaProtocolVersion:
				rawVersion = value
			case metaClientCapabilities:
				caps = value
			case "progressToken":
				mr.progress = value
			case metaLogLevel:
				mr.logLevel = value
			}
		})
	}
	version := Version20260728 // the version served, without a string made for it
	if string(rawVersion) != `"`+Version20260728+`"` {
		version, _ = stringValue(rawVersion)
	}
	if version == "" {
		return errMetaInvalid("params._meta[%q] is required (a string, e.g. %q) on every 2026-07-28 request", metaProtocolVersion, Version20260728)
	}
	if len(caps) == 0 || caps[0] != '{' {
		return errMetaInvalid("params._meta[%q] is required (an object, {} when the client declares none) on every 2026-07-28 request", metaClientCapabilities)
	}
	if headerVersion != version {
		return wire.ErrHeaderMismatch("header mismatch: MCP-Protocol-Version header value %q does not match params._meta[%q] %q", headerVersion, metaProtocolVersion, version)
	}
	if !versionOf(version).Stateless {
		return errUnsupportedVersion(version)
	}
	mr.version = version
	mr.capabilities = caps
	if namesTool {
		mr.split, mr.hasSplit = in, true
		if versionOf(version).ParamHeaders {
			mr.header = r.Header // for the Mcp-Param-* headers (wire.CheckParamHeaders, in the pipeline)
		}
	}
	return nil
}

// modernReq is what checkModern read of a stateless (2026-07-28) request.
type modernReq struct {
	// version is the request's protocol version.
	version string
	// capabilities is the _meta clientCapabilities object; progress and
	// logLevel are its _meta progressToken and log level as sent (nil when
	// absent), found by the same pass over _meta.
	capabilities, progress, logLevel json.RawMessage
	// split is the members of a tools/call's params as checkModern found
	// them (when hasSplit), so that neither callTool nor the call's relay
	// reads the params again.
	split    modernParams
	hasSplit bool
	// header is the HTTP request's header of a tools/call at a version
	// with Mcp-Param-* headers; nil otherwise.
	header http.Header
}

// modernParams are the members of a 2026-07-28 request's params that the
// transport reads, raw (nil when absent; a repeated one is refused):
// name and _meta for every request, arguments for tools/call (which
// callTool then reads without another pass), inputResponses and
// requestState for the retry of a tools/call round (MCP 2026-07-28,
// basic/patterns/mrtr).
type modernParams struct {
	Name           json.RawMessage `json:"name"`
	Arguments      json.RawMessage `json:"arguments"`
	Meta           json.RawMessage `json:"_meta"`
	InputResponses json.RawMessage `json:"inputResponses"`
	RequestState   json.RawMessage `json:"requestState"`
}

// modernMembers are modernParams' member names, in the order of its fields.
var modernMembers = []string{"name", "arguments", "_meta", "inputResponses", "requestState"}

// modernFields reads modernParams from params as decodeParams does, with
// its error for params that are not an object, in one pass and without
// reflection.
func modernFields(params json.RawMessage) (in modernParams, err error) {
	if len(params) == 0 || string(params) == "null" {
		return in, nil
	}
	if params[0] == '{' {
		var v [5][]byte // modernMembers' values, on the stack
		ok, repeated := jsonrpc.ReadMembers(params, modernMembers, v[:])
		if repeated != "" {
			return in, jsonrpc.RepeatedMember(repeated)
		}
		if ok {
			return modernParams{Name: v[0], Arguments: v[1], Meta: v[2], InputResponses: v[3], RequestState: v[4]}, nil
		}
	}
	var slow modernParams // a variable of its own: &slow escapes, in does not
	err = decodeParams(params, &slow)
	return slow, err
}

// checkNameHeader checks Mcp-Name against params.name of tools/call
// (bodyName, "" when the body has none): it is required when the body names
// a tool, and must equal it after optional whitespace is trimmed and the
// =?base64?…?= sentinel decoded.
func checkNameHeader(r *http.Request, bodyName string) error {
	header, ok := headerValue(r, headerName)
	if !ok {
		return wire.ErrHeaderMismatch("header Mcp-Name has invalid characters; send the tool name, Base64-encoded as =?base64?…?= when it is not plain ASCII")
	}
	if header == "" {
		if bodyName == "" {
			return nil
		}
		return wire.ErrHeaderMismatch("missing Mcp-Name header; tools/call at protocol 2026-07-28 requires it, equal to params.name %q", bodyName)
	}
	name, ok := wire.DecodeSentinel(header)
	if !ok {
		return wire.ErrHeaderMismatch("header Mcp-Name %q is not valid Base64 (=?base64?…?=) of UTF-8 text", header)
	}
	if name != bodyName {
		return wire.ErrHeaderMismatch("header mismatch: Mcp-Name header value %q does not match body params.name %q", name, bodyName)
	}
	return nil
}

// headerValue returns a header's value with optional whitespace trimmed
// (RFC 9110 §5.5); ok is false when it holds anything but visible ASCII,
// space and tab, or when the header is repeated with different values.
func headerValue(r *http.Request, name string) (string, bool) {
	vals := r.Header.Values(name)
	if len(vals) == 0 {
		return "", true
	}
	return wire.TrimmedValue(vals)
}

// discoverResult is DiscoverResult without the fields modernResult adds.
type discoverResult struct {
	SupportedVersions []string       `json:"supportedVersions"`
	Capabilities      map[string]any `json:"capabilities"`
	Instructions      string         `json:"instructions,omitempty"`
}

func (t *Transport) discover() *discoverResult {
	return &discoverResult{
		SupportedVersions: discoverVersions,
		Capabilities:      map[string]any{"tools": map[string]any{"listChanged": true}},
		Instructions:      t.opts.Instructions,
	}
}

// cacheHints are the caching fields of a cacheable 2026-07-28 result
// (server/utilities/caching): ttlMs and cacheScope, encoded once.
type cacheHints struct {
	fields map[string]json.RawMessage // each field's encoded value
	suffix string                     // `,"name":value` for each field, in name order
}

func newCacheHints(ttlMillis int, scope string) *cacheHints {
	h := &cacheHints{fields: map[string]json.RawMessage{
		"ttlMs":      json.RawMessage(strconv.Itoa(ttlMillis)),
		"cacheScope": json.RawMessage(wire.Quote(scope)),
	}}
	for _, k := range slices.Sorted(maps.Keys(h.fields)) {
		h.suffix += "," + wire.Quote(k) + ":" + string(h.fields[k])
	}
	return h
}

var (
	discoverHints = newCacheHints(discoverTTLMillis, "public")
	listHints     = newCacheHints(listTTLMillis, "private")
)

// modernResult adds what every 2026-07-28 result carries to res:
// resultType "complete", the server's identity in _meta (beside any _meta
// of res), and hints (the caching fields of cacheable results; nil for
// others). With id not nil (a jsonrpc.PlainID) it returns the whole response
// instead, jsonrpc.ResultEnvelope(id, result), written in the result's own buffer
// in the common case.
func (t *Transport) modernResult(res any, hints *cacheHints, id json.RawMessage) (json.RawMessage, error) {
	out, enveloped, err := t.modernBody(res, hints, id)
	if err != nil || id == nil || enveloped {
		return out, err
	}
	return jsonrpc.ResultEnvelope(id, out), nil
}

// modernBody is modernResult's result. In the common case, a result
// without _meta, it is written in one buffer, in its envelope when id is
// not nil (enveloped true); else it comes alone.
func (t *Transport) modernBody(res any, hints *cacheHints, id json.RawMessage) (out json.RawMessage, enveloped bool, err error) {
	var raw []byte
	if tr, ok := res.(*gateway.ToolResult); ok && tr.Input == nil {
		raw, err = tr.MarshalJSON() // what json.Marshal writes, without its check of a Marshaler's output
	} else if !ok {
		raw, err = json.Marshal(res)
	}
	if err != nil {
		return nil, false, gateway.Wrap(gateway.EInternal, err, "the result could not be encoded as JSON; the gateway logged the cause")
	}
	if tr, ok := res.(*gateway.ToolResult); ok && tr.Input != nil {
		return inputRequiredResult(tr.Input, t.serverInfo), false, nil
	}
	if len(raw) >= 2 && raw[0] == '{' && !bytes.Contains(raw, []byte(`"_meta"`)) {
		// The common case, a result without _meta: append the fields to
		// the encoded object instead of decoding and encoding it again.
		const meta, complete = `"_meta":{"` + metaServerInfo + `":`, `},"resultType":"complete"`
		size := len(raw) + len(meta) + len(t.serverInfo) + len(complete) + 2
		if hints != nil {
			size += len(hints.suffix)
		}
		if id != nil {
			size += len(jsonrpc.EnvelopeOpen) + len(id) + len(jsonrpc.EnvelopeMid) + 1
		}
		out := make([]byte, 0, size)
		if id != nil {
			out = append(append(append(out, jsonrpc.EnvelopeOpen...), id...), jsonrpc.EnvelopeMid...)
		}
		out = append(out, raw[:len(raw)-1]...)
		if len(raw) > 2 {
			out = append(out, ',')
		}
		out = append(append(append(out, meta...), t.serverInfo...), complete...)
		if hints != nil {
			out = append(out, hints.suffix...)
		}
		out = append(out, '}')
		if id != nil {
			out = append(out, '}')
		}
		return out, id != nil, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, false, gateway.Errorf(gateway.EInternal, "the result is not a JSON object")
	}
	meta := map[string]json.RawMessage{}
	if m, ok := obj["_meta"]; ok {
		_ = json.Unmarshal(m, &meta)
	}
	meta[metaServerInfo] = t.serverInfo
	obj["_meta"], _ = json.Marshal(meta)
	obj["resultType"] = json.RawMessage(`"complete"`)
	if hints != nil {
		maps.Copy(obj, hints.fields)
	}
	out, err = json.Marshal(obj)
	return out, false, err
}

// subscriptionFilter is SubscriptionFilter; the gateway honours
// toolsListChanged only (it serves no prompts or resources).
type subscriptionFilter struct {
	ToolsListChanged bool `json:"toolsListChanged,omitempty"`
}

// serveListen answers subscriptions/listen with an SSE stream: first
// notifications/subscriptions/acknowledged naming the filter honoured, then
// notifications/tools/list_changed when the caller's tool list changes (if
// requested; RefreshTools and NotifyToolsChanged reach these streams as
// they reach GET streams), keep-alive comments, and, when the server ends
// the subscription (Close), the graceful-closure result. Every message
// carries the request id as io.modelcontextprotocol/subscriptionId. The
// stream is served by this replica until the client closes it.
func (t *Transport) serveListen(w http.ResponseWriter, r *http.Request, rq request) {
	p, m := rq.p, rq.m
	var in struct {
		Notifications *subscriptionFilter `json:"notifications"`
	}
	if err := decodeParams(m.Params, &in); err != nil || in.Notifications == nil {
		t.replyError(w, r, m.ID, errMetaInvalid(`subscriptions/listen needs params.notifications, an object such as {"toolsListChanged": true}`))
		return
	}
	if _, sseOK := acceptable(r.Header.Values("Accept")); !sseOK {
		t.replyError(w, r, m.ID, wire.ErrStatus(http.StatusNotAcceptable, gateway.EInvalid,
			"subscriptions/listen answers with an event stream; send Accept: application/json, text/event-stream"))
		return
	}
	subID := m.ID
	meta := map[string]json.RawMessage{metaSubscriptionID: subID}
	ack, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
		"params": map[string]any{"_meta": meta, "notifications": in.Notifications}})
	s := newSession("listen:"+newRequestID(), p, Version20260728, false, time.Now())
	s.notice, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
		"params": map[string]any{"_meta": meta}})
	ch, _ := s.openStream()
	if in.Notifications.ToolsListChanged {
		// The stream announces changes from now on: the caller's current
		// tools are the baseline (unknown when they cannot be listed, so
		// the first refresh notifies).
		if tools, err := t.opts.Handler.ListTools(gateway.WithRequestID(r.Context(), newRequestID()), p); err == nil {
			s.sawTools(toolSetHash(tools))
		}
		if !t.addListener(s) {
			t.replyError(w, r, m.ID, errClosed)
			return
		}
		defer t.removeListener(s)
	}
	hold, ok := t.holdStream(s.owner)
	if !ok {
		t.replyError(w, r, m.ID, errClosed)
		return
	}
	defer t.releaseStream(hold)
	rc := http.NewResponseController(w)
	t.writeDeadline(rc)
	startSSE(w)
	if writeEvent(w, rc, "message", ack) != nil {
		return
	}
	// Close, or a newer stream of the same credential past
	// MaxStreamsPerPrincipal, ends the subscription gracefully, with its
	// closing result.
	t.pump(w, r, rc, s, ch, hold.stop, func() []byte {
		res, _ := json.Marshal(map[string]any{"resultType": "complete", "_meta": meta})
		end, _ := json.Marshal(jsonrpc.Response{JSONRPC: "2.0", ID: subID, Result: json.RawMessage(res)})
		return end
	})
}

// addListener registers a subscriptions/listen stream for tool list
// changes; false once Close has begun.
func (t *Transport) addListener(s *session) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.listeners[s] = struct{}{}
	return true
}

func (t *Transport) removeListener(s *session) {
	t.mu.Lock()
	delete(t.listeners, s)
	t.mu.Unlock()
}

// inputRequiredResult is the InputRequiredResult of MCP 2026-07-28
// (basic/utilities/mrtr) of in: resultType "input_required", the
// upstream's inputRequests and requestState as it wrote them, and the
// server's identity in _meta.
func inputRequiredResult(in *gateway.InputRequired, serverInfo []byte) json.RawMessage {
	out := append(make([]byte, 0, 96+len(in.Requests)+len(in.State)+len(serverInfo)), `{"_meta":{"`+metaServerInfo+`":`...)
	out = append(append(out, serverInfo...), `},"resultType":"input_required"`...)
	if len(in.Requests) > 0 {
		out = append(append(out, `,"inputRequests":`...), in.Requests...)
	}
	if len(in.State) > 0 {
		out = append(append(out, `,"requestState":`...), in.State...)
	}
	return append(out, '}')
}

// isToolResult reports whether res is a complete tool result, whose
// modernResult is compact JSON with HTML characters escaped.
func isToolResult(res any) bool {
	tr, ok := res.(*gateway.ToolResult)
	return ok && tr != nil && tr.Input == nil
}
