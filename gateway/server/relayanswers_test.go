package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway/auth"
)

// elicitingUpstream is an upstream MCP server whose tool "ask" asks the
// client for a name (elicitation/create) and answers "<action> <name>".
func elicitingUpstream(t *testing.T) string {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "asker", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "ask", InputSchema: &jsonschema.Schema{Type: "object"}}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "your name?", RequestedSchema: &jsonschema.Schema{
			Type: "object", Properties: map[string]*jsonschema.Schema{"name": {Type: "string"}}}})
		if err != nil {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "elicitation: " + err.Error()}}}, nil
		}
		name, _ := res.Content["name"].(string)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: res.Action + " " + name}}}, nil
	})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// sseMessages reads the JSON-RPC messages of an event stream and sends
// each on the returned channel, closed at the stream's end.
func sseMessages(body io.Reader) <-chan map[string]any {
	out := make(chan map[string]any, 16)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m map[string]any
			if json.Unmarshal([]byte(data), &m) == nil {
				out <- m
			}
		}
	}()
	return out
}

// TestRelayedAnswerOnAnotherReplica: during a call held by replica A the
// upstream asks the client for input (elicitation/create, relayed on the
// call's event stream); the client's response is POSTed to replica B, as
// a load balancer may send it. B records it and A relays it upstream: the
// call completes with the answer long before its deadline. The same
// response from another credential is refused (the session is not found
// for it) and never reaches the call; a response to an id nobody waits
// for is dropped as on one replica.
func TestRelayedAnswerOnAnotherReplica(t *testing.T) {
	up := elicitingUpstream(t)
	rs := openReplicas(t, 2, func(_ int, vars map[string]string) {
		vars["MCPGATE_UPSTREAM_URL"] = up
		vars["MCPGATE_UPSTREAM_TIER"] = "read"
	})
	a, b := rs[0], rs[1]
	tok := a.agentToken(t)
	init := a.post(t, "/mcp", tok, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"replica-test","version":"1"}}}`)
	sid := init.Header.Get("Mcp-Session-Id")
	if init.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize on A: HTTP %d", init.StatusCode)
	}
	_ = a.post(t, "/mcp", tok, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	start := time.Now()
	call := a.post(t, "/mcp", tok, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	if ct := call.Header.Get("Content-Type"); call.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		b, _ := io.ReadAll(call.Body)
		t.Fatalf("tools/call on A: HTTP %d %s: %s", call.StatusCode, ct, b)
	}
	msgs := sseMessages(call.Body)
	next := func(within time.Duration) map[string]any {
		t.Helper()
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatal("the call's event stream ended early")
			}
			return m
		case <-time.After(within):
			t.Fatalf("nothing on the call's event stream within %v", within)
			return nil
		}
	}
	ask := next(5 * time.Second)
	if ask["method"] != "elicitation/create" {
		t.Fatalf("first message on the call's stream: %v, want elicitation/create", ask)
	}
	id, _ := json.Marshal(ask["id"])

	// Another credential (another task's token) cannot answer it.
	other, err := a.app.JWT.Issue(auth.AgentClaims{Subject: "u1", WorkspaceID: "ws-a", TaskID: "t2", ProfileID: "bot"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	forged := b.post(t, "/mcp", other, sid, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"action":"accept","content":{"name":"Mallory"}}}`)
	if forged.StatusCode != http.StatusNotFound {
		t.Errorf("a response from another credential: HTTP %d, want 404", forged.StatusCode)
	}
	// A response to an id nobody waits for is dropped, as on one replica.
	if r := b.post(t, "/mcp", tok, sid, `{"jsonrpc":"2.0","id":"mcpgate-unknown","result":{"action":"accept","content":{"name":"Nobody"}}}`); r.StatusCode != http.StatusAccepted {
		t.Errorf("a response to an unknown id: HTTP %d, want 202", r.StatusCode)
	}

	if r := b.post(t, "/mcp", tok, sid, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"action":"accept","content":{"name":"Ada"}}}`); r.StatusCode != http.StatusAccepted {
		t.Fatalf("the client's response on B: HTTP %d, want 202", r.StatusCode)
	}
	res := next(3 * time.Second)
	text, _ := json.Marshal(res["result"])
	if res["id"] != float64(2) || !strings.Contains(string(text), `"text":"accept Ada"`) {
		t.Fatalf("the call's result %v: want the answer given on B relayed upstream (accept Ada)", res)
	}
	t.Logf("the call completed %v after it started, its answer POSTed to the other replica", time.Since(start))
}
