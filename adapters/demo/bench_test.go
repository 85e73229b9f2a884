package demo

import (
	"context"
	"fmt"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

// BenchmarkCallTool measures one read (run.list) in a warm workspace and
// the first touch of a new workspace (generation included).
func BenchmarkCallTool(b *testing.B) {
	ctx := context.Background()
	b.Run("run.list warm", func(b *testing.B) {
		be := New()
		for b.Loop() {
			if _, err := be.CallTool(ctx, gateway.ToolCall{WorkspaceID: "ws-a", Tool: "run.list"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("new workspace", func(b *testing.B) {
		be := New()
		i := 0
		for b.Loop() {
			i++
			if _, err := be.CallTool(ctx, gateway.ToolCall{WorkspaceID: fmt.Sprintf("ws-%d", i), Tool: "workspace.info"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
