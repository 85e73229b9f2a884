package mcpupstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// hostileUpstream is an MCP server on loopback that answers the handshake
// plainly and every tools/call with reply, which writes what it likes on
// the call's response (id is the request's JSON-RPC id).
func hostileUpstream(t *testing.T, reply func(w http.ResponseWriter, id json.RawMessage)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusOK)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		switch m.Method {
		case "initialize":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "s1")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}}`, m.ID)
		case "tools/call":
			reply(w, m.ID)
		default: // notifications, and answers to relayed requests
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// sse starts an event stream on w.
func sse(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
}

// result writes the response to id that ends a call.
func result(w http.ResponseWriter, id json.RawMessage) {
	fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n\n", id)
}

// wantLimitError checks that a call past a bound ended with a tool
// execution error (an isError result) that names the upstream and the
// limit.
func wantLimitError(t *testing.T, url string, res *gateway.ToolResult, err error, limit string) {
	t.Helper()
	if err != nil {
		t.Fatalf("the call past the bound failed with %v; want a tool execution error", err)
	}
	if res == nil || !res.IsError || len(res.Content) != 1 {
		t.Fatalf("the call past the bound answered %+v; want a tool execution error naming the limit %s", res, limit)
	}
	msg, _ := res.Content[0]["text"].(string)
	if !strings.Contains(msg, gateway.DisplayURL(url)) || !strings.Contains(msg, limit) {
		t.Errorf("tool error %q does not name the upstream %s and the limit %s", msg, gateway.DisplayURL(url), limit)
	}
}

// Issue 22, item 3: readStream capped one data: line at 16 MiB but
// appended the lines of one event without a total bound (one call took
// the gateway from 59 MB to 1.47 GB); a reply's total bytes, its number
// of events and a JSON body were not bounded either (a JSON body was cut
// silently). Each bound now fails the call, naming the upstream and the
// limit.
func TestUpstreamSSEEventBounded(t *testing.T) {
	line := "data: " + strings.Repeat("x", 1<<20) + "\n"
	cases := []struct {
		name  string
		limit string
		set   func(*Adapter)
		reply func(w http.ResponseWriter, id json.RawMessage)
	}{
		{"one event of many lines", "16 MiB", nil, func(w http.ResponseWriter, id json.RawMessage) {
			sse(w)
			for range 17 {
				fmt.Fprint(w, line)
			}
			fmt.Fprint(w, "\n")
			result(w, id)
		}},
		{"total reply bytes", "1 MiB", func(a *Adapter) { a.limits.replyBytes = 1 << 20 }, func(w http.ResponseWriter, id json.RawMessage) {
			sse(w)
			for range 2000 {
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":%q}}\n\n", strings.Repeat("y", 1000))
			}
			result(w, id)
		}},
		{"number of events", "100 messages", func(a *Adapter) { a.limits.events = 100 }, func(w http.ResponseWriter, id json.RawMessage) {
			sse(w)
			for range 200 {
				fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"z\"}}\n\n")
			}
			result(w, id)
		}},
		{"JSON body", "16 MiB", nil, func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}]}}`, id, strings.Repeat("x", 17<<20))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := hostileUpstream(t, tc.reply)
			a := newAdapter(t, url, Options{})
			if tc.set != nil {
				tc.set(a)
			}
			ctx := wire.WithRelay(context.Background(), &fakeRelay{answer: func(string, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }})
			res, err := a.CallTool(ctx, gateway.ToolCall{WorkspaceID: "ws-a", Tool: "big"})
			wantLimitError(t, url, res, err, tc.limit)
		})
	}
}

// Issue 22, item 3: 3,000 elicitation requests in one upstream reply
// delayed the result 30 s, each relayed to the client. The requests one
// call relays to its client are bounded; past the bound the call fails.
func TestUpstreamElicitationsPerCallBounded(t *testing.T) {
	url := hostileUpstream(t, func(w http.ResponseWriter, id json.RawMessage) {
		sse(w)
		for i := range 3 * maxRelayedRequests {
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"e%d\",\"method\":\"elicitation/create\",\"params\":{\"message\":\"name?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}}}\n\n", i)
		}
		result(w, id)
	})
	a := newAdapter(t, url, Options{})
	var asked atomic.Int64
	relay := &fakeRelay{answer: func(string, json.RawMessage) (json.RawMessage, error) {
		asked.Add(1)
		return json.RawMessage(`{"action":"decline"}`), nil
	}}
	res, err := a.CallTool(wire.WithRelay(context.Background(), relay), gateway.ToolCall{WorkspaceID: "ws-a", Tool: "ask"})
	wantLimitError(t, url, res, err, fmt.Sprintf("%d requests", maxRelayedRequests))
	if n := asked.Load(); n > maxRelayedRequests {
		t.Errorf("the client was asked %d times; the bound is %d", n, maxRelayedRequests)
	}
}
