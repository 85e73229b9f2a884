package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// modernPost sends one stateless request with the given extra headers
// ("-" as a value removes the default).
func (e *env) modernPost(method, params string, headers map[string]string) (*http.Response, wireResp) {
	e.t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":%q,"params":%s}`, method, params)
	req, _ := http.NewRequest("POST", e.srv.URL, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tokAlice)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(headerProtocolVersion, Version20260728)
	req.Header.Set(headerMethod, method)
	for k, v := range headers {
		req.Header.Del(k)
		if v != "-" {
			req.Header.Set(k, v)
		}
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	b := readAll(e.t, resp)
	var r wireResp
	_ = json.Unmarshal(b, &r)
	return resp, r
}

func TestModernDiscoverAndLists(t *testing.T) {
	e := newEnv(t, nil)
	resp, r := e.modernPost("server/discover", `{`+modernMeta+`}`, nil)
	if resp.StatusCode != 200 || r.Error != nil || resp.Header.Get(headerSessionID) != "" {
		t.Fatalf("discover: %d %+v, session %q", resp.StatusCode, r.Error, resp.Header.Get(headerSessionID))
	}
	var d struct {
		ResultType        string                     `json:"resultType"`
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      map[string]json.RawMessage `json:"capabilities"`
		Meta              map[string]implementation  `json:"_meta"`
		TTL               *int                       `json:"ttlMs"`
		Scope             string                     `json:"cacheScope"`
	}
	_ = json.Unmarshal(r.Result, &d)
	if d.ResultType != "complete" || d.SupportedVersions[0] != Version20260728 || d.Capabilities["tools"] == nil ||
		d.Meta[metaServerInfo].Name != "mcpgate-test" || d.TTL == nil || d.Scope != "public" {
		t.Fatalf("discover result %s", r.Result)
	}
	// tools/list: the caller's list, so private; every page.
	_, r = e.modernPost("tools/list", `{`+modernMeta+`}`, nil)
	var l struct {
		ResultType string `json:"resultType"`
		Tools      []Tool `json:"tools"`
		Next       string `json:"nextCursor"`
		TTL        *int   `json:"ttlMs"`
		Scope      string `json:"cacheScope"`
	}
	_ = json.Unmarshal(r.Result, &l)
	if l.ResultType != "complete" || len(l.Tools) != DefaultPageSize || l.TTL == nil || *l.TTL != 0 || l.Scope != "private" {
		t.Fatalf("tools/list result: %s", r.Result)
	}
	_, r = e.modernPost("tools/list", `{"cursor":"`+l.Next+`",`+modernMeta+`}`, nil)
	l.Scope = ""
	_ = json.Unmarshal(r.Result, &l)
	if len(l.Tools) != 20 || l.Scope != "private" {
		t.Fatalf("second page: %s", r.Result)
	}
	// tools/call: the handler's result, with resultType and serverInfo
	// beside its own _meta; Mcp-Name may be Base64.
	resp, r = e.modernPost("tools/call", `{"name":"echo","arguments":{"n":1},`+modernMeta+`}`,
		map[string]string{headerName: "=?base64?ZWNobw==?="})
	if resp.StatusCode != 200 || !strings.Contains(string(r.Result), `"resultType":"complete"`) || !strings.Contains(string(r.Result), "called echo") {
		t.Fatalf("tools/call: %d %s %+v", resp.StatusCode, r.Result, r.Error)
	}
	// A policy refusal is a tool execution error (200, a result with
	// isError), never a transport status; TestToolCallRefusals has the rest.
	resp, r = e.modernPost("tools/call", `{"name":"deny",`+modernMeta+`}`, map[string]string{headerName: "deny"})
	if resp.StatusCode != 200 || r.Error != nil || !strings.Contains(string(r.Result), `"isError":true`) || !strings.Contains(string(r.Result), "needs grant") {
		t.Fatalf("denied call: %d %s %+v", resp.StatusCode, r.Result, r.Error)
	}
}

func TestModernRequestValidation(t *testing.T) {
	e := newEnv(t, nil)
	call := `{"name":"echo",` + modernMeta + `}`
	tests := []struct {
		name, method, params string
		headers              map[string]string
		status, code         int
		want                 string
	}{
		{"method header mismatch", "tools/list", `{` + modernMeta + `}`, map[string]string{headerMethod: "prompts/list"}, 400, rpcHeaderMismatch, "Mcp-Method"},
		{"method header case", "tools/list", `{` + modernMeta + `}`, map[string]string{headerMethod: "TOOLS/LIST"}, 400, rpcHeaderMismatch, "Mcp-Method"},
		{"method header missing", "tools/list", `{` + modernMeta + `}`, map[string]string{headerMethod: "-"}, 400, rpcHeaderMismatch, "missing Mcp-Method"},
		{"name header mismatch", "tools/call", call, map[string]string{headerName: "other"}, 400, rpcHeaderMismatch, "Mcp-Name"},
		{"name header missing", "tools/call", call, nil, 400, rpcHeaderMismatch, "missing Mcp-Name"},
		{"name header bad base64", "tools/call", call, map[string]string{headerName: "=?base64?***?="}, 400, rpcHeaderMismatch, "Base64"},
		{"name header non-ASCII", "tools/call", call, map[string]string{headerName: "écho"}, 400, rpcHeaderMismatch, "invalid characters"},
		{"version header mismatch", "server/discover", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"v9","io.modelcontextprotocol/clientCapabilities":{}}}`, nil, 400, rpcHeaderMismatch, "MCP-Protocol-Version"},
		{"no _meta", "server/discover", `{}`, nil, 400, wire.RPCInvalidParams, "protocolVersion"},
		{"no capabilities", "server/discover", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, nil, 400, wire.RPCInvalidParams, "clientCapabilities"},
		{"unknown method", "prompts/list", `{` + modernMeta + `}`, nil, 404, wire.RPCMethodNotFound, "not served"},
		{"initialize is not stateless", "initialize", `{` + modernMeta + `}`, nil, 404, wire.RPCMethodNotFound, "not served"},
		{"ping was removed", "ping", `{` + modernMeta + `}`, nil, 404, wire.RPCMethodNotFound, "not served"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, r := e.modernPost(tc.method, tc.params, tc.headers)
			if resp.StatusCode != tc.status || r.Error == nil || r.Error.Code != tc.code || !strings.Contains(r.Error.Message, tc.want) || string(r.ID) != "9" {
				t.Fatalf("status %d, id %s, error %+v; want %d, id 9, code %d naming %q", resp.StatusCode, r.ID, r.Error, tc.status, tc.code, tc.want)
			}
		})
	}
	// An unknown version: UnsupportedProtocolVersion listing what is served.
	resp, r := e.modernPost("server/discover", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"v9","io.modelcontextprotocol/clientCapabilities":{}}}`,
		map[string]string{headerProtocolVersion: "v9"})
	if resp.StatusCode != 400 || r.Error == nil || r.Error.Code != rpcUnsupportedProtocol ||
		r.Error.Data.Requested != "v9" || len(r.Error.Data.Supported) != len(discoverVersions) {
		t.Fatalf("unknown version: %d %+v", resp.StatusCode, r.Error)
	}
	// The session-based versions keep working beside it.
	sid := e.initialize(tokAlice, Version20251125)
	if code, _ := e.rpc(hdr{token: tokAlice, session: sid}, "ping", ""); code != 200 {
		t.Fatalf("2025-11-25 session beside stateless requests: %d", code)
	}
}

// TestModernListen: subscriptions/listen acknowledges first, tags every
// message with the subscription id, gets tools/list_changed from
// RefreshTools only when asked for and only when the caller's tools differ
// from those at listen, and ends with the graceful-closure result on Close.
func TestModernListen(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.KeepAlive = time.Hour })
	open := func(filter string) (*bufio.Reader, func()) {
		body := `{"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{"notifications":` + filter + `,` + modernMeta + `}}`
		req, _ := http.NewRequest("POST", e.srv.URL, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tokAlice)
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(headerProtocolVersion, Version20260728)
		req.Header.Set(headerMethod, "subscriptions/listen")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("listen: %v %v", err, resp)
		}
		return bufio.NewReader(resp.Body), func() { resp.Body.Close() }
	}
	next := func(br *bufio.Reader) string {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return "EOF"
			}
			if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				return d
			}
		}
	}
	prompts, closePrompts := open(`{"promptsListChanged":true}`)
	defer closePrompts()
	if ack := next(prompts); !strings.Contains(ack, "notifications/subscriptions/acknowledged") || strings.Contains(ack, "promptsListChanged\":true") {
		t.Fatalf("prompts-only ack %s: prompts are not served, so not acknowledged", ack)
	}
	tools, closeTools := open(`{"toolsListChanged":true}`)
	defer closeTools()
	ack := next(tools)
	if !strings.Contains(ack, `"notifications/subscriptions/acknowledged"`) || !strings.Contains(ack, `"io.modelcontextprotocol/subscriptionId":"sub-1"`) || !strings.Contains(ack, `"toolsListChanged":true`) {
		t.Fatalf("ack %s", ack)
	}
	waitFor(t, "the listener", func() bool { return e.listenerCount() == 1 })
	if n := e.tr.refreshTools(func(*gateway.Principal) bool { return true }); n != 0 {
		t.Fatalf("refresh with the tools unchanged since listen notified %d streams", n)
	}
	e.h.setTools(3, nil)
	if n := e.tr.refreshTools(func(*gateway.Principal) bool { return true }); n != 1 {
		t.Fatalf("refresh notified %d streams, want the tools listener only", n)
	}
	if msg := next(tools); !strings.Contains(msg, `"notifications/tools/list_changed"`) || !strings.Contains(msg, `"io.modelcontextprotocol/subscriptionId":"sub-1"`) {
		t.Fatalf("change notification %s", msg)
	}
	if n := e.tr.refreshTools(func(*gateway.Principal) bool { return true }); n != 0 {
		t.Fatalf("unchanged tool set notified %d streams", n)
	}
	e.tr.Close()
	if end := next(tools); !strings.Contains(end, `"id":"sub-1"`) || !strings.Contains(end, `"resultType":"complete"`) {
		t.Fatalf("graceful closure %s", end)
	}
}

// TestModernCallRelay checks what a stateless tools/call hands its relay,
// read from the request in the one pass checkModern makes: the progress
// token as the client wrote it, the client capabilities, and a retry's
// inputResponses and requestState (only an object and a string).
func TestModernCallRelay(t *testing.T) {
	e := newEnv(t, nil)
	relayOf := func(params string) map[string]string {
		t.Helper()
		resp, r := e.modernPost("tools/call", params, map[string]string{headerName: "relay"})
		if resp.StatusCode != http.StatusOK || r.Error != nil {
			t.Fatalf("tools/call relay: HTTP %d, error %+v", resp.StatusCode, r.Error)
		}
		var res struct {
			Content []struct{ Text string } `json:"content"`
		}
		var out map[string]string
		if json.Unmarshal(r.Result, &res) != nil || len(res.Content) != 1 || json.Unmarshal([]byte(res.Content[0].Text), &out) != nil {
			t.Fatalf("tools/call relay: result %s", r.Result)
		}
		return out
	}
	const meta = `"_meta":{"progressToken":1.50,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/logLevel":"debug"}`
	got := relayOf(`{"name":"relay","arguments":{},"inputResponses":{"q1":{"action":"accept"}},"requestState":"st-1",` + meta + `}`)
	want := map[string]string{"token": "1.50", "caps": `{"elicitation":{"form":{}}}`, "responses": `{"q1":{"action":"accept"}}`, "state": `"st-1"`}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("relay %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	// A first attempt carries no round; members of the wrong kind are not
	// passed on; a null progress token is no token.
	got = relayOf(`{"name":"relay","requestState":7,"inputResponses":"x",` + strings.Replace(meta, `1.50`, `null`, 1) + `}`)
	if got["token"] != "" || got["responses"] != "" || got["state"] != "" {
		t.Errorf("relay of a call without a round = %v, want no token, responses or state", got)
	}
	// On a session the token is the client's too.
	sid := e.initialize(tokAlice, Version20251125)
	_, r := e.rpc(hdr{token: tokAlice, session: sid}, "tools/call", `{"name":"relay","_meta":{"progressToken":"p-1"}}`)
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if json.Unmarshal(r.Result, &res) != nil || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, `"token":"\"p-1\""`) {
		t.Errorf("session tools/call relay: %s", r.Result)
	}
}

// Item 3 of issue 30 (SEP-2575): a tools/call refused because the client
// did not declare a capability the tool needs is a
// MissingRequiredClientCapabilityError: -32021 at HTTP 400, with
// data.requiredCapabilities a ClientCapabilities object naming it.
func TestUndeclaredCapabilityWireError(t *testing.T) {
	e := newEnv(t, nil)
	resp, r := e.modernPost("tools/call", `{"name":"needs_sampling","arguments":{},`+modernMeta+`}`, map[string]string{headerName: "needs_sampling"})
	if resp.StatusCode != http.StatusBadRequest || r.Error == nil || r.Error.Code != -32021 || string(r.ID) != "9" {
		t.Fatalf("HTTP %d, id %s, error %+v; want 400 with -32021", resp.StatusCode, r.ID, r.Error)
	}
	var required map[string]json.RawMessage
	if json.Unmarshal(r.Error.Data.RequiredCapabilities, &required) != nil || string(required["sampling"]) != "{}" {
		t.Errorf("data.requiredCapabilities = %s, want {\"sampling\":{}}", r.Error.Data.RequiredCapabilities)
	}
}

// A stateless request of a method the endpoint does not serve is told to
// Options.RefusedMethod with its caller (the server records it as an
// audit event of kind method); a served one is not.
func TestModernRefusedMethodIsTold(t *testing.T) {
	var mu sync.Mutex
	var told []string
	e := newEnv(t, func(o *Options) {
		o.RefusedMethod = func(_ context.Context, p *gateway.Principal, method string) {
			mu.Lock()
			defer mu.Unlock()
			told = append(told, p.Subject+" "+method)
		}
	})
	if resp, _ := e.modernPost("prompts/list", `{`+modernMeta+`}`, nil); resp.StatusCode != 404 {
		t.Fatalf("prompts/list: %d, want 404", resp.StatusCode)
	}
	if resp, _ := e.modernPost("server/discover", `{`+modernMeta+`}`, nil); resp.StatusCode != 200 {
		t.Fatalf("server/discover: %d, want 200", resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 1 || told[0] != "user-a prompts/list" {
		t.Errorf("RefusedMethod heard %q, want the one refused request", told)
	}
}
