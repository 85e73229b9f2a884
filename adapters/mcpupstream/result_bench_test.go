package mcpupstream

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMapResult measures the mapping of an upstream result with
// three text blocks and structured content.
func BenchmarkMapResult(b *testing.B) {
	res := &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: `{"a":1}`}, &mcp.TextContent{Text: "second"}, &mcp.TextContent{Text: "third"}},
		StructuredContent: map[string]any{"a": 1.0, "b": []any{"x", "y"}},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := mapResult(res); err != nil {
			b.Fatal(err)
		}
	}
}
