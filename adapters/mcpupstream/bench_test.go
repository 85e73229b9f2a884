package mcpupstream

import (
	"context"
	"net/http"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

// BenchmarkCallTool measures one forwarded tools/call round trip to an
// in-process go-sdk server over loopback HTTP: "raw" is the adapter's
// forwarder (on inlineTransport), "raw-transport" the same over net/http's
// Transport, "sdk" the Go SDK ClientSession it replaced (the baseline),
// in one run against the same upstream.
func BenchmarkCallTool(b *testing.B) {
	u := startUpstream(b)
	a, err := New(context.Background(), u.url(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	std, err := New(context.Background(), u.url(), Options{HTTPClient: &http.Client{Transport: keepAlive}})
	if err != nil {
		b.Fatal(err)
	}
	defer std.Close()
	call := gateway.ToolCall{WorkspaceID: "ws-a", TaskID: "t", Actor: "u", Tool: "echo", Arguments: map[string]any{"project_id": "prj-1"}}
	for _, f := range []struct {
		name string
		fw   interface {
			CallTool(context.Context, gateway.ToolCall) (*gateway.ToolResult, error)
		}
	}{{"sdk", newSDKForwarder(b, u.url())}, {"raw-transport", std}, {"raw", a}} {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.fw.CallTool(context.Background(), call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
