package mcp

import (
	"net/http"
	"strings"
	"testing"
)

// TestDuplicateMemberNamesRefused: a member the gateway reads, named twice
// in the JSON-RPC envelope or in params, is refused (-32600 in the
// envelope, -32602 in params, docs/http.md) instead of the last one
// winning, at every protocol version; the handler never sees the call.
func TestDuplicateMemberNamesRefused(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20251125)
	h := hdr{token: tokAlice, session: sid, version: Version20251125}
	cases := []struct {
		note, body string
		code       int
	}{
		{"method twice", `{"jsonrpc":"2.0","id":3,"method":"tools/list","method":"tools/call","params":{"name":"tool.001","arguments":{}}}`, -32600},
		{"id twice", `{"jsonrpc":"2.0","id":3,"id":4,"method":"tools/call","params":{"name":"tool.001","arguments":{}}}`, -32600},
		{"jsonrpc twice", `{"jsonrpc":"1.0","jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool.001","arguments":{}}}`, -32600},
		{"params twice", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool.001"},"params":{"name":"tool.002"}}`, -32600},
		{"name twice", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool.001","name":"tool.002","arguments":{}}}`, -32602},
		{"escaped name twice", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool.001","n\u0061me":"tool.002","arguments":{}}}`, -32602},
		{"arguments twice", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool.001","arguments":{"a":1},"arguments":{}}}`, -32602},
	}
	for _, c := range cases {
		t.Run(c.note, func(t *testing.T) {
			resp := e.do("POST", h, c.body)
			b := readAll(t, resp)
			if resp.StatusCode == http.StatusOK && !strings.Contains(string(b), `"error"`) {
				t.Fatalf("accepted: %d %s", resp.StatusCode, b)
			}
			r := decodeResp(t, b)
			if r.Error == nil || r.Error.Code != c.code || !strings.Contains(r.Error.Message, "more than once") {
				t.Fatalf("got %d %s, want error %d naming the repeated member", resp.StatusCode, b, c.code)
			}
			if c.note != "id twice" && string(r.ID) != "3" {
				t.Fatalf("id %s, want the request's 3 echoed", r.ID)
			}
		})
	}
	e.h.mu.Lock()
	for _, call := range e.h.calls { // audited as malformed, never run
		if call.ArgumentsErr == nil || call.Name == "tool.002" {
			t.Errorf("the handler got %q to run (error %v)", call.Name, call.ArgumentsErr)
		}
	}
	e.h.mu.Unlock()
	// The same at 2026-07-28, where params are read in the modern pass.
	resp, r := e.modernPost("tools/call", `{"name":"tool.001","name":"tool.002","arguments":{},`+modernMeta+`}`,
		map[string]string{headerName: "tool.002"})
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "more than once") {
		t.Fatalf("2026-07-28 name twice: %d %+v", resp.StatusCode, r.Error)
	}
	resp, r = e.modernPost("tools/call", `{"name":"tool.001","arguments":{},`+modernMeta+`,`+modernMeta+`}`,
		map[string]string{headerName: "tool.001"})
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "more than once") {
		t.Fatalf("2026-07-28 _meta twice: %d %+v", resp.StatusCode, r.Error)
	}
	e.h.mu.Lock()
	for _, call := range e.h.calls { // audited as malformed, never run
		if call.ArgumentsErr == nil || call.Name == "tool.002" {
			t.Errorf("the handler got %q to run (error %v)", call.Name, call.ArgumentsErr)
		}
	}
	e.h.mu.Unlock()
}
