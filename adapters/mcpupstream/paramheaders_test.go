package mcpupstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// headerServer is a stateless Go SDK upstream (which checks Mcp-Param-*
// headers against the body) with a tool "where" mirroring region and
// count into headers, and a tool "bad" whose annotation sits under items,
// which a client must leave out. seen gets the Mcp-Param-Region header of
// every tools/call.
func headerServer(t *testing.T, seen *[]string, mu *sync.Mutex) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "regions", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "where", InputSchema: json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},"count":{"type":"integer","x-mcp-header":"Count"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest, args map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "in " + args["region"].(string)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "bad", InputSchema: json.RawMessage(`{"type":"object","properties":{
		"list":{"type":"array","items":{"type":"string","x-mcp-header":"Item"}}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tools/call" {
			mu.Lock()
			*seen = append(*seen, r.Header.Get("Mcp-Param-Region"))
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A stateless call carries the Mcp-Param-* headers of the tool's
// x-mcp-header annotations, written from the arguments sent (Base64 for a
// value that is not plain ASCII), which the upstream checks; a tool with
// an invalid annotation is left out of ListTools, with the reason.
func TestCallToolStatelessParamHeaders(t *testing.T) {
	var (
		seen []string
		mu   sync.Mutex
	)
	a, err := New(context.Background(), headerServer(t, &seen, &mu), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	listed, err := a.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].Name != "where" {
		t.Fatalf("ListTools = %+v, want only where", listed)
	}
	if why := a.Excluded()["bad"]; why == "" {
		t.Fatalf("Excluded = %v, want bad with its reason", a.Excluded())
	}
	for _, tc := range []struct {
		call   gateway.ToolCall
		header string
		text   string
	}{
		{gateway.ToolCall{Tool: "where", Arguments: map[string]any{"region": "us-west1", "count": json.Number("3")},
			RawArguments: json.RawMessage(`{"region":"us-west1","count":3}`)}, "us-west1", "in us-west1"},
		{gateway.ToolCall{Tool: "where", RawArguments: json.RawMessage(`{"region":"Zürich"}`)}, "=?base64?WsO8cmljaA==?=", "in Zürich"},
	} {
		r := &roundRelay{round: &wire.InputRound{Capabilities: json.RawMessage(`{}`)}}
		res, err := a.CallTool(wire.WithRelay(context.Background(), r), tc.call)
		if err != nil || len(res.Content) != 1 || res.Content[0]["text"] != tc.text {
			t.Fatalf("call %s: %+v, %v; want %q", tc.call.RawArguments, res, err, tc.text)
		}
		mu.Lock()
		got := seen[len(seen)-1]
		mu.Unlock()
		if got != tc.header {
			t.Errorf("Mcp-Param-Region = %q, want %q", got, tc.header)
		}
	}
	if a.sessionOnly.Load() {
		t.Error("the calls fell back to a session")
	}
}
