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

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/postgres"
	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// replica is one gateway (server.Open, the real wiring) of several on one
// PostgreSQL schema, served over loopback HTTP.
type replica struct {
	app *server.App
	url string
}

const replicaAdminToken = "replica-admin-token"

// openReplicas opens n gateways on one fresh PostgreSQL schema, sharing
// the JWT and session keys as replicas behind one load balancer do, with
// workspace ws-a, member u1 and profile bot (reads only). Each vary, when
// given, changes the variables of replica i before it opens.
func openReplicas(t *testing.T, n int, vary ...func(i int, vars map[string]string)) []*replica {
	t.Helper()
	url := pgtest.SchemaURL(t)
	var out []*replica
	for i := range n {
		vars := map[string]string{
			"MCPGATE_DATABASE_URL":     url,
			"MCPGATE_JWT_SECRET":       "replica-test-jwt-secret-0123456789abcdef",
			"MCPGATE_SESSION_SECRET":   "replica-test-session-secret-0123456789ab",
			"MCPGATE_ADMIN_TOKEN":      replicaAdminToken,
			"MCPGATE_CALLER_CACHE_TTL": "1s",
		}
		for _, v := range vary {
			v(i, vars)
		}
		cfg, err := config.Load(func(k string) string { return vars[k] })
		if err != nil {
			t.Fatal(err)
		}
		app, err := server.Open(context.Background(), cfg, zap.NewNop(), "replica-test")
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(app.Server)
		t.Cleanup(func() { hs.Close(); _ = app.Close() })
		out = append(out, &replica{app: app, url: hs.URL})
	}
	ctx := context.Background()
	s := out[0].app.Store
	for _, err := range []error{
		s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-a", Name: "A"}),
		s.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: gateway.RoleOwner}),
		s.PutProfile(ctx, &gateway.Profile{WorkspaceID: "ws-a", ID: "bot", Name: "bot", Allowlist: []string{"supacloud.read.*"}}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// The three writes are announced to every replica; wait (up to 2 s)
	// for them, so that they do not drop a test's own cache entries later.
	// The tests' assertions say what happens when they never come.
	deadline := time.Now().Add(2 * time.Second)
	for _, r := range out {
		for r.app.Feed.Received() < 3 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return out
}

func (r *replica) agentToken(t *testing.T) string {
	t.Helper()
	tok, err := r.app.JWT.Issue(auth.AgentClaims{Subject: "u1", WorkspaceID: "ws-a", TaskID: "t1", ProfileID: "bot"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// post sends one JSON-RPC message to path with the bearer token and
// session id (when not empty) and returns the response.
func (r *replica) post(t *testing.T, path, token, session, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// initialize opens a 2025-06-18 session on path and returns its id.
func (r *replica) initialize(t *testing.T, path, token string) string {
	t.Helper()
	resp := r.post(t, path, token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"replica-test","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("initialize on %s: HTTP %d, session %q: %s", r.url, resp.StatusCode, sid, b)
	}
	return sid
}

// toolsList lists the session's tools and returns the HTTP status.
func (r *replica) toolsList(t *testing.T, path, token, session string) int {
	t.Helper()
	resp := r.post(t, path, token, session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// admin makes an admin API request and fails t unless it succeeds.
func (r *replica) admin(t *testing.T, method, path, body string) []byte {
	t.Helper()
	req, _ := http.NewRequest(method, r.url+"/admin/v1"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+replicaAdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("admin %s %s: HTTP %d: %s", method, path, resp.StatusCode, b)
	}
	return b
}

// sseStream is an open GET stream; lines delivers its lines until it ends
// (then the channel closes).
type sseStream struct{ lines chan string }

// openStream opens the session's GET stream on path.
func (r *replica) openStream(t *testing.T, path, token, session string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("GET stream on %s: HTTP %d", r.url, resp.StatusCode)
	}
	s := &sseStream{lines: make(chan string, 64)}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { cancel(); _ = resp.Body.Close() })
	return s
}

// waitFor waits up to within for a line containing want; false when the
// stream ended or the time passed first.
func (s *sseStream) waitFor(want string, within time.Duration) bool {
	deadline := time.After(within)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				return false
			}
			if strings.Contains(line, want) {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// waitEnd waits up to within for the stream to end.
func (s *sseStream) waitEnd(within time.Duration) bool {
	deadline := time.After(within)
	for {
		select {
		case _, ok := <-s.lines:
			if !ok {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// A session opened on A is served by B; DELETE on B ends it on A too,
// because the end is recorded in the shared store.
func TestReplicasShareSessionEnds(t *testing.T) {
	rs := openReplicas(t, 2)
	a, b := rs[0], rs[1]
	tok := a.agentToken(t)
	sid := a.initialize(t, "/mcp", tok)
	if got := b.toolsList(t, "/mcp", tok, sid); got != http.StatusOK {
		t.Fatalf("tools/list on B of a session opened on A: HTTP %d, want 200", got)
	}
	// A keeps its "not ended" answer from this request.
	if got := a.toolsList(t, "/mcp", tok, sid); got != http.StatusOK {
		t.Fatalf("tools/list on A: HTTP %d, want 200", got)
	}
	req, _ := http.NewRequest(http.MethodDelete, b.url+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE on B: HTTP %d, want 200", resp.StatusCode)
	}
	// On B, the replica that ended it, at once.
	if got := b.toolsList(t, "/mcp", tok, sid); got != http.StatusNotFound {
		t.Fatalf("tools/list on B after DELETE on B: HTTP %d, want 404", got)
	}
	// On A within the fan-out latency (1 s), as every change made elsewhere.
	deadline := time.Now().Add(time.Second)
	for {
		got := a.toolsList(t, "/mcp", tok, sid)
		if got == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools/list on A 1 s after DELETE on B: HTTP %d, want 404", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A profile change made through A reaches the GET stream held on B
// within 1 s, as notifications/tools/list_changed: the caller cache's TTL
// alone would never tell an open stream.
func TestReplicaChangeReachesStreamOnOtherReplica(t *testing.T) {
	rs := openReplicas(t, 2)
	a, b := rs[0], rs[1]
	tok := a.agentToken(t)
	sid := b.initialize(t, "/mcp", tok)
	if got := b.toolsList(t, "/mcp", tok, sid); got != http.StatusOK {
		t.Fatalf("tools/list on B: HTTP %d", got)
	}
	stream := b.openStream(t, "/mcp", tok, sid)
	a.admin(t, http.MethodPut, "/workspaces/ws-a/profiles/bot", `{"name":"bot","allowlist":["supacloud.read.*","supacloud.ops.*"]}`)
	if !stream.waitFor("notifications/tools/list_changed", time.Second) {
		t.Fatal("no tools/list_changed on B's stream within 1 s of a profile change through A")
	}
	if n := b.app.Feed.Received(); n == 0 {
		t.Error("B's feed counts no notification received")
	}
}

// A token revoked through A is refused on B, and the stream B holds for
// it ends within 1 s.
func TestReplicaRevocationReachesOtherReplica(t *testing.T) {
	rs := openReplicas(t, 2)
	a, b := rs[0], rs[1]
	var created struct {
		Token, Fingerprint string
	}
	if err := json.Unmarshal(a.admin(t, http.MethodPost, "/workspaces/ws-a/api-tokens", `{"label":"coord","scopes":["mcp:read"]}`), &created); err != nil || created.Token == "" {
		t.Fatalf("token create: %v %+v", err, created)
	}
	sid := b.initialize(t, "/api/mcp", created.Token)
	stream := b.openStream(t, "/api/mcp", created.Token, sid)
	a.admin(t, http.MethodDelete, "/api-tokens/"+created.Fingerprint, "")
	if !stream.waitEnd(time.Second) {
		t.Fatal("B's stream of the revoked token still open 1 s after the revocation through A")
	}
	if got := b.toolsList(t, "/api/mcp", created.Token, sid); got != http.StatusUnauthorized {
		t.Fatalf("tools/list on B with the revoked token: HTTP %d, want 401", got)
	}
}

// A revocation announced on mcpgate_changes for a token the store still
// holds active is not believed: anyone who may connect to the database
// can send one, and ending the token's sessions would cancel their
// running calls. B's stream of the active token stays open; a real
// revocation through A still ends it.
func TestReplicaForgedRevocationKeepsStream(t *testing.T) {
	rs := openReplicas(t, 2)
	a, b := rs[0], rs[1]
	var created struct {
		Token, Fingerprint string
	}
	if err := json.Unmarshal(a.admin(t, http.MethodPost, "/workspaces/ws-a/api-tokens", `{"label":"coord","scopes":["mcp:read"]}`), &created); err != nil || created.Token == "" {
		t.Fatalf("token create: %v %+v", err, created)
	}
	sid := b.initialize(t, "/api/mcp", created.Token)
	stream := b.openStream(t, "/api/mcp", created.Token, sid)
	db := a.app.Store.(*postgres.Store).DB()
	ctx := context.Background()
	before := b.app.Feed.Received()
	if _, err := db.ExecContext(ctx, `SELECT pg_notify('mcpgate_changes', json_build_object('s', current_schema(), 't', 'api_tokens', 'w', 'ws-a', 'k', $1::text)::text)`,
		created.Fingerprint); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Second); b.app.Feed.Received() == before && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if b.app.Feed.Received() == before {
		t.Fatal("B never heard the forged announcement")
	}
	if stream.waitEnd(500 * time.Millisecond) {
		t.Fatal("a forged revocation of an active token ended B's stream of it")
	}
	a.admin(t, http.MethodDelete, "/api-tokens/"+created.Fingerprint, "")
	if !stream.waitEnd(time.Second) {
		t.Fatal("B's stream of the revoked token still open 1 s after the revocation through A")
	}
}

// When B's listening connection is cut (pg_terminate_backend), B
// reconnects by itself and, since notifications of the gap may be lost,
// drops every cached caller and re-checks every open stream once: a
// change B never heard of reaches its stream then. Later changes reach it
// as before.
func TestReplicaListenerRecovers(t *testing.T) {
	rs := openReplicas(t, 2)
	a, b := rs[0], rs[1]
	tok := a.agentToken(t)
	sid := b.initialize(t, "/mcp", tok)
	if got := b.toolsList(t, "/mcp", tok, sid); got != http.StatusOK {
		t.Fatalf("tools/list on B: HTTP %d", got)
	}
	stream := b.openStream(t, "/mcp", tok, sid)
	pg := a.app.Store.(*postgres.Store)
	ctx := context.Background()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := pg.DB().ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// A change that is not announced, as one made while B was not
	// listening would be.
	exec(`ALTER TABLE agent_profiles DISABLE TRIGGER agent_profiles_notify`)
	if err := pg.PutProfile(ctx, &gateway.Profile{WorkspaceID: "ws-a", ID: "bot", Name: "bot",
		Allowlist: []string{"supacloud.read.*", "supacloud.ops.*"}}); err != nil {
		t.Fatal(err)
	}
	exec(`ALTER TABLE agent_profiles ENABLE TRIGGER agent_profiles_notify`)
	if stream.waitFor("notifications/tools/list_changed", 300*time.Millisecond) {
		t.Fatal("B's stream was told of a change that was not announced; the test cannot tell a resync")
	}
	var schema string
	if err := pg.DB().GetContext(ctx, &schema, `SELECT current_schema()`); err != nil {
		t.Fatal(err)
	}
	var cut int // A's and B's listening connections
	if err := pg.DB().GetContext(ctx, &cut, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE application_name = $1`, postgres.ListenerName(schema)); err != nil {
		t.Fatal(err)
	}
	if cut != 2 {
		t.Fatalf("cut %d listening connections, want A's and B's", cut)
	}
	if !stream.waitFor("notifications/tools/list_changed", 5*time.Second) {
		t.Fatal("no tools/list_changed on B's stream within 5 s of its listener being cut: the missed change was not caught on reconnect")
	}
	if !b.app.Feed.Connected() {
		t.Fatal("B's feed is not connected after it resynchronized")
	}
	if err := b.toolsList(t, "/mcp", tok, sid); err != http.StatusOK { // the client re-lists, as told
		t.Fatalf("tools/list on B: HTTP %d", err)
	}
	a.admin(t, http.MethodPut, "/workspaces/ws-a/profiles/bot", `{"name":"bot","allowlist":["supacloud.read.*"]}`)
	if !stream.waitFor("notifications/tools/list_changed", time.Second) {
		t.Fatal("no tools/list_changed on B's stream within 1 s of a change through A, after B's listener recovered")
	}
	resp, err := http.Get(b.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"mcpgate_store_notify_connected 1", "mcpgate_store_notifications_received_total "} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics of B lacks %q", want)
		}
	}
}
