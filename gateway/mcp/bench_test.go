package mcp

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

// noopHandler answers every call with a fixed result, so a benchmark
// measures only the transport.
type noopHandler struct{}

var noopResult = &gateway.ToolResult{Content: []map[string]any{{"type": "text", "text": "ok"}}}

func (noopHandler) ListTools(context.Context, *gateway.Principal) ([]gateway.ListedTool, error) {
	return nil, nil
}
func (noopHandler) CallTool(context.Context, *gateway.Principal, *gateway.CallRequest) (*gateway.ToolResult, error) {
	return noopResult, nil
}

const benchCall = `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"project.get","arguments":{"project_id":"p-123","include":["env","budget"],"limit":10}}}`

// benchSetup returns a transport with one initialized session.
func benchSetup(b *testing.B) (*Transport, string) {
	b.Helper()
	tr, err := NewHandler(Options{Authenticator: fakeAuth{}, Handler: noopHandler{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(tr.Close)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/mcp", strings.NewReader(initBody(Version20251125)))
	req.Header.Set("Authorization", "Bearer "+tokAlice)
	tr.ServeHTTP(rec, req)
	sid := rec.Header().Get(headerSessionID)
	if sid == "" {
		b.Fatalf("initialize failed: %s", rec.Body)
	}
	return tr, sid
}

func benchRequest(sid string) *http.Request {
	req := httptest.NewRequest("POST", "/mcp", strings.NewReader(benchCall))
	req.Header.Set("Authorization", "Bearer "+tokAlice)
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(headerSessionID, sid)
	req.Header.Set(headerProtocolVersion, Version20251125)
	return req
}

// BenchmarkToolsCall measures the transport's overhead for one tools/call
// (authenticate with a map lookup, parse, session check, dispatch to a no-op
// handler, encode, write JSON), in process, without network.
func BenchmarkToolsCall(b *testing.B) {
	tr, sid := benchSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		tr.ServeHTTP(rec, benchRequest(sid))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkToolsCallParallel is BenchmarkToolsCall from GOMAXPROCS
// goroutines sharing one session, to show lock contention.
func BenchmarkToolsCallParallel(b *testing.B) {
	tr, sid := benchSetup(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec := httptest.NewRecorder()
			tr.ServeHTTP(rec, benchRequest(sid))
			if rec.Code != http.StatusOK {
				b.Errorf("status %d", rec.Code)
				return
			}
		}
	})
}

// benchModernCall is benchCall at 2026-07-28: the same tools/call, carrying
// the protocol version, client identity and client capabilities in _meta
// instead of a session, as a real client sends them (MCP 2026-07-28,
// basic/index, "Per-request protocol fields": clientInfo SHOULD be on
// every request).
const benchModernCall = `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"project.get","arguments":{"project_id":"p-123","include":["env","budget"],"limit":10},` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench-client","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`

func benchModernRequest() *http.Request {
	req := httptest.NewRequest("POST", "/mcp", strings.NewReader(benchModernCall))
	req.Header.Set("Authorization", "Bearer "+tokAlice)
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(headerProtocolVersion, Version20260728)
	req.Header.Set(headerMethod, "tools/call")
	req.Header.Set(headerName, "project.get")
	return req
}

// BenchmarkToolsCallModern is BenchmarkToolsCall over the stateless
// 2026-07-28 protocol: no session to look up, but the Mcp-Method and
// Mcp-Name headers checked against the body and the _meta read. Compare
// the two (go test -run '^$' -bench 'ToolsCall(Modern)?$' -benchmem): the
// stateless path must cost no more per call than the session path.
func BenchmarkToolsCallModern(b *testing.B) {
	tr, _ := benchSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		tr.ServeHTTP(rec, benchModernRequest())
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"resultType":"complete"`)) {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}
