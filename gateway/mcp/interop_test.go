package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// bearer adds an Authorization header to every request of the SDK client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestInteropGoSDK drives the transport with the official Go SDK client
// (github.com/modelcontextprotocol/go-sdk v1.8.0) at every protocol version
// we support, and at the SDK's default, which probes with the 2026-07-28
// server/discover and then speaks 2026-07-28 statelessly (no session, no
// DELETE; list changes on subscriptions/listen).
func TestInteropGoSDK(t *testing.T) {
	tests := []struct{ name, pin, want string }{
		{"sdk default speaks 2026-07-28", "", Version20260728},
		{"2025-11-25", Version20251125, Version20251125},
		{"2025-06-18", Version20250618, Version20250618},
		{"2025-03-26", Version20250326, Version20250326},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			var deletes atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodDelete {
					deletes.Add(1)
				}
				e.tr.ServeHTTP(w, r)
			}))
			defer srv.Close()
			defer e.tr.Close() // runs first: ends the SDK's GET stream so srv.Close can return
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			changed := make(chan struct{}, 4)
			client := sdk.NewClient(&sdk.Implementation{Name: "interop", Version: "1"}, &sdk.ClientOptions{
				ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
			})
			hc := &http.Client{Transport: bearer{tokAlice, http.DefaultTransport}}
			cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc},
				&sdk.ClientSessionOptions{ProtocolVersion: tc.pin})
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != tc.want {
				t.Fatalf("negotiated %q, want %q", got, tc.want)
			}
			if got := cs.InitializeResult().ServerInfo.Name; got != "mcpgate-test" {
				t.Fatalf("serverInfo.name = %q", got)
			}

			stateless := tc.want == Version20260728
			interopList(ctx, t, cs)
			interopCall(ctx, t, cs, stateless)
			interopNotify(t, e, cs, changed, stateless)

			if err := cs.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			wantDeletes := int32(1)
			if stateless {
				wantDeletes = 0 // 2026-07-28 has no session to end
			}
			if deletes.Load() != wantDeletes || e.sessionCount() != 0 {
				t.Fatalf("after Close: %d DELETEs reached the server (want %d), %d sessions left", deletes.Load(), wantDeletes, e.sessionCount())
			}
		})
	}
}

func interopList(ctx context.Context, t *testing.T, cs *sdk.ClientSession) {
	t.Helper()
	first, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	if len(first.Tools) != DefaultPageSize || first.NextCursor == "" {
		t.Fatalf("first page: %d tools, nextCursor %q", len(first.Tools), first.NextCursor)
	}
	n := 0
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("Tools: %v", err)
		}
		if tool.Name != toolName(n) {
			t.Fatalf("tool %d = %s, want %s", n, tool.Name, toolName(n))
		}
		n++
	}
	if n != 120 {
		t.Fatalf("paginated listing returned %d tools, want 120", n)
	}
}

func interopCall(ctx context.Context, t *testing.T, cs *sdk.ClientSession, stateless bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"project": "p1"}})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	text, ok := res.Content[0].(*sdk.TextContent)
	if res.IsError || !ok || text.Text != "called echo" {
		t.Fatalf("CallTool result: %+v", res)
	}
	structured, _ := json.Marshal(res.StructuredContent)
	if string(structured) != `{"args":{"project":"p1"}}` {
		t.Fatalf("structuredContent = %s", structured)
	}

	// A handler error arrives as a JSON-RPC error with its code and data.
	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "invalid"})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != wire.RPCInvalidParams {
		t.Fatalf("invalid call: err = %v, want JSON-RPC error %d", err, wire.RPCInvalidParams)
	}
	var data wire.ErrorData
	if json.Unmarshal(werr.Data, &data) != nil || data.Class != "Invalid" || data.Status != 400 {
		t.Fatalf("error data = %s", werr.Data)
	}
	// A policy denial is a tool execution error (docs/http.md, Errors):
	// the SDK returns the result, isError set, our message verbatim as its
	// text and the denial in _meta.
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "deny"})
	if err != nil || !res.IsError || len(res.Content) != 1 {
		t.Fatalf("denied call: %+v, %v; want a result with isError", res, err)
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); !ok || tc.Text != "tool deny needs grant supacloud.ops.*" {
		t.Fatalf("denied call: content %+v, want the denial message verbatim", res.Content[0])
	}
	if d, ok := res.Meta[DenialMetaKey].(map[string]any); !ok || d["class"] != "Forbidden" || d["code"] != "allowlist_missing" {
		t.Fatalf("denied call: _meta %v, want %s with class Forbidden", res.Meta, DenialMetaKey)
	}
	// The session survives an error reply (2026-07-28 has no ping: a call).
	if stateless {
		if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo"}); err != nil {
			t.Fatalf("CallTool after an error: %v", err)
		}
	} else if err := cs.Ping(ctx, nil); err != nil {
		t.Fatalf("Ping after an error: %v", err)
	}
}

func interopNotify(t *testing.T, e *env, cs *sdk.ClientSession, changed <-chan struct{}, stateless bool) {
	t.Helper()
	if stateless {
		waitFor(t, "the SDK's subscriptions/listen stream", func() bool { return e.listenerCount() == 1 })
	} else {
		waitFor(t, "the SDK's GET stream", func() bool { return e.streamOpen(cs.ID()) })
	}
	e.tr.NotifyToolsChanged(func(p *gateway.Principal) bool { return p.Subject == "user-a" })
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("the SDK client did not receive notifications/tools/list_changed")
	}
}
