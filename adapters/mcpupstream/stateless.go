package mcpupstream

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// The stateless protocol of MCP 2026-07-28 as the adapter speaks it to an
// upstream for a client that speaks it too (basic/utilities/mrtr): one
// tools/call per POST, no session, the client's inputResponses and
// requestState passed on, and an input-required result passed back.
const (
	statelessVersion       = "2026-07-28"
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	// codeUnsupportedProtocol is UnsupportedProtocolVersion of 2026-07-28.
	codeUnsupportedProtocol = -32022
)

// errNoStateless: the upstream does not take stateless calls; the call was
// not run and goes on the session instead.
var errNoStateless = errors.New("the upstream does not serve protocol 2026-07-28 statelessly")

// callStateless sends call as a stateless 2026-07-28 tools/call with the
// client's round and returns its result (an input-required result
// included). An upstream that answers UnsupportedProtocolVersion (a
// session-only server) is remembered, and errNoStateless returned so the
// call goes on the session; it ran nothing. Other errors as roundTrip's;
// the call is not repeated (the upstream may have run the tool).
func (a *Adapter) callStateless(ctx context.Context, call gateway.ToolCall, args []byte, relay wire.Relay, progress bool, round *wire.InputRound) ([]byte, error) {
	a.mu.Lock()
	closed := a.closed
	a.mu.Unlock()
	if closed {
		return nil, notDispatched(gateway.Errorf(gateway.EUnavailable,
			"upstream MCP adapter for %s is closed; restart the gateway", a.display))
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	s := &upSession{version: statelessVersion, tool: call.Tool, params: a.paramHeaders(call, args)}
	id := a.ids.Add(1)
	raw, _, err := a.exchange(ctx, s, id, callBody(id, call, args, progress, round, traceMeta(ctx)), relay)
	if err == nil {
		return raw, nil
	}
	err = a.scrub(err)
	var rpc *wire.RPCError
	if errors.As(err, &rpc) {
		if rpc.Code == codeUnsupportedProtocol {
			a.sessionOnly.Store(true)
			return nil, errNoStateless
		}
		return nil, a.rpcError("tools/call "+call.Tool, rpc, err)
	}
	if lerr := a.limitError("tools/call "+call.Tool, err); lerr != nil {
		return nil, lerr
	}
	if ctx.Err() != nil {
		return nil, a.timedOut(ctx, "tools/call "+call.Tool, err)
	}
	var st *errHTTPStatus
	if errors.As(err, &st) && st.status == http.StatusBadRequest {
		// A 400 without UnsupportedProtocolVersion: an upstream that
		// predates 2026-07-28 and refuses a POST without a session.
		a.sessionOnly.Store(true)
		return nil, errNoStateless
	}
	if neverDelivered(err) {
		return nil, notDispatched(a.unavailable(err))
	}
	return nil, a.unavailable(err)
}

// paramHeaders are the Mcp-Param-* headers of a stateless tools/call of
// call.Tool with args (MCP 2026-07-28, streamable-http, "Client
// Behavior"): for each x-mcp-header annotation of the tool's inputSchema
// as the upstream listed it (ListTools), the argument at its path encoded
// by the specification's rules, no header for an argument that is absent,
// null or not a string, integer or boolean. The upstream checks them
// against the body; the client's own headers are not passed on, since
// these are written from the very arguments sent.
func (a *Adapter) paramHeaders(call gateway.ToolCall, args json.RawMessage) [][2]string {
	known := a.annotations.Load()
	if known == nil || len((*known)[call.Tool]) == 0 {
		return nil
	}
	values := call.Arguments
	if values == nil { // a call built in Go with its bytes only
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		if dec.Decode(&values) != nil {
			return nil
		}
	}
	var out [][2]string
	for _, h := range (*known)[call.Tool] {
		v, ok := h.Argument(values)
		if !ok {
			continue
		}
		if enc, ok := wire.EncodeParamValue(v); ok {
			out = append(out, [2]string{h.Header(), enc})
		}
	}
	return out
}

// headerName is the Mcp-Name value of tool: itself when it is visible
// ASCII, else the =?base64?…?= form of MCP 2026-07-28 (streamable-http,
// "Value Encoding").
func headerName(tool string) string {
	for i := 0; i < len(tool); i++ {
		if c := tool[i]; c < 0x21 || c > 0x7e {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(tool)) + "?="
		}
	}
	return tool
}
