package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// legacyEnv serves the Streamable HTTP endpoint at /mcp and the HTTP+SSE
// transport at /sse and /messages, from one Transport, as gateway/server does.
func legacyEnv(t *testing.T, mod func(*Options)) (*env, *httptest.Server) {
	t.Helper()
	e := newEnv(t, mod)
	mux := http.NewServeMux()
	mux.Handle("/mcp", e.tr)
	mux.Handle("/sse", e.tr.LegacyHandler("/messages"))
	mux.Handle("/messages", e.tr.LegacyHandler("/messages"))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { e.tr.Close(); srv.Close() }) // Close first: it ends open streams
	return e, srv
}

// sseEvent is one server-sent event.
type sseEvent struct{ name, data string }

// legacyStream is an open GET /sse stream read in the background.
type legacyStream struct {
	resp     *http.Response
	events   chan sseEvent
	endpoint string
}

func openLegacy(t *testing.T, srv *httptest.Server, token string) *legacyStream {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+"/sse", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET /sse: %d %s", resp.StatusCode, readAll(t, resp))
	}
	ls := &legacyStream{resp: resp, events: make(chan sseEvent, 100)}
	go func() {
		defer close(ls.events)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			case line == "" && ev.name != "":
				ls.events <- ev
				ev = sseEvent{}
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	first := ls.next(t)
	if first.name != "endpoint" || !strings.HasPrefix(first.data, "/messages?sessionId=") {
		t.Fatalf("first event = %+v, want the endpoint", first)
	}
	ls.endpoint = first.data
	return ls
}

func (ls *legacyStream) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-ls.events:
		if !ok {
			t.Fatal("the SSE stream ended")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event on the SSE stream within 5s")
	}
	return sseEvent{}
}

// post sends body to path with token and returns the status and body.
func post(t *testing.T, srv *httptest.Server, path, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(readAll(t, resp))
}

func TestLegacySSEStreamHeadersAndEndpoint(t *testing.T) {
	e, srv := legacyEnv(t, nil)
	ls := openLegacy(t, srv, tokAlice)
	h := ls.resp.Header
	if h.Get("Content-Type") != "text/event-stream" || h.Get("Cache-Control") != "no-cache, no-transform" || h.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("stream headers = %v", h)
	}
	if e.sessionCount() != 1 {
		t.Fatalf("%d sessions, want 1", e.sessionCount())
	}
	ls.resp.Body.Close()
	waitFor(t, "the session to end with its stream", func() bool { return e.sessionCount() == 0 })
}

func TestLegacySSEMessages(t *testing.T) {
	e, srv := legacyEnv(t, nil)
	ls := openLegacy(t, srv, tokAlice)
	tests := []struct {
		name, body string
		wantIn     string // substring of the message event
	}{
		{"initialize 2024-11-05", initBody(Version20241105), `"protocolVersion":"2024-11-05"`},
		{"initialized notification gets no event", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, ""},
		{"ping", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, `{"jsonrpc":"2.0","id":2,"result":{}}`},
		{"tools/list", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, `"name":"tool.000"`},
		{"tools/call", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}`, `"text":"called echo"`},
		{"denial is a tool execution error", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"deny"}}`, `"result":{"content":[{"type":"text","text":"tool deny needs grant supacloud.ops.*"}],"isError":true,"_meta":{"io.mcpgate/denial":{"class":"Forbidden","status":403,"code":"allowlist_missing"`},
		{"schema violation is -32602 at 2024-11-05", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"schema"}}`, `"error":{"code":-32602,"message":"invalid arguments for tool schema`},
		{"unknown method", `{"jsonrpc":"2.0","id":6,"method":"server/discover"}`, `"code":-32601`},
		{"second initialize", strings.Replace(initBody(Version20241105), `"id":1`, `"id":7`, 1), `already initialized`},
		{"batch answered one event per member", `[{"jsonrpc":"2.0","id":8,"method":"ping"},{"jsonrpc":"2.0","id":9,"method":"ping"}]`, `{"jsonrpc":"2.0","id":8,"result":{}}`}, // id 9: below
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, srv, ls.endpoint, tokAlice, tc.body)
			if code != 202 || body != "" {
				t.Fatalf("POST: %d %q, want 202 and no body", code, body)
			}
			if tc.wantIn == "" {
				return
			}
			ev := ls.next(t)
			if ev.name != "message" || !strings.Contains(ev.data, tc.wantIn) {
				t.Fatalf("event %+v, want a message containing %s", ev, tc.wantIn)
			}
		})
	}
	if ev := ls.next(t); ev.data != `{"jsonrpc":"2.0","id":9,"result":{}}` {
		t.Fatalf("event %+v, want the batch's second response as an event of its own", ev)
	}
	if c := e.h.lastCall(); c == nil || c.Name != "schema" {
		t.Fatalf("the handler did not see the calls: last %+v", c)
	}
}

func TestLegacySSEPostErrors(t *testing.T) {
	e, srv := legacyEnv(t, nil)
	alice := openLegacy(t, srv, tokAlice)
	streamable := e.initialize(tokAlice, Version20251125)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	tests := []struct {
		name, path, token, body string
		want                    int
		wantIn                  string
	}{
		{"no credentials", alice.endpoint, "", ping, 401, "Unauthenticated"},
		{"another principal's session", alice.endpoint, tokBob, ping, 404, "SSE session not found"},
		{"unknown session", "/messages?sessionId=nope", tokAlice, ping, 404, "SSE session not found"},
		{"a Streamable HTTP session id", "/messages?sessionId=" + streamable, tokAlice, ping, 404, "SSE session not found"},
		{"no session id", "/messages", tokAlice, ping, 400, "missing sessionId"},
		{"not JSON", alice.endpoint, tokAlice, `{"jsonrpc":`, 400, "-32700"},
		{"not JSON-RPC", alice.endpoint, tokAlice, `{"jsonrpc":"1.0","id":3,"method":"ping"}`, 400, `"id":3`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, srv, tc.path, tc.token, tc.body)
			if code != tc.want || !strings.Contains(body, tc.wantIn) || !strings.Contains(body, `"jsonrpc":"2.0"`) {
				t.Fatalf("POST: %d %s, want %d with a JSON-RPC error containing %q", code, body, tc.want, tc.wantIn)
			}
		})
	}
	t.Run("an SSE session id is unknown on /mcp", func(t *testing.T) {
		id := strings.TrimPrefix(alice.endpoint, "/messages?sessionId=")
		code, _ := e.rpc(hdr{token: tokAlice, session: id}, "ping", "")
		if code != 404 {
			t.Fatalf("status %d, want 404", code)
		}
	})
	t.Run("PUT is 405", func(t *testing.T) {
		req, _ := http.NewRequest("PUT", srv.URL+"/sse", nil)
		req.Header.Set("Authorization", "Bearer "+tokAlice)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, POST" {
			t.Fatalf("status %d Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
		}
	})
	t.Run("GET without credentials is 401", func(t *testing.T) {
		resp, err := srv.Client().Get(srv.URL + "/sse")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("status %d challenge %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	})
}

func TestLegacySSEGuard(t *testing.T) {
	_, srv := legacyEnv(t, func(o *Options) { o.AllowedHosts = []string{"127.0.0.1"} })
	req, _ := http.NewRequest("GET", srv.URL+"/sse", nil)
	req.Host = "evil.example.com"
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 403 || !strings.Contains(string(body), "DNS rebinding") {
		t.Fatalf("foreign Host on /sse: %d %s", resp.StatusCode, body)
	}
}

func TestLegacySSENotifications(t *testing.T) {
	e, srv := legacyEnv(t, nil)
	ls := openLegacy(t, srv, tokAlice)
	e.tr.NotifyToolsChanged(func(p *gateway.Principal) bool { return p.Subject == "user-a" })
	if ev := ls.next(t); ev.name != "message" || ev.data != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` {
		t.Fatalf("event %+v, want tools/list_changed", ev)
	}
}

// TestInteropGoSDKLegacySSE drives the HTTP+SSE transport with the Go SDK's
// SSEClientTransport (github.com/modelcontextprotocol/go-sdk v1.8.0), pinned
// to 2024-11-05 and at its default, which probes with server/discover first.
func TestInteropGoSDKLegacySSE(t *testing.T) {
	tests := []struct{ name, pin, want string }{
		{"2024-11-05", Version20241105, Version20241105},
		{"sdk default falls back to initialize", "", LatestVersion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, srv := legacyEnv(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			changed := make(chan struct{}, 4)
			client := sdk.NewClient(&sdk.Implementation{Name: "legacy", Version: "1"}, &sdk.ClientOptions{
				ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
			})
			hc := &http.Client{Transport: bearer{tokAlice, http.DefaultTransport}}
			cs, err := client.Connect(ctx, &sdk.SSEClientTransport{Endpoint: srv.URL + "/sse", HTTPClient: hc},
				&sdk.ClientSessionOptions{ProtocolVersion: tc.pin})
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != tc.want {
				t.Fatalf("negotiated %q, want %q", got, tc.want)
			}
			interopList(ctx, t, cs)
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"x": "y"}})
			if err != nil || res.IsError {
				t.Fatalf("CallTool: %v %+v", err, res)
			}
			_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "invalid"})
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != wire.RPCInvalidParams {
				t.Fatalf("invalid call: err = %v", err)
			}
			// The HTTP+SSE transport answers a schema violation with -32602
			// whatever the client negotiated, and a denial with a tool
			// execution error carrying the message verbatim.
			_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "schema"})
			if !errors.As(err, &werr) || werr.Code != wire.RPCInvalidParams || !strings.Contains(werr.Message, "/project_id") {
				t.Fatalf("schema violation: err = %v, want -32602 naming the field", err)
			}
			res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "deny"})
			if err != nil || !res.IsError || len(res.Content) != 1 {
				t.Fatalf("denied call: %+v, %v; want a result with isError", res, err)
			}
			if tc, ok := res.Content[0].(*sdk.TextContent); !ok || tc.Text != "tool deny needs grant supacloud.ops.*" {
				t.Fatalf("denied call: content %+v, want the denial message verbatim", res.Content[0])
			}
			e.tr.NotifyToolsChanged(func(*gateway.Principal) bool { return true })
			select {
			case <-changed:
			case <-time.After(5 * time.Second):
				t.Fatal("the SDK client did not receive notifications/tools/list_changed")
			}
			if err := cs.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			waitFor(t, "the session to end when the client closes", func() bool { return e.sessionCount() == 0 })
		})
	}
}

// TestLegacySSEConcurrentPosts sends more POSTs at once than a session runs
// in parallel; every response arrives once, on the stream.
func TestLegacySSEConcurrentPosts(t *testing.T) {
	_, srv := legacyEnv(t, nil)
	ls := openLegacy(t, srv, tokAlice)
	const n = 2*legacyInflight + 5
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo"}}`, i)
			if code, b := post(t, srv, ls.endpoint, tokAlice, body); code != 202 {
				t.Errorf("POST %d: %d %s", i, code, b)
			}
		}()
	}
	seen := map[string]bool{}
	for len(seen) < n {
		var r wireResp
		ev := ls.next(t)
		if err := json.Unmarshal([]byte(ev.data), &r); err != nil || r.Error != nil {
			t.Fatalf("event %+v", ev)
		}
		if seen[string(r.ID)] {
			t.Fatalf("response %s sent twice", r.ID)
		}
		seen[string(r.ID)] = true
	}
	wg.Wait()
}

// TestLegacySSECloseCancelsCalls: Close ends the stream and cancels calls
// still running for it, and waits for them.
func TestLegacySSECloseCancelsCalls(t *testing.T) {
	e, srv := legacyEnv(t, nil)
	e.h.started = make(chan struct{})
	ls := openLegacy(t, srv, tokAlice)
	if code, b := post(t, srv, ls.endpoint, tokAlice, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`); code != 202 {
		t.Fatalf("POST: %d %s", code, b)
	}
	<-e.h.started
	e.tr.Close()
	e.h.mu.Lock()
	err := e.h.ctxErr
	e.h.mu.Unlock()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the running call saw %v after Close, want context.Canceled", err)
	}
	if code, _ := post(t, srv, ls.endpoint, tokAlice, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); code != 503 {
		t.Fatalf("POST after Close: %d, want 503", code)
	}
}

// On the HTTP+SSE transport a batch over the limit is refused on the POST,
// naming the limit, and none of it runs or reaches the stream.
func TestLegacySSEBatchOverTheLimitIsRefused(t *testing.T) {
	e, srv := legacyEnv(t, nil)
	ls := openLegacy(t, srv, tokAlice)
	code, body := post(t, srv, ls.endpoint, tokAlice, batchOf(101, echoCall))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "at most 100") || !strings.Contains(body, "MCPGATE_MAX_BATCH_MESSAGES") {
		t.Fatalf("POST of a batch of 101: %d %s, want 413 naming the limit and MCPGATE_MAX_BATCH_MESSAGES", code, body)
	}
	if code, body := post(t, srv, ls.endpoint, tokAlice, `{"jsonrpc":"2.0","id":"after","method":"ping"}`); code != 202 {
		t.Fatalf("ping: %d %s", code, body)
	}
	if ev := ls.next(t); !strings.Contains(ev.data, `"id":"after"`) {
		t.Fatalf("next event %+v, want the ping's response: nothing of the refused batch", ev)
	}
	if c := e.h.lastCall(); c != nil {
		t.Fatalf("a member of the refused batch ran: %+v", c)
	}
}

// On the HTTP+SSE transport each member of a batch is sent as its own
// message event as soon as it finishes, not held for the last one.
func TestLegacySSEBatchSendsEachResponseWhenReady(t *testing.T) {
	e, srv := legacyEnv(t, nil)
	ls := openLegacy(t, srv, tokAlice)
	body := `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{"gate":"a"}}},` +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait","arguments":{"gate":"b"}}}]`
	if code, b := post(t, srv, ls.endpoint, tokAlice, body); code != 202 {
		t.Fatalf("POST: %d %s", code, b)
	}
	e.h.release("a")
	first := make(chan sseEvent, 1)
	go func() {
		select {
		case ev := <-ls.events:
			first <- ev
		case <-time.After(5 * time.Second):
			close(first)
		}
	}()
	ev, ok := <-first
	e.h.release("b")
	if !ok {
		t.Fatal("member 1 finished but no event arrived while member 2 runs")
	}
	if r := decodeResp(t, []byte(ev.data)); string(r.ID) != "1" || r.Error != nil {
		t.Fatalf("first event %+v, want member 1's result alone", ev)
	}
	if ev := ls.next(t); !strings.Contains(ev.data, `"id":2`) || strings.HasPrefix(ev.data, "[") {
		t.Fatalf("second event %+v, want member 2's result alone", ev)
	}
}
