package interop

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// simpleText is what the fixture's test_simple_text returns (conformance
// scenario tools-call-simple-text).
const simpleText = "This is a simple text response for testing."

// TestGoSDKClient drives the official Go SDK client (v1.8.0) with its
// default settings: it probes the 2026-07-28 stateless protocol with
// server/discover, which the gateway answers, and then speaks 2026-07-28:
// no initialize, no session, no DELETE.
func TestGoSDKClient(t *testing.T) {
	s := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	token := s.taskToken(t, upstreamProfile)
	cs, wire := connectGoSDK(ctx, t, s, s.gatewayURL, token)
	assertHandshake(t, wire, true)
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Errorf("protocol version %q, want 2026-07-28 after server/discover", v)
	}
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	for _, want := range []string{"test_simple_text", "test_error_handling", "json_schema_2020_12_tool"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s; got %v", want, names)
		}
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("tools/call test_simple_text: %v", err)
	}
	if text := firstText(res); text != simpleText || res.IsError {
		t.Errorf("test_simple_text = %q (isError %v), want %q", text, res.IsError, simpleText)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_error_handling", Arguments: map[string]any{}})
	if err != nil || !res.IsError || firstText(res) == "" {
		t.Errorf("test_error_handling: want a tool result with isError and a message, got %+v, %v", res, err)
	}
	closeGoSDK(t, s.gatewayURL, cs, token, wire)
}

// TestGoSDKClientDenial calls a tool the reader profile does not grant.
// The denial is a tool execution error, so the SDK returns it as a result
// (isError, the gateway's message verbatim as its text, the denial in
// _meta), not as an error, and the client goes on working (2026-07-28 has
// no ping: tools/list shows it).
func TestGoSDKClientDenial(t *testing.T) {
	s := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	token := s.taskToken(t, readerProfile)
	want := s.denial(t, token)
	cs, wire := connectGoSDK(ctx, t, s, s.gatewayURL, token)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("tools/call test_simple_text with the reader profile: %v; want a tool execution error, not an error", err)
	}
	t.Logf("the Go SDK shows the denial as: isError %v, text %q", res.IsError, firstText(res))
	if !res.IsError || len(res.Content) != 1 || firstText(res) != want.Text {
		t.Errorf("denial = isError %v, content %+v; want isError and the gateway's text %q verbatim", res.IsError, res.Content, want.Text)
	}
	if d, _ := res.Meta["io.mcpgate/denial"].(map[string]any); d["class"] != "Forbidden" || d["code"] != want.Denial.Code {
		t.Errorf("_meta = %v, want the denial with class Forbidden and code %s", res.Meta, want.Denial.Code)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list after the denial: %v", err)
	}
	for _, tool := range list.Tools {
		if tool.Name == "test_simple_text" {
			t.Errorf("the reader profile lists test_simple_text, which it may not call")
		}
	}
	closeGoSDK(t, s.gatewayURL, cs, token, wire)
}

// TestGoSDKClientCoordinator drives the Go SDK client, with its defaults,
// against /api/mcp with an scmt_ token (mcp:read and mcp:ops) created
// through the admin API: the same 2026-07-28 handshake, exactly the two
// levels listed, an allowed read, -32601 for a tool outside the scopes and
// for a deploy tool, and a policy denial as a tool execution error with
// the gateway's text verbatim.
func TestGoSDKClientCoordinator(t *testing.T) {
	s := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	c := s.coordinatorCase(t)
	cs, wire := connectGoSDK(ctx, t, s, c.endpoint, c.token)
	assertHandshake(t, wire, true)
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	c.checkTools(t, names)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "approvals.list", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("approvals.list: %v", err)
	}
	c.checkAllowed(t, res.IsError, firstText(res))
	for _, tool := range hiddenTools {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		var rpcErr *jsonrpc.Error
		shown := ""
		if err != nil {
			shown = err.Error()
		}
		c.checkHidden(t, tool, errors.As(err, &rpcErr) && rpcErr.Code == -32601, shown)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "approval.decide", Arguments: c.decideArgs()})
	if err != nil {
		t.Fatalf("approval.decide of a tool gate: %v; want a tool execution error, not an error", err)
	}
	t.Logf("the Go SDK shows the coordinator's denial as: isError %v, text %q", res.IsError, firstText(res))
	d, _ := res.Meta["io.mcpgate/denial"].(map[string]any)
	c.checkDenial(t, res.IsError, len(res.Content), firstText(res), d)
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list after the denial: %v", err)
	}
	closeGoSDK(t, c.endpoint, cs, c.token, wire)
}

// connectGoSDK connects to endpoint with the SDK's defaults; only the HTTP
// client is ours, to send the bearer token and record the exchanges.
func connectGoSDK(ctx context.Context, t *testing.T, s *stack, endpoint, token string) (*mcp.ClientSession, *wireLog) {
	t.Helper()
	httpClient, wire := bearer(token)
	client := mcp.NewClient(&mcp.Implementation{Name: "interop-go-sdk", Version: "1.0.0"}, nil)
	transport := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: httpClient}
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect: %v (wire: %v)\n%s", err, wire.all(), s.logs())
	}
	return cs, wire
}

// closeGoSDK closes the client. At 2026-07-28 there is no session: none
// may have been issued and no DELETE sent. At an older version the
// client's DELETE must leave the session id unknown (404).
func closeGoSDK(t *testing.T, endpoint string, cs *mcp.ClientSession, token string, wire *wireLog) {
	t.Helper()
	sid, version := cs.ID(), cs.InitializeResult().ProtocolVersion
	if version == "2026-07-28" {
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		assertStateless(t, wire, sid)
		return
	}
	defer assertDeleted(t, wire)
	if sid == "" {
		t.Fatal("the gateway issued no Mcp-Session-Id")
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if got := sessionStatus(t, endpoint, token, sid, version); got != http.StatusNotFound {
		t.Errorf("after Close, session %s answers HTTP %d; want 404 (the client's DELETE must end it)", sid, got)
	}
}

func firstText(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

// assertDenialMessage checks that a client shows the policy's reason: the
// tool and the grant it needs (policies/supacloud/allowlist.rego,
// missing_grant_message).
func assertDenialMessage(t *testing.T, msg string) {
	t.Helper()
	for _, want := range []string{"test_simple_text", "supacloud.ops.*"} {
		if !strings.Contains(msg, want) {
			t.Errorf("denial %q does not name %s", msg, want)
		}
	}
}
