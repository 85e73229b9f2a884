package mcpupstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// With OnToolsChanged, the adapter keeps the session's GET stream open,
// hears the upstream's notifications/tools/list_changed on it, and ends
// the stream when it closes.
func TestOnToolsChangedListensOnTheGETStream(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "changing", Version: "1"}, nil)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	var streams atomic.Int32 // GET streams open now
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			streams.Add(1)
			defer streams.Add(-1)
		}
		sdk.ServeHTTP(w, r)
	}))
	defer srv.Close()
	heard := make(chan struct{}, 8)
	a, err := New(context.Background(), srv.URL, Options{OnToolsChanged: func() { heard <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the GET stream to open", func() bool { return streams.Load() == 1 })
	s.AddTool(&mcp.Tool{Name: "new", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	select {
	case <-heard:
	case <-time.After(20 * time.Second):
		t.Fatal("OnToolsChanged was not called after the upstream added a tool")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the GET stream to end after Close", func() bool { return streams.Load() == 0 })
}

// waitFor polls cond until it holds, failing after a generous bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
