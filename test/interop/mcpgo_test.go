package interop

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestMCPGoClient drives the mcp-go client (v1.2.1) with its default
// settings: like the Go SDK it probes server/discover (2026-07-28) first,
// and then speaks 2026-07-28 (no session, so Close sends no DELETE).
func TestMCPGoClient(t *testing.T) {
	s := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	token := s.taskToken(t, upstreamProfile)
	c, wire := connectMCPGo(ctx, t, s, s.gatewayURL, token)
	assertHandshake(t, wire, true)
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "test_simple_text") {
		t.Errorf("tools/list lacks test_simple_text; got %v", names)
	}
	res, err := c.CallTool(ctx, callRequest("test_simple_text"))
	if err != nil {
		t.Fatalf("tools/call test_simple_text: %v", err)
	}
	if text := mcpGoText(res); text != simpleText || res.IsError {
		t.Errorf("test_simple_text = %q (isError %v), want %q", text, res.IsError, simpleText)
	}
	if v := c.ProtocolVersion(); v != "2026-07-28" {
		t.Errorf("protocol version %q, want 2026-07-28 after server/discover", v)
	}
	closeMCPGo(t, s.gatewayURL, c, token, wire)
}

// TestMCPGoClientDenial: the denial reaches mcp-go as a tool execution
// error (a result with isError, the gateway's message verbatim as its
// text, the denial in _meta), and the client goes on working.
func TestMCPGoClientDenial(t *testing.T) {
	s := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	token := s.taskToken(t, readerProfile)
	want := s.denial(t, token)
	c, wire := connectMCPGo(ctx, t, s, s.gatewayURL, token)
	res, err := c.CallTool(ctx, callRequest("test_simple_text"))
	if err != nil {
		t.Fatalf("tools/call test_simple_text with the reader profile: %v; want a tool execution error, not an error", err)
	}
	t.Logf("mcp-go shows the denial as: isError %v, text %q", res.IsError, mcpGoText(res))
	if !res.IsError || len(res.Content) != 1 || mcpGoText(res) != want.Text {
		t.Errorf("denial = isError %v, content %+v; want isError and the gateway's text %q verbatim", res.IsError, res.Content, want.Text)
	}
	var meta map[string]any
	if res.Meta != nil {
		meta = res.Meta.AdditionalFields
	}
	if d, _ := meta["io.mcpgate/denial"].(map[string]any); d["class"] != "Forbidden" || d["code"] != want.Denial.Code {
		t.Errorf("_meta = %v, want the denial with class Forbidden and code %s", meta, want.Denial.Code)
	}
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatalf("tools/list after the denial: %v", err)
	}
	closeMCPGo(t, s.gatewayURL, c, token, wire)
}

// TestMCPGoClientCoordinator: mcp-go, with its defaults, against /api/mcp
// with an scmt_ token (mcp:read and mcp:ops) created through the admin
// API: exactly the two levels listed, an allowed read, -32601 for a tool
// outside the scopes and for a deploy tool, and a policy denial as a tool
// execution error with the gateway's text verbatim.
func TestMCPGoClientCoordinator(t *testing.T) {
	s := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	cc := s.coordinatorCase(t)
	c, wire := connectMCPGo(ctx, t, s, cc.endpoint, cc.token)
	assertHandshake(t, wire, true)
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if list.NextCursor != "" {
		t.Errorf("tools/list of %d tools has a next page", len(names))
	}
	cc.checkTools(t, names)
	res, err := c.CallTool(ctx, callRequest("approvals.list"))
	if err != nil {
		t.Fatalf("approvals.list: %v", err)
	}
	cc.checkAllowed(t, res.IsError, mcpGoText(res))
	for _, tool := range hiddenTools {
		_, err := c.CallTool(ctx, callRequest(tool))
		shown := ""
		if err != nil {
			shown = err.Error()
		}
		cc.checkHidden(t, tool, errors.Is(err, mcp.ErrMethodNotFound), shown)
	}
	req := callRequest("approval.decide")
	req.Params.Arguments = cc.decideArgs()
	res, err = c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("approval.decide of a tool gate: %v; want a tool execution error, not an error", err)
	}
	t.Logf("mcp-go shows the coordinator's denial as: isError %v, text %q", res.IsError, mcpGoText(res))
	var d map[string]any
	if res.Meta != nil {
		d, _ = res.Meta.AdditionalFields["io.mcpgate/denial"].(map[string]any)
	}
	cc.checkDenial(t, res.IsError, len(res.Content), mcpGoText(res), d)
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatalf("tools/list after the denial: %v", err)
	}
	closeMCPGo(t, cc.endpoint, c, cc.token, wire)
}

// connectMCPGo connects to endpoint with mcp-go's defaults; the bearer
// token goes in through the HTTP client (see the package README for why
// not WithHTTPHeaders).
func connectMCPGo(ctx context.Context, t *testing.T, s *stack, endpoint, token string) (*client.Client, *wireLog) {
	t.Helper()
	httpClient, wire := bearer(token)
	c, err := client.NewStreamableHttpClient(endpoint, transport.WithHTTPBasicClient(httpClient))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "interop-mcp-go", Version: "1.0.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v (wire: %v)\n%s", err, wire.all(), s.logs())
	}
	return c, wire
}

func closeMCPGo(t *testing.T, endpoint string, c *client.Client, token string, wire *wireLog) {
	t.Helper()
	sid, version := c.GetSessionId(), c.ProtocolVersion()
	if version == "2026-07-28" {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		assertStateless(t, wire, sid)
		return
	}
	if sid == "" {
		t.Fatal("the gateway issued no Mcp-Session-Id")
	}
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	assertDeleted(t, wire)
	if got := sessionStatus(t, endpoint, token, sid, version); got != http.StatusNotFound {
		t.Errorf("after Close, session %s answers HTTP %d; want 404", sid, got)
	}
}

func callRequest(name string) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = map[string]any{}
	return req
}

func mcpGoText(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}
