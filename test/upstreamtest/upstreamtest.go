// Package upstreamtest starts go-sdk MCP servers on loopback ports for the
// tests that bridge them into the gateway (MCPGATE_UPSTREAMS_FILE) and
// change their tools while it runs.
package upstreamtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Start serves a go-sdk MCP server (stateful Streamable HTTP, on a
// loopback httptest server) of the tools names, each described
// "Tool <name>." and answering "<name> ran" (SetTool). It returns the
// server, to change its tools while the gateway runs, and its endpoint
// URL (ending in /mcp). The server closes when the test ends; a gateway
// still connected to it must be closed first (registered later), as
// closing waits for the gateway's open stream to end.
func Start(t testing.TB, names ...string) (*mcp.Server, string) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "upstreamtest", Version: "1"}, nil)
	for _, n := range names {
		SetTool(s, n, "Tool "+n+".", false)
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return s, srv.URL + "/mcp"
}

// SetTool adds the tool name to s, or replaces its definition: described
// desc, an input schema of any object, the annotation readOnlyHint when
// readOnly (the server's claim), answering one text block "<name> ran".
// The server tells its connected clients (notifications/tools/list_changed).
func SetTool(s *mcp.Server, name, desc string, readOnly bool) {
	s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ran"}}}, nil
		})
}
