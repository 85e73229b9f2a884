package mcpupstream

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMapResult measures the decoding of an upstream result with
// three text blocks and structured content: "raw" from the wire bytes
// (decodeResult), "sdk" the mapping of the SDK's decoded result it
// replaced (mapResult; the SDK's own decoding not counted).
func BenchmarkMapResult(b *testing.B) {
	res := &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: `{"a":1}`}, &mcp.TextContent{Text: "second"}, &mcp.TextContent{Text: "third"}},
		StructuredContent: map[string]any{"a": 1.0, "b": []any{"x", "y"}},
	}
	raw, err := json.Marshal(res)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := mapResult(res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeResult(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
