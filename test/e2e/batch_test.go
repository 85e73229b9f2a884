package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// post sends body to the gateway's /mcp with token, session and version
// (each optional) and returns the status, the session header and the body.
func (g *gatewayUnderTest) post(t *testing.T, token, sid, version, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, g.srv.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// The batch limit of the environment reaches the transport, and a session
// opened with one agent profile is unknown to a token of the same user and
// task with another profile. The store plays no part: SQLite only.
func TestBatchLimitAndSessionBindingThroughTheWiring(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "sqlite:"+filepath.Join(t.TempDir(), "e2e.db"), map[string]string{"MCPGATE_MAX_BATCH_MESSAGES": "3"})
	seedFixtures(t, g)
	const version = "2025-03-26"
	owner := g.token(t, "ws-a", "mia", "task-ws-a", "operator")
	status, sid, body := g.post(t, owner, "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	if status != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`

	status, _, body = g.post(t, owner, sid, version, "["+strings.Repeat(ping+",", 3)+ping+"]")
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "more than 3 messages") || !strings.Contains(body, "MCPGATE_MAX_BATCH_MESSAGES") {
		t.Fatalf("batch of 4 with MCPGATE_MAX_BATCH_MESSAGES=3: %d %s, want 413 naming the limit", status, body)
	}
	status, _, body = g.post(t, owner, sid, version, "["+strings.Repeat(ping+",", 2)+ping+"]")
	var arr []json.RawMessage
	if status != 200 || json.Unmarshal([]byte(body), &arr) != nil || len(arr) != 3 {
		t.Fatalf("batch of 3: %d %s, want 200 and 3 responses", status, body)
	}

	reader := g.token(t, "ws-a", "mia", "task-ws-a", "reader")
	for _, b := range []string{ping, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`} {
		if status, _, body := g.post(t, reader, sid, version, b); status != 404 || !strings.Contains(body, "session not found") {
			t.Fatalf("%s with another profile's token: %d %s, want the 404 of an unknown session", b, status, body)
		}
	}
	if status, _, body := g.post(t, owner, sid, version, ping); status != 200 {
		t.Fatalf("the owner's session after the refused attempts: %d %s", status, body)
	}
}
