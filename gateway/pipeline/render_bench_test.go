package pipeline

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

// structured is a list result of the size the demo backend answers with.
func structured() map[string]any {
	items := make([]any, 20)
	for i := range items {
		items[i] = map[string]any{"id": fmt.Sprintf("app-%d", i), "name": "App", "status": "deployed", "builds": json.Number("12")}
	}
	return map[string]any{"apps": items, "count": json.Number("20")}
}

// BenchmarkStructuredResult measures what a structured result costs from
// the adapter to the reply bytes: obligations (the text block) and the
// encoding of the result.
func BenchmarkStructuredResult(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		res := &gateway.ToolResult{StructuredContent: structured()}
		applyObligations(res, gateway.Obligations{})
		if _, err := json.Marshal(res); err != nil {
			b.Fatal(err)
		}
	}
}
