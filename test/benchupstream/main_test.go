package main

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEcho calls echo over Streamable HTTP with the Go SDK client, in both
// modes, and checks both forms of the reply.
func TestEcho(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		srv := httptest.NewServer(Handler(stateless))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		client := mcp.NewClient(&mcp.Implementation{Name: "benchupstream-test", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatalf("stateless=%v: connect: %v", stateless, err)
		}
		tools, err := cs.ListTools(ctx, nil)
		if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != ToolName {
			t.Errorf("stateless=%v: tools/list = %+v, %v; want the one tool %s", stateless, tools, err, ToolName)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolName, Arguments: map[string]any{"text": "hello"}})
		if err != nil {
			t.Fatalf("stateless=%v: tools/call: %v", stateless, err)
		}
		if res.IsError || len(res.Content) != 1 {
			t.Fatalf("stateless=%v: result %+v", stateless, res)
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "hello" {
			t.Errorf("stateless=%v: content %#v; want the text hello", stateless, res.Content[0])
		}
		if sc, ok := res.StructuredContent.(map[string]any); !ok || sc["text"] != "hello" {
			t.Errorf("stateless=%v: structuredContent %#v; want {text: hello}", stateless, res.StructuredContent)
		}
		_ = cs.Close()
		cancel()
		srv.Close()
	}
}
