package pipeline_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// relayBundle is allowBundle with the relay obligation the shipped policy
// gives every allowed call (every kind, the secret words of a form
// elicitation), so that the relay each transport builds per call is the
// one a real call gets.
var relayBundle = fstest.MapFS{"supacloud/decision.rego": {Data: []byte(`package supacloud

decision := {"allow": true, "visible": true, "obligations": {"relay": {
	"kinds": ["elicitation", "log", "progress", "roots", "sampling"],
	"secret_words": ["password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey", "privatekey", "credential", "otp"],
}}} if {
	input.member.role == "member"
	input.tool.tier in {"read", "ops"}
	input.arguments.workflow_id != ""
}

visible_tools := set()
`)}}

// fixedPrincipal authenticates every request as one agent task, so that
// the benchmarks below measure the transport and the pipeline, not the
// token check (the same on both protocols: it runs before the transport
// tells them apart).
type fixedPrincipal struct{ p *gateway.Principal }

func (f fixedPrincipal) Authenticate(*http.Request) (*gateway.Principal, error) { return f.p, nil }

// relayAdapter answers like structuredAdapter after using the call's
// relay as the upstream adapter does per call: the progress token and,
// for a stateless call, the client's round (an upstream that serves
// 2026-07-28 gets its capabilities).
type relayAdapter struct{ structuredAdapter }

func (a relayAdapter) CallTool(ctx context.Context, call gateway.ToolCall) (*gateway.ToolResult, error) {
	relay := wire.RelayFrom(ctx)
	if relay == nil {
		return nil, gateway.Errorf(gateway.EInternal, "no relay")
	}
	_ = relay.ProgressToken()
	if in, ok := relay.(wire.InputRelay); ok {
		if r := in.Round(); r != nil && len(r.Capabilities) == 0 {
			return nil, gateway.Errorf(gateway.EInternal, "a stateless round without capabilities")
		}
	}
	return a.structuredAdapter.CallTool(ctx, call)
}

// httpBenchSetup is the MCP endpoint as the server wires it (the
// transport over the pipeline: policy engine with its cache, catalog,
// schema, rate-limit plan, reservation, relay, obligations) on a store
// that costs nothing, with one session initialized at 2025-11-25.
func httpBenchSetup(b *testing.B) (http.Handler, string) {
	b.Helper()
	h := httpBenchHandler(b)
	return h, httpBenchSession(b, h)
}

// httpBenchSession initializes a 2025-11-25 session on h and returns its
// id.
func httpBenchSession(b *testing.B, h http.Handler) string {
	b.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench-client","version":"1.0.0"}}}`)))
	sid := rec.Header().Get("Mcp-Session-Id")
	if sid == "" {
		b.Fatalf("initialize failed: %s", rec.Body)
	}
	return sid
}

// httpBenchHandler is httpBenchSetup's endpoint, without a session.
func httpBenchHandler(b *testing.B) http.Handler {
	b.Helper()
	pl, p := benchPipeline(b, relayBundle, relayAdapter{})
	tr, err := mcp.NewHandler(mcp.Options{Authenticator: fixedPrincipal{p}, Handler: pl, ServerName: "mcpgate", ServerVersion: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(tr.Close)
	return tr
}

// The same tools/call at each protocol, as the Go SDK client (v1.8.0)
// sends it, members in its order:
// at 2025-11-25 in a session; at 2026-07-28 with the per-request _meta
// (protocol version, client identity, capabilities) and the standard
// headers instead.
const (
	httpSessionCall = `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"workflow.trigger","arguments":{"workflow_id":"wfl-1","inputs":{"date":"2026-11-30","count":3}}}}`
	httpModernCall  = `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"bench-client","version":"1.0.0"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},` +
		`"name":"workflow.trigger","arguments":{"workflow_id":"wfl-1","inputs":{"date":"2026-11-30","count":3}}}}`
)

// sessionHeaders and modernHeaders are what a client of each protocol
// sends beside the body of httpSessionCall and httpModernCall.
func sessionHeaders(sid string) map[string]string {
	return map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
}

var modernHeaders = map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "workflow.trigger"}

func httpCall(body string, header map[string]string) *http.Request {
	req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer t")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return req
}

// benchHTTP serves req() b.N times and checks each reply is a result that
// contains want.
func benchHTTP(b *testing.B, h http.Handler, req func() *http.Request, want string) {
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req())
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(want)) {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkHTTPToolsCallSession measures one allowed tools/call of a
// 2025-11-25 session through the MCP endpoint and the whole pipeline on a
// store that costs nothing. Compare it with BenchmarkHTTPToolsCallModern
// (go test -run '^$' -bench 'HTTPToolsCall' -benchmem ./gateway/pipeline/):
// the stateless protocol must cost no more per call than a session.
func BenchmarkHTTPToolsCallSession(b *testing.B) {
	h, sid := httpBenchSetup(b)
	hdr := sessionHeaders(sid)
	benchHTTP(b, h, func() *http.Request { return httpCall(httpSessionCall, hdr) }, `"run_id":"run-1"`)
}

// BenchmarkHTTPToolsCallModern is BenchmarkHTTPToolsCallSession at
// protocol 2026-07-28: no session, the headers checked against the body,
// the per-request _meta read, the result with the server's identity.
func BenchmarkHTTPToolsCallModern(b *testing.B) {
	h := httpBenchHandler(b)
	benchHTTP(b, h, func() *http.Request { return httpCall(httpModernCall, modernHeaders) }, `"resultType":"complete"`)
}

// benchHTTPParallel is benchHTTP from GOMAXPROCS goroutines, each
// serving the requests of its own client (newReq, called once per
// goroutine), as the concurrent clients of a load test do.
func benchHTTPParallel(b *testing.B, h http.Handler, newReq func() func() *http.Request, want string) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := newReq()
		for pb.Next() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req())
			if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(want)) {
				b.Errorf("status %d: %s", rec.Code, rec.Body)
				return
			}
		}
	})
}

// BenchmarkHTTPToolsCallSessionParallel is BenchmarkHTTPToolsCallSession
// from concurrent clients, a session each: compare it with
// BenchmarkHTTPToolsCallModernParallel.
func BenchmarkHTTPToolsCallSessionParallel(b *testing.B) {
	h := httpBenchHandler(b)
	// A session for each goroutine RunParallel starts (GOMAXPROCS),
	// initialized here: b.Fatal belongs to this goroutine.
	sids := make([]string, runtime.GOMAXPROCS(0))
	for i := range sids {
		sids[i] = httpBenchSession(b, h)
	}
	var next atomic.Int32
	benchHTTPParallel(b, h, func() func() *http.Request {
		hdr := sessionHeaders(sids[int(next.Add(1)-1)%len(sids)])
		return func() *http.Request { return httpCall(httpSessionCall, hdr) }
	}, `"run_id":"run-1"`)
}

// BenchmarkHTTPToolsCallModernParallel is BenchmarkHTTPToolsCallModern
// from concurrent clients.
func BenchmarkHTTPToolsCallModernParallel(b *testing.B) {
	h := httpBenchHandler(b)
	benchHTTPParallel(b, h, func() func() *http.Request {
		return func() *http.Request { return httpCall(httpModernCall, modernHeaders) }
	}, `"resultType":"complete"`)
}
