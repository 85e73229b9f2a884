package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway"
)

// streamWatch wraps the gateway so a test knows when the Go SDK's
// notification stream is registered: the standalone GET stream of a
// session, or, at 2026-07-28 (the SDK's default), the response stream of
// subscriptions/listen. The transport registers either before it writes
// the 200, so that WriteHeader means notifications can reach it.
type streamWatch struct {
	next   http.Handler
	opened chan struct{}
}

func (sw *streamWatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	get := r.Method == http.MethodGet
	listen := r.Method == http.MethodPost && r.Header.Get("Mcp-Method") == "subscriptions/listen"
	if (get || listen) && r.URL.Path == "/mcp" {
		w = &headerSignal{ResponseWriter: w, opened: sw.opened}
	}
	sw.next.ServeHTTP(w, r)
}

type headerSignal struct {
	http.ResponseWriter
	opened chan struct{}
}

func (h *headerSignal) WriteHeader(code int) {
	if code == http.StatusOK {
		h.opened <- struct{}{}
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *headerSignal) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// notified is a Go SDK client session with its tools/list_changed signal.
type notified struct {
	cs      *mcp.ClientSession
	changed chan struct{}
}

// connectStreaming connects the Go SDK client with its default settings
// (2026-07-28 after server/discover, so subscriptions/listen) and waits
// until its notification stream is open.
func connectStreaming(t *testing.T, url string, opened chan struct{}, token string) *notified {
	t.Helper()
	n := &notified{changed: make(chan struct{}, 8)}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-notify", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { n.changed <- struct{}{} },
	})
	tr := &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	n.cs = cs
	select {
	case <-opened:
	case <-time.After(5 * time.Second):
		t.Fatal("the Go SDK client did not open its GET or subscriptions/listen stream")
	}
	return n
}

// wait reports whether a tools/list_changed arrives within d.
func (n *notified) wait(d time.Duration) bool {
	select {
	case <-n.changed:
		return true
	case <-time.After(d):
		return false
	}
}

// adminPUT sends one admin API change.
func adminPUT(t *testing.T, url, path, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url+"/admin/v1"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer e2e-admin-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		t.Fatalf("PUT %s: %d %s", path, resp.StatusCode, b.String())
	}
}

// TestToolListChangedOnAdminChange: a change through the admin API reaches
// open MCP streams as notifications/tools/list_changed exactly when it
// changes that session's visible tools, and a new tools/list shows it.
func TestToolListChangedOnAdminChange(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, dbURL(t), nil)
			sw := &streamWatch{next: g.app.Server, opened: make(chan struct{}, 8)}
			srv := httptest.NewServer(sw)
			t.Cleanup(srv.Close) // after the sessions' cleanups, which end their streams
			s, ctx := g.app.Store, context.Background()
			for _, ws := range []string{"ws-n", "ws-other"} {
				must(t, s.PutWorkspace(ctx, &gateway.Workspace{ID: ws, Name: ws, Slug: ws, OrgPlan: "team"}))
				must(t, s.PutTask(ctx, &gateway.Task{WorkspaceID: ws, ID: "task-1", Status: gateway.TaskRunning}))
				must(t, s.PutMember(ctx, &gateway.Member{WorkspaceID: ws, UserID: "alice", Role: "owner", SeatType: "developer"}))
				must(t, s.PutProfile(ctx, &gateway.Profile{WorkspaceID: ws, ID: "bot", Name: "bot", Allowlist: []string{"supacloud.read.*"}}))
			}
			withProfile := connectStreaming(t, srv.URL, sw.opened, g.token(t, "ws-n", "alice", "task-1", "bot"))
			withDefault := connectStreaming(t, srv.URL, sw.opened, g.token(t, "ws-n", "alice", "task-1", ""))
			other := connectStreaming(t, srv.URL, sw.opened, g.token(t, "ws-other", "alice", "task-1", "bot"))
			for _, n := range []*notified{withProfile, withDefault, other} {
				if listed(t, n.cs)["schedule.pause"] {
					t.Fatal("schedule.pause listed before the grant")
				}
			}

			// Renaming the profile changes nothing visible: no notification.
			adminPUT(t, srv.URL, "/workspaces/ws-n/profiles/bot", `{"name":"renamed bot","allowlist":["supacloud.read.*"]}`)
			if withProfile.wait(500 * time.Millisecond) {
				t.Fatal("notified although the visible tools did not change")
			}

			// Granting ops to the profile changes its session's tools only.
			adminPUT(t, srv.URL, "/workspaces/ws-n/profiles/bot", `{"name":"bot","allowlist":["supacloud.read.*","supacloud.ops.*"]}`)
			if !withProfile.wait(5 * time.Second) {
				t.Fatal("the profile's session was not notified")
			}
			if !listed(t, withProfile.cs)["schedule.pause"] {
				t.Fatal("tools/list after the notification lacks schedule.pause")
			}
			if withDefault.wait(300*time.Millisecond) || other.wait(300*time.Millisecond) {
				t.Fatal("a session whose tools did not change was notified")
			}

			// Making it the default profile changes the profile-less session.
			adminPUT(t, srv.URL, "/workspaces/ws-n/default-profile", `{"profile_id":"bot"}`)
			if !withDefault.wait(5 * time.Second) {
				t.Fatal("the session on the default profile was not notified")
			}
			if !listed(t, withDefault.cs)["schedule.pause"] {
				t.Fatal("tools/list of the default-profile session lacks schedule.pause")
			}
			if other.wait(300 * time.Millisecond) {
				t.Fatal("a session of another workspace was notified")
			}
		})
	}
}

// TestLegacySSEThroughPolicy runs the 2024-11-05 HTTP+SSE transport of the
// real gateway with the Go SDK's SSE client: same authentication, same
// policy decision, same audit row as Streamable HTTP.
func TestLegacySSEThroughPolicy(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "sqlite:"+t.TempDir()+"/sse.db", nil)
	s, ctx := g.app.Store, context.Background()
	must(t, s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-s", Name: "ws-s", Slug: "ws-s", OrgPlan: "team"}))
	must(t, s.PutTask(ctx, &gateway.Task{WorkspaceID: "ws-s", ID: "task-1", Status: gateway.TaskRunning}))
	must(t, s.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-s", UserID: "alice", Role: "owner", SeatType: "developer"}))
	must(t, s.PutProfile(ctx, &gateway.Profile{WorkspaceID: "ws-s", ID: "reader", Name: "reader", Allowlist: []string{"supacloud.read.*"}}))

	hc := &http.Client{Transport: bearer{token: g.token(t, "ws-s", "alice", "task-1", "reader"), next: http.DefaultTransport}}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-sse", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cs, err := client.Connect(cctx, &mcp.SSEClientTransport{Endpoint: g.srv.URL + "/sse", HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: "2024-11-05"})
	if err != nil {
		t.Fatalf("connect over SSE: %v", err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2024-11-05" {
		t.Fatalf("negotiated %s", v)
	}
	tools := listed(t, cs)
	if !tools["projects.list"] || tools["schedule.pause"] {
		t.Fatalf("tools over SSE do not follow the profile: %v", tools)
	}
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "projects.list", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("allowed call over SSE: %v %+v", err, res)
	}
	if ev := g.lastAudit(t, "ws-s", "task-1", "projects.list"); ev.Status != gateway.AuditAllowed {
		t.Fatalf("audit row of the SSE call: %+v", ev)
	}
	// 2024-11-05 had isError: the denial is a tool execution error there too.
	res, err = cs.CallTool(cctx, &mcp.CallToolParams{Name: "schedule.pause", Arguments: map[string]any{"schedule_id": "s-1"}})
	if err != nil || !res.IsError || !strings.Contains(textOf(res), "schedule.pause") {
		t.Fatalf("a call outside the profile over SSE: %v %+v, want a tool execution error naming the tool", err, res)
	}
	if ev := g.lastAudit(t, "ws-s", "task-1", "schedule.pause"); ev.Status != gateway.AuditDenied {
		t.Fatalf("audit row of the denied SSE call: %+v", ev)
	}

	resp, err := http.Get(g.srv.URL + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /sse without a token: %d, want 401", resp.StatusCode)
	}
}

// TestHTTPSurface checks the browser- and OAuth-facing parts of the real
// wiring: resource metadata, the 401 challenge, Host and Origin checks, and
// CORS preflight.
func TestHTTPSurface(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "sqlite:"+t.TempDir()+"/http.db", map[string]string{
		"MCPGATE_AUTHORIZATION_SERVERS": "https://auth.example.com",
		"MCPGATE_ALLOWED_ORIGINS":       "https://app.example.com",
	})
	const base = "http://127.0.0.1:8080" // the default public URL of the default listen address
	tok := g.token(t, "ws-h", "alice", "task-1", "")
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`
	tests := []struct {
		name, method, path, host, origin, body string
		header                                 map[string]string
		want                                   int
		wantHeader                             map[string]string
		wantBody                               string
	}{
		{name: "root metadata", method: "GET", path: "/.well-known/oauth-protected-resource", want: 200,
			wantBody: `{"resource":"` + base + `","authorization_servers":["https://auth.example.com"],"bearer_methods_supported":["header"],"resource_name":"mcpgate"}`},
		{name: "path-inserted metadata for /mcp", method: "GET", path: "/.well-known/oauth-protected-resource/mcp", want: 200,
			wantBody: `{"resource":"` + base + `/mcp","authorization_servers":["https://auth.example.com"],"bearer_methods_supported":["header"],"resource_name":"mcpgate"}`},
		{name: "401 names the metadata", method: "POST", path: "/mcp", body: init, want: 401,
			wantHeader: map[string]string{"WWW-Authenticate": `Bearer realm="mcpgate", resource_metadata="` + base + `/.well-known/oauth-protected-resource"`}},
		{name: "401 on /sse names the metadata", method: "GET", path: "/sse", want: 401,
			wantHeader: map[string]string{"WWW-Authenticate": `Bearer realm="mcpgate", resource_metadata="` + base + `/.well-known/oauth-protected-resource"`}},
		{name: "foreign Host refused before authentication", method: "POST", path: "/mcp", host: "evil.example.com", body: init, want: 403, wantBody: "DNS rebinding"},
		{name: "localhost Host passes to authentication", method: "POST", path: "/mcp", host: "localhost:8080", body: init, want: 401},
		{name: "unknown Origin refused", method: "POST", path: "/mcp", origin: "https://evil.example", body: init, want: 403, wantBody: "MCPGATE_ALLOWED_ORIGINS"},
		{name: "CORS preflight of an allowed origin", method: "OPTIONS", path: "/mcp", origin: "https://app.example.com",
			header: map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,mcp-session-id"}, want: 204,
			wantHeader: map[string]string{"Access-Control-Allow-Origin": "https://app.example.com", "Access-Control-Allow-Methods": "GET, POST, DELETE"}},
		{name: "CORS preflight of /sse", method: "OPTIONS", path: "/sse", origin: "https://app.example.com",
			header: map[string]string{"Access-Control-Request-Method": "GET"}, want: 204,
			wantHeader: map[string]string{"Access-Control-Allow-Methods": "GET, POST"}},
		{name: "PUT /mcp is a JSON-RPC 405", method: "PUT", path: "/mcp", header: map[string]string{"Authorization": "Bearer " + tok},
			want: 405, wantHeader: map[string]string{"Allow": "GET, POST, DELETE"}, wantBody: `"jsonrpc":"2.0"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, g.srv.URL+tc.path, strings.NewReader(tc.body))
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, b.String())
			}
			for k, v := range tc.wantHeader {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if tc.wantBody == "" {
				return
			}
			if strings.HasPrefix(tc.wantBody, "{") {
				var got, want any
				if json.Unmarshal(b.Bytes(), &got) != nil || json.Unmarshal([]byte(tc.wantBody), &want) != nil || !jsonEqual(got, want) {
					t.Fatalf("body %s, want %s", b.String(), tc.wantBody)
				}
			} else if !strings.Contains(b.String(), tc.wantBody) {
				t.Fatalf("body %s, want it to contain %q", b.String(), tc.wantBody)
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// Item 2 of issue 30: a gateway with no OAuth authorization server
// configured does not point clients at its resource metadata in a 401
// (whose document would name no authorization server, sending clients such
// as the MCP Inspector into an OAuth flow that cannot work): the challenge
// is a plain Bearer challenge, with invalid_token for an expired token.
func TestChallengeWithoutAuthorizationServer(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "sqlite:"+t.TempDir()+"/noas.db", nil)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`
	for _, auth := range []string{"", "Bearer expired.or.bad"} {
		req, _ := http.NewRequest("POST", g.srv.URL+"/mcp", strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := resp.Header.Get("WWW-Authenticate")
		if resp.StatusCode != 401 || !strings.HasPrefix(got, `Bearer realm="mcpgate"`) || strings.Contains(got, "resource_metadata") {
			t.Errorf("Authorization %q: HTTP %d, WWW-Authenticate %q; want 401 without resource_metadata", auth, resp.StatusCode, got)
		}
		if auth != "" && !strings.Contains(got, `error="invalid_token"`) {
			t.Errorf("bad token: WWW-Authenticate %q lacks invalid_token", got)
		}
	}
}
