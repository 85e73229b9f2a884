package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// Test credentials: the bearer token selects a principal.
const (
	tokAlice = "tok-alice-secret"
	tokBob   = "tok-bob-secret"
	tokCoord = "scmt_coord-secret"
	tokDown  = "tok-store-down"
)

var principals = map[string]gateway.Principal{
	tokAlice: {Kind: gateway.PrincipalAgent, Subject: "user-a", WorkspaceID: "ws-1", TaskID: "task-1"},
	tokBob:   {Kind: gateway.PrincipalAgent, Subject: "user-b", WorkspaceID: "ws-1", TaskID: "task-2"},
	tokCoord: {Kind: gateway.PrincipalCoordinator, Subject: "token:fp1", WorkspaceID: "ws-1", TokenFingerprint: "fp1", Scopes: []string{"mcp:read"}},
}

// fakeAuth maps "Authorization: Bearer <token>" to principals.
type fakeAuth struct{}

func (fakeAuth) Authenticate(r *http.Request) (*gateway.Principal, error) {
	return mapAuth(principals).Authenticate(r)
}

// mapAuth is fakeAuth over a map of the test's own.
type mapAuth map[string]gateway.Principal

func (m mapAuth) Authenticate(r *http.Request) (*gateway.Principal, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if tok == tokDown {
		return nil, gateway.Wrap(gateway.EUnavailable, errors.New("db down"), "credential store unavailable; retry shortly")
	}
	p, known := m[tok]
	if !ok || !known {
		return nil, gateway.Errorf(gateway.EUnauthenticated, "missing or invalid bearer token; send Authorization: Bearer <token>")
	}
	return &p, nil
}

// fakeHandler serves nTools tools and a set of special tools whose names
// select a behaviour. It records what it was given.
type fakeHandler struct {
	nTools  int   // guarded by mu once the transport runs
	listErr error // ListTools fails with it when set

	mu         sync.Mutex
	calls      []*gateway.CallRequest
	requestIDs []string
	ctxErr     error
	started    chan struct{}   // closed-over signal for the "slow" tool
	slowCtx    context.Context // the context of the running "slow" call
	gates      map[string]chan struct{}
}

// gate returns the channel a "wait" call with {"gate": name} blocks on
// until the test closes it (release).
func (h *fakeHandler) gate(name string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gates == nil {
		h.gates = map[string]chan struct{}{}
	}
	if h.gates[name] == nil {
		h.gates[name] = make(chan struct{})
	}
	return h.gates[name]
}

// release lets the "wait" calls on gate name return; releasing a gate
// again does nothing.
func (h *fakeHandler) release(name string) {
	ch := h.gate(name)
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

func toolName(i int) string { return fmt.Sprintf("tool.%03d", i) }

func (h *fakeHandler) ListTools(ctx context.Context, p *gateway.Principal) ([]gateway.ListedTool, error) {
	h.record(ctx, nil)
	h.mu.Lock()
	n, failing := h.nTools, h.listErr
	h.mu.Unlock()
	if failing != nil {
		return nil, failing
	}
	tools := make([]gateway.ListedTool, n)
	for i := range tools {
		tools[i] = gateway.ListedTool{Name: toolName(i), Description: "fake tool", InputSchema: json.RawMessage(`{"type":"object"}`)}
	}
	return tools, nil
}

// setTools changes what ListTools returns.
func (h *fakeHandler) setTools(n int, err error) {
	h.mu.Lock()
	h.nTools, h.listErr = n, err
	h.mu.Unlock()
}

// listCalls is how many times ListTools ran.
func (h *fakeHandler) listCalls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.requestIDs) - len(h.calls)
}

func (h *fakeHandler) record(ctx context.Context, call *gateway.CallRequest) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requestIDs = append(h.requestIDs, gateway.RequestIDFrom(ctx))
	if call != nil {
		h.calls = append(h.calls, call)
	}
}

func (h *fakeHandler) lastCall() *gateway.CallRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.calls) == 0 {
		return nil
	}
	return h.calls[len(h.calls)-1]
}

// regionSchema is the inputSchema of the fake "region" tool: x-mcp-header
// on a string, an integer, a boolean and a nested string argument.
var regionSchema = json.RawMessage(`{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"count":{"type":"integer","x-mcp-header":"Count"},
	"dry":{"type":"boolean","x-mcp-header":"Dry-Run"},
	"place":{"type":"object","properties":{"zone":{"type":["string","null"],"x-mcp-header":"Zone"}}},
	"note":{"type":"string"}}}`)

var errBoom = errors.New("pq: connection refused to 10.0.0.7")

func (h *fakeHandler) CallTool(ctx context.Context, p *gateway.Principal, call *gateway.CallRequest) (*gateway.ToolResult, error) {
	h.record(ctx, call)
	if call.ArgumentsErr != nil {
		return nil, call.ArgumentsErr
	}
	switch call.Name {
	case "region": // a tool whose schema mirrors arguments into headers
		if err := wire.CheckParamHeaders(call, regionSchema); err != nil {
			return nil, err
		}
	case "deny":
		return nil, &gateway.Error{Code: gateway.EForbidden, Message: "tool deny needs grant supacloud.ops.*",
			DecisionID: "dec-1", Reasons: []gateway.Reason{{Code: "allowlist_missing", Message: "profile lacks supacloud.ops.*"}}}
	case "limit":
		return nil, &gateway.Error{Code: gateway.ERateLimited, Message: "Rate limit exceeded for tool 'limit'", Bucket: "task"}
	case "invalid":
		return nil, gateway.Errorf(gateway.EInvalid, "argument project_id of tool invalid is required")
	case "schema":
		return nil, &gateway.Error{Code: gateway.EInvalid, ToolInput: true, DecisionID: "dec-2",
			Message: "invalid arguments for tool schema: /project_id: missing required property"}
	case "unknown":
		return nil, gateway.Errorf(gateway.EMethodNotFound, "unknown tool %q", call.Name)
	case "needs_sampling": // refused as an upstream refuses a client without sampling (SEP-2575)
		return nil, &gateway.Error{Code: gateway.EMissingCapability, Message: "tool needs_sampling needs the client's sampling capability",
			RequiredCapabilities: json.RawMessage(`{"sampling":{}}`)}
	case "boom":
		return nil, fmt.Errorf("adapter: %w", errBoom)
	case "internal":
		return nil, gateway.Wrap(gateway.EInternal, errBoom, "policy evaluation failed; the call was not dispatched")
	case "upstream_down": // as a bridged upstream that refuses the connection answers
		msg := `upstream_down was not run: upstream "forge", which serves it, could not take the call (connection refused); try again later`
		return nil, &gateway.Error{Code: gateway.EUnavailable, Err: gateway.NotDispatched(errBoom), Message: msg, UpstreamFailure: true,
			Reasons: []gateway.Reason{{Code: "upstream.unreachable", Message: msg}}}
	case "unavailable_unmarked": // unavailable, but not an upstream's: stays a JSON-RPC error
		return nil, gateway.Wrap(gateway.EUnavailable, errBoom, "the audit store could not be reached; the call was not dispatched")
	case "panic":
		panic("handler bug")
	case "nan":
		return &gateway.ToolResult{Content: []map[string]any{{"type": "text", "text": "x"}}, StructuredContent: map[string]any{"v": math.NaN()}}, nil
	case "nil":
		return nil, nil
	case "structured":
		return &gateway.ToolResult{StructuredContent: map[string]any{"ok": true}}, nil
	case "elicit": // asks the client's user, as the approval step does
		el := wire.ElicitorFrom(ctx)
		if el == nil {
			return &gateway.ToolResult{Content: []map[string]any{{"type": "text", "text": "no elicitor"}}}, nil
		}
		res, err := el.Elicit(ctx, wire.ElicitRequest{Message: "approve?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"decision": map[string]any{"type": "string", "enum": []any{"approve", "reject"}}}}})
		if err != nil {
			return nil, err
		}
		d, _ := res.Content["decision"].(string)
		return &gateway.ToolResult{Content: []map[string]any{{"type": "text", "text": res.Action + " " + d}}}, nil
	case "relay": // reports what the call's relay carries
		out := map[string]any{}
		if r := wire.RelayFrom(ctx); r != nil {
			out["token"] = string(r.ProgressToken())
			if in, ok := r.(wire.InputRelay); ok {
				round := in.Round()
				out["responses"], out["state"], out["caps"] = string(round.Responses), string(round.State), string(round.Capabilities)
			}
		}
		text, _ := json.Marshal(out)
		return &gateway.ToolResult{Content: []map[string]any{{"type": "text", "text": string(text)}}}, nil
	case "wait":
		name, _ := call.Arguments["gate"].(string)
		select {
		case <-h.gate(name):
			return &gateway.ToolResult{Content: []map[string]any{{"type": "text", "text": "released " + name}}}, nil
		case <-ctx.Done():
			return nil, gateway.Errorf(gateway.EUnavailable, "cancelled while waiting for %s", name)
		}
	case "slow":
		h.mu.Lock()
		h.slowCtx = ctx
		h.mu.Unlock()
		if h.started != nil {
			close(h.started)
		}
		<-ctx.Done()
		h.mu.Lock()
		h.ctxErr = ctx.Err()
		h.mu.Unlock()
		return nil, gateway.Errorf(gateway.EUnavailable, "cancelled")
	}
	return &gateway.ToolResult{Content: []map[string]any{{"type": "text", "text": "called " + call.Name}},
		StructuredContent: map[string]any{"args": call.Arguments}}, nil
}

// env is a running transport behind an httptest server.
type env struct {
	t    *testing.T
	tr   *Transport
	h    *fakeHandler
	srv  *httptest.Server
	logs *observer.ObservedLogs
}

func newEnv(t *testing.T, mod func(*Options)) *env {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	h := &fakeHandler{nTools: 120}
	opts := Options{Authenticator: fakeAuth{}, Handler: h, Logger: zap.New(core),
		ServerName: "mcpgate-test", ServerVersion: "1.2.3", Instructions: "use tools wisely"}
	if mod != nil {
		mod(&opts)
	}
	tr, err := NewHandler(opts)
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	e := &env{t: t, tr: tr, h: h, logs: logs}
	e.srv = httptest.NewServer(tr)
	e.srv.Client().Timeout = 10 * time.Second       // a stream opened by mistake fails the test instead of hanging it
	t.Cleanup(func() { tr.Close(); e.srv.Close() }) // Close first: it ends open GET streams
	return e
}

// hdr builds request headers: token, session, version, accept.
type hdr struct {
	token, session, version, accept, origin, host string
}

func (e *env) do(method string, h hdr, body string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	if h.session != "" {
		req.Header.Set(headerSessionID, h.session)
	}
	if h.version != "" {
		req.Header.Set(headerProtocolVersion, h.version)
	}
	if h.accept != "-" {
		accept := h.accept
		if accept == "" {
			accept = "application/json, text/event-stream"
		}
		req.Header.Set("Accept", accept)
	}
	if h.origin != "" {
		req.Header.Set("Origin", h.origin)
	}
	if h.host != "" {
		req.Host = h.host
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// wireResp is a decoded JSON-RPC response.
type wireResp struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    wire.ErrorData `json:"data"`
	} `json:"error"`
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeResp(t *testing.T, b []byte) wireResp {
	t.Helper()
	var r wireResp
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("response %q is not a JSON-RPC response: %v", b, err)
	}
	return r
}

// initialize starts a session for token at version and returns its id.
func (e *env) initialize(token, version string) string {
	e.t.Helper()
	resp := e.do("POST", hdr{token: token}, initBody(version))
	body := readAll(e.t, resp)
	if resp.StatusCode != 200 {
		e.t.Fatalf("initialize: status %d: %s", resp.StatusCode, body)
	}
	id := resp.Header.Get(headerSessionID)
	if id == "" {
		e.t.Fatalf("initialize: no %s header", headerSessionID)
	}
	return id
}

func initBody(version string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, version)
}

// rpc sends one request in session s and returns the HTTP status and the
// decoded response.
func (e *env) rpc(h hdr, method, params string) (int, wireResp) {
	e.t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q`, method)
	if params != "" {
		body += `,"params":` + params
	}
	resp := e.do("POST", h, body+"}")
	b := readAll(e.t, resp)
	if len(bytes.TrimSpace(b)) == 0 {
		return resp.StatusCode, wireResp{}
	}
	return resp.StatusCode, decodeResp(e.t, b)
}

// errorLogs returns the messages logged at error level.
func (e *env) errorLogs() []observer.LoggedEntry {
	return e.logs.FilterLevelExact(zapcore.ErrorLevel).All()
}

// waitFor polls cond for up to 5 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// streamOpen reports whether the session has an open GET stream.
func (e *env) streamOpen(id string) bool {
	e.tr.mu.RLock()
	s := e.tr.sessions[id]
	e.tr.mu.RUnlock()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream != nil
}

func (e *env) listenerCount() int {
	e.tr.mu.RLock()
	defer e.tr.mu.RUnlock()
	return len(e.tr.listeners)
}

func (e *env) sessionCount() int {
	e.tr.mu.RLock()
	defer e.tr.mu.RUnlock()
	return len(e.tr.sessions)
}
