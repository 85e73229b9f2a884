package mcpupstream

import (
	"context"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

// BenchmarkCallTool measures one forwarded tools/call round trip to an
// in-process go-sdk server over loopback HTTP.
func BenchmarkCallTool(b *testing.B) {
	u := startUpstream(b)
	a, err := New(context.Background(), u.url(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	call := gateway.ToolCall{WorkspaceID: "ws-a", TaskID: "t", Actor: "u", Tool: "echo", Arguments: map[string]any{"project_id": "prj-1"}}
	for b.Loop() {
		if _, err := a.CallTool(context.Background(), call); err != nil {
			b.Fatal(err)
		}
	}
}
