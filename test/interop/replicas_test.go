package interop

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway/auth"

	_ "github.com/lib/pq" // the test database, for a schema per test
)

// progressText is what the fixture's test_tool_with_progress answers when
// the request it received carried no progress token: it returns the token
// it got, printed with %v. A gateway that relays progress forwards the
// client's token, so the answer is then that token (or the gateway's
// stand-in for it) and the fixture's three notifications reach the client.
const progressText = "<nil>"

// replicaSet is three `mcpgate serve` processes on one PostgreSQL schema,
// in front of the fixture upstream (through a counting door), behind a
// round-robin proxy: the deployment issue 11 describes, on loopback.
type replicaSet struct {
	s        *stack
	bases    []string // http://127.0.0.1:PORT of each replica
	proxy    *roundRobin
	upstream *callCounter
	tasks    atomic.Int64
}

// TestReplicas runs the proof of issue 11 against three replicas: every
// real client (TypeScript SDK v1 and v2, the Go SDK, mcp-go) lists, calls,
// meets a denial, makes a call with a progress token and closes, through a
// proxy that sends each request to the next replica; an admin change on
// replica 1 reaches a subscriptions/listen stream held on replica 3 within
// 1 s; a revoked coordinator token is refused on all three within 1 s; and
// 300 concurrent calls against the per-task bucket of 10, spread over the
// three, are dispatched exactly 10 times, counted at the upstream and in
// the audit rows.
func TestReplicas(t *testing.T) {
	s := setup(t)
	rs := startReplicas(t, s)

	t.Run("TypeScriptSDKv1", func(t *testing.T) { rs.typescript(t, "v1", "") })
	t.Run("TypeScriptSDKv2", func(t *testing.T) { rs.typescript(t, "v2", "") })
	t.Run("TypeScriptSDKv2Discover", func(t *testing.T) { rs.typescript(t, "v2", "auto") })
	t.Run("GoSDK", rs.goSDK)
	t.Run("MCPGo", rs.mcpGo)
	t.Run("APIModern", rs.apiModern)
	t.Run("AdminChangeReachesStream", rs.adminChange)
	t.Run("RevokeOnEveryReplica", rs.revoke)
	t.Run("BucketOfTen", rs.bucket)

	for i, n := range rs.proxy.counts() {
		t.Logf("replica %d served %d requests through the proxy", i+1, n)
		if n == 0 {
			t.Errorf("replica %d got no request through the round-robin proxy", i+1)
		}
	}
}

// startReplicas starts the three replicas on a fresh schema of
// MCPGATE_TEST_DATABASE_URL (skipping the test without it), one after the
// other so that the first migrates and seeds, and the proxy before them.
func startReplicas(t *testing.T, s *stack) *replicaSet {
	t.Helper()
	dbURL := replicaSchema(t)
	rs := &replicaSet{s: s}
	var err error
	if rs.upstream, err = newCallCounter(s.upstreamURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.upstream.close)
	env := []string{
		"MCPGATE_LISTEN=127.0.0.1:0",
		"MCPGATE_CCSERVER_LISTEN=127.0.0.1:0",
		"MCPGATE_DATABASE_URL=" + dbURL,
		"MCPGATE_JWT_SECRET=" + jwtSecret,
		"MCPGATE_ADMIN_TOKEN=" + adminToken,
		// One key for every replica: a session id signed by one is
		// accepted by the others.
		"MCPGATE_SESSION_SECRET=replicas-session-0123456789abcdef0123456789",
		"SUPACLOUD_MCP_CONFIRMATION_SECRET=replicas-confirm-0123456789abcdef0123456789",
		"MCPGATE_LOG_FORMAT=json",
		"MCPGATE_UPSTREAM_URL=" + rs.upstream.url,
		"AGENT_MCP_PROFILE_OPS_HOURLY_LIMIT=1000",
		"AGENT_MCP_WORKSPACE_OPS_DAILY_LIMIT=1000",
		// Refused calls past this rate per principal and replica get no
		// audit row (a flood guard, default 5/s); BucketOfTen counts a
		// row for each of its 300 calls, so the guard is set above them.
		"MCPGATE_REFUSED_CALLS_PER_SECOND=1000",
	}
	for i := range 3 {
		log := filepath.Join(s.dir, fmt.Sprintf("replica-%d.log", i+1))
		// gatewayEnv's cc_server listener on port 0: a port of its own
		// for each replica.
		base, err := s.launchGateway(log, slices.Clone(env))
		if err != nil {
			t.Fatalf("replica %d: %v", i+1, err)
		}
		rs.bases = append(rs.bases, base)
	}
	t.Cleanup(func() {
		s.mu.Lock()
		procs := s.procs[len(s.procs)-3:]
		s.procs = s.procs[:len(s.procs)-3]
		s.mu.Unlock()
		for _, p := range procs {
			p.stop()
		}
	})
	if rs.proxy, err = newRoundRobin(rs.bases); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.proxy.close)
	return rs
}

// replicaSchema creates a schema of its own on the test database and
// returns a URL whose search_path is that schema; the schema is dropped
// after the replicas stop.
func replicaSchema(t *testing.T) string {
	t.Helper()
	base := os.Getenv("MCPGATE_TEST_DATABASE_URL")
	if base == "" {
		t.Skip("MCPGATE_TEST_DATABASE_URL is unset: the replicas share a PostgreSQL database (make test sets it)")
	}
	db, err := sql.Open("postgres", base)
	if err != nil {
		t.Fatal(err)
	}
	schema := fmt.Sprintf("replicas_%d", time.Now().UnixNano())
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema on %s: %v (run make pg)", base, err)
	}
	t.Cleanup(func() {
		_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
		_ = db.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// mcpURL is the proxy's /mcp endpoint; the clients use only that.
func (rs *replicaSet) mcpURL() string { return rs.proxy.url + "/mcp" }

// taskToken creates a running task through replica 1's admin API and
// returns an agent token for it with profile.
func (rs *replicaSet) taskToken(t *testing.T, profile string) (token, task string) {
	t.Helper()
	task = fmt.Sprintf("replicas-%d", rs.tasks.Add(1))
	adminCall(t, rs.bases[0], http.MethodPut, "/workspaces/"+devWorkspace+"/tasks/"+task, `{"status":"running"}`)
	token, err := rs.s.jwt.Issue(auth.AgentClaims{Subject: devUser, WorkspaceID: devWorkspace, TaskID: task, ProfileID: profile}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return token, task
}

// tsReplicaReport is what ts/replicas.mjs prints.
type tsReplicaReport struct {
	SessionID       string   `json:"sessionId"`
	ProtocolVersion string   `json:"protocolVersion"`
	Tools           []string `json:"tools"`
	Text            string   `json:"text"`
	Streamed        struct {
		IsError  bool              `json:"isError"`
		Text     string            `json:"text"`
		Progress []json.RawMessage `json:"progress"`
	} `json:"streamed"`
	Denied struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
		Denial  *struct {
			Class string `json:"class"`
			Code  string `json:"code"`
		} `json:"denial"`
	} `json:"denied"`
	Wire []string `json:"wire"`
}

// typescript runs ts/replicas.mjs with SDK sdk ("v1" or "v2") and, for v2,
// the version negotiation mode negotiation ("" for the default).
func (rs *replicaSet) typescript(t *testing.T, sdk, negotiation string) {
	token, _ := rs.taskToken(t, upstreamProfile)
	reader, _ := rs.taskToken(t, readerProfile)
	want := rawDenial(t, rs.mcpURL(), reader, "test_simple_text", map[string]any{}, "allowlist.missing_grant")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, rs.s.node, "ts/replicas.mjs")
	cmd.Env = append(os.Environ(), "SDK="+sdk, "NEGOTIATION="+negotiation, "GATEWAY_URL="+rs.mcpURL(),
		"TOKEN="+token, "READER_TOKEN="+reader)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ts/replicas.mjs (%s): %v\n%s", sdk, err, stderr.String())
	}
	var r tsReplicaReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("ts/replicas.mjs printed %q: %v", out, err)
	}
	t.Logf("TypeScript SDK %s (negotiation %q): protocol %s, wire %v", sdk, negotiation, r.ProtocolVersion, r.Wire)
	wantVersion := "2025-11-25"
	if negotiation == "auto" {
		wantVersion = "2026-07-28"
	}
	if r.ProtocolVersion != wantVersion {
		t.Errorf("protocol %q, want %s", r.ProtocolVersion, wantVersion)
	}
	if wantVersion == "2026-07-28" {
		if r.SessionID != "" || slices.ContainsFunc(r.Wire, func(e string) bool { return strings.HasPrefix(e, "POST initialize") }) {
			t.Errorf("a 2026-07-28 client got session %q / sent initialize: %v", r.SessionID, r.Wire)
		}
	} else {
		// Its requests went round the three replicas, one session id
		// throughout: the id is not tied to the replica that issued it.
		if r.SessionID == "" || !slices.Contains(r.Wire, "DELETE 200") && !slices.Contains(r.Wire, "DELETE 204") {
			t.Errorf("session %q, wire %v: want a session ended by DELETE with 2xx", r.SessionID, r.Wire)
		}
	}
	checkListed(t, r.Tools)
	if r.Text != simpleText {
		t.Errorf("test_simple_text = %q, want %q", r.Text, simpleText)
	}
	checkProgress(t, r.Streamed.IsError, r.Streamed.Text, len(r.Streamed.Progress))
	if !r.Denied.IsError || r.Denied.Text != want.Text || r.Denied.Denial == nil || r.Denied.Denial.Code != want.Denial.Code {
		t.Errorf("denial = %+v, want isError with %q and code %s", r.Denied, want.Text, want.Denial.Code)
	}
}

// goSDK runs the Go SDK client with its defaults (2026-07-28 after
// server/discover) through the proxy.
func (rs *replicaSet) goSDK(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	token, _ := rs.taskToken(t, upstreamProfile)
	reader, _ := rs.taskToken(t, readerProfile)
	want := rawDenial(t, rs.mcpURL(), reader, "test_simple_text", map[string]any{}, "allowlist.missing_grant")

	var progress atomic.Int64
	httpClient, wire := bearer(token)
	client := mcp.NewClient(&mcp.Implementation{Name: "replicas-go-sdk", Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: rs.mcpURL(), HTTPClient: httpClient}, nil)
	if err != nil {
		t.Fatalf("connect: %v (wire %v)", err, wire.all())
	}
	assertHandshake(t, wire, true)
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	checkListed(t, names)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}})
	if err != nil || firstText(res) != simpleText {
		t.Errorf("test_simple_text: %v %+v", err, res)
	}
	params := &mcp.CallToolParams{Name: "test_tool_with_progress", Arguments: map[string]any{}}
	params.SetProgressToken("go-sdk-progress")
	res, err = cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("test_tool_with_progress: %v", err)
	}
	checkProgress(t, res.IsError, firstText(res), int(progress.Load()))
	closeGoSDK(t, rs.mcpURL(), cs, token, wire)

	rcs, rwire := connectGoSDK(ctx, t, rs.s, rs.mcpURL(), reader)
	res, err = rcs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}})
	if err != nil || !res.IsError || firstText(res) != want.Text {
		t.Errorf("denial: %v %+v, want isError with %q", err, res, want.Text)
	}
	closeGoSDK(t, rs.mcpURL(), rcs, reader, rwire)
}

// mcpGo runs mcp-go with its defaults (2026-07-28 after server/discover)
// through the proxy.
func (rs *replicaSet) mcpGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	token, _ := rs.taskToken(t, upstreamProfile)
	reader, _ := rs.taskToken(t, readerProfile)
	want := rawDenial(t, rs.mcpURL(), reader, "test_simple_text", map[string]any{}, "allowlist.missing_grant")

	c, wire := connectMCPGo(ctx, t, rs.s, rs.mcpURL(), token)
	var progress atomic.Int64
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			progress.Add(1)
		}
	})
	assertHandshake(t, wire, true)
	list, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	checkListed(t, names)
	res, err := c.CallTool(ctx, callRequest("test_simple_text"))
	if err != nil || mcpGoText(res) != simpleText {
		t.Errorf("test_simple_text: %v %+v", err, res)
	}
	req := callRequest("test_tool_with_progress")
	req.Params.Meta = &mcpgo.Meta{ProgressToken: "mcp-go-progress"}
	res, err = c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("test_tool_with_progress: %v", err)
	}
	checkProgress(t, res.IsError, mcpGoText(res), int(progress.Load()))
	closeMCPGo(t, rs.mcpURL(), c, token, wire)

	rc, rwire := connectMCPGo(ctx, t, rs.s, rs.mcpURL(), reader)
	res, err = rc.CallTool(ctx, callRequest("test_simple_text"))
	if err != nil || !res.IsError || mcpGoText(res) != want.Text {
		t.Errorf("denial: %v %+v, want isError with %q", err, res, want.Text)
	}
	closeMCPGo(t, rs.mcpURL(), rc, reader, rwire)
}

// checkListed checks a tools/list of the upstream profile: the fixture's
// tools the clients call are there.
func checkListed(t *testing.T, names []string) {
	t.Helper()
	for _, want := range []string{"test_simple_text", "test_tool_with_progress"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
}

// checkProgress checks the call of test_tool_with_progress made with a
// progress token. While the gateway does not relay upstream messages
// (issue 11 point 4), the upstream gets no progress token (its answer is
// progressText) and the client no notification; once it does, the
// upstream gets a token and the client its three notifications.
func checkProgress(t *testing.T, isError bool, text string, notifications int) {
	t.Helper()
	if isError {
		t.Fatalf("test_tool_with_progress failed: %q", text)
	}
	if text == progressText {
		t.Logf("progress is not relayed yet: the upstream got no progress token, the client %d notifications", notifications)
		if notifications != 0 {
			t.Errorf("%d progress notifications reached the client although the upstream got no token", notifications)
		}
		return
	}
	if notifications != 3 {
		t.Errorf("the upstream got progress token %q but the client saw %d of its 3 progress notifications", text, notifications)
	}
}

// adminChange: an allowlist change made through replica 1's admin API
// reaches a subscriptions/listen stream held on replica 3 (the Go SDK
// client, connected there directly) as tools/list_changed within 1 s.
func (rs *replicaSet) adminChange(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	profile := fmt.Sprintf("listen-%d", time.Now().UnixNano())
	put := func(allow string) {
		adminCall(t, rs.bases[0], http.MethodPut, "/workspaces/"+devWorkspace+"/profiles/"+profile,
			`{"name":"Listen test","allowlist":[`+allow+`]}`)
	}
	put(`"test_simple_text"`)
	token, _ := rs.taskToken(t, profile)
	changed := make(chan time.Time, 4)
	httpClient, wire := bearer(token)
	client := mcp.NewClient(&mcp.Implementation{Name: "replicas-listener", Version: "1.0.0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- time.Now() },
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: rs.bases[2] + "/mcp", HTTPClient: httpClient}, nil)
	if err != nil {
		t.Fatalf("connect to replica 3: %v", err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list on replica 3: %v", err)
	}
	// The SDK opens subscriptions/listen after connecting; wait until
	// replica 3 has it open, then change the profile on replica 1.
	waitWire(t, wire, "POST subscriptions/listen 200")
	time.Sleep(200 * time.Millisecond) // the stream's acknowledgement is read before the change
	start := time.Now()
	put(`"test_simple_text","test_tool_with_progress"`)
	select {
	case at := <-changed:
		d := at.Sub(start)
		t.Logf("tools/list_changed on replica 3 %s after the change on replica 1", d.Round(time.Millisecond))
		if d > time.Second {
			t.Errorf("the change reached replica 3's stream after %s, want within 1 s", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no tools/list_changed on replica 3 within 5 s of the change on replica 1 (wire %v)", wire.all())
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list after the change: %v", err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "test_tool_with_progress") {
		t.Errorf("replica 3 lists %v after the change, want test_tool_with_progress among them", names)
	}
}

// apiModern: 2026-07-28 on /api/mcp through the proxy with a coordinator
// token: server/discover answers, an Mcp-Method that differs from the
// body is HTTP 400 with -32020 (HeaderMismatch), and subscriptions/listen
// is acknowledged on an event stream.
func (rs *replicaSet) apiModern(t *testing.T) {
	var created struct{ Token string }
	reply := adminCall(t, rs.bases[0], http.MethodPost, "/workspaces/"+devWorkspace+"/api-tokens",
		`{"label":"replicas-modern","scopes":["mcp:read"]}`)
	if err := json.Unmarshal(reply, &created); err != nil || created.Token == "" {
		t.Fatalf("create token: %s", reply)
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	post := func(method, header, params string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, rs.proxy.url+"/api/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":"a1","method":"`+method+`","params":`+params+`}`))
		req.Header.Set("Authorization", "Bearer "+created.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", header)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s on /api/mcp: %v", method, err)
		}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			defer resp.Body.Close()
			line, data := make([]byte, 4096), ""
			for !strings.Contains(data, "\n\n") {
				n, err := resp.Body.Read(line)
				data += string(line[:n])
				if err != nil {
					break
				}
			}
			return resp, data
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp, string(body)
	}
	if resp, body := post("server/discover", "server/discover", `{`+meta+`}`); resp.StatusCode != 200 || !strings.Contains(body, `"supportedVersions":["2026-07-28"`) {
		t.Errorf("server/discover on /api/mcp: HTTP %d %s", resp.StatusCode, body)
	}
	if resp, body := post("tools/list", "prompts/list", `{`+meta+`}`); resp.StatusCode != 400 || !strings.Contains(body, `"code":-32020`) {
		t.Errorf("Mcp-Method prompts/list on a tools/list body: HTTP %d %s, want 400 with -32020", resp.StatusCode, body)
	}
	if resp, body := post("subscriptions/listen", "subscriptions/listen", `{"notifications":{"toolsListChanged":true},`+meta+`}`); resp.StatusCode != 200 ||
		!strings.Contains(body, "notifications/subscriptions/acknowledged") || !strings.Contains(body, `"toolsListChanged":true`) {
		t.Errorf("subscriptions/listen on /api/mcp: HTTP %d %q, want the acknowledgement", resp.StatusCode, body)
	}
}

// waitWire waits up to 10 s for entry in the wire log.
func waitWire(t *testing.T, wire *wireLog, entry string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(wire.all(), entry) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q on the wire within 10 s: %v", entry, wire.all())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// revoke: a coordinator token created and revoked through replica 1 is
// refused (HTTP 401) on every replica within 1 s of the revocation.
func (rs *replicaSet) revoke(t *testing.T) {
	var created struct{ Token, Fingerprint string }
	reply := adminCall(t, rs.bases[0], http.MethodPost, "/workspaces/"+devWorkspace+"/api-tokens",
		`{"label":"replicas-revoke","scopes":["mcp:read"]}`)
	if err := json.Unmarshal(reply, &created); err != nil || created.Token == "" {
		t.Fatalf("create token: %s", reply)
	}
	for i, base := range rs.bases {
		if st := listStatus(t, base+"/api/mcp", created.Token); st != http.StatusOK {
			t.Fatalf("replica %d before the revocation: HTTP %d, want 200", i+1, st)
		}
	}
	req, _ := http.NewRequest(http.MethodDelete, rs.bases[0]+"/admin/v1/api-tokens/"+created.Fingerprint, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("revoke: %v %v", err, resp)
	}
	_ = resp.Body.Close()
	revoked := time.Now()
	for i, base := range rs.bases {
		for {
			st := listStatus(t, base+"/api/mcp", created.Token)
			if st == http.StatusUnauthorized {
				t.Logf("replica %d refuses the token %s after the revocation", i+1, time.Since(revoked).Round(time.Millisecond))
				break
			}
			if time.Since(revoked) > time.Second {
				t.Fatalf("replica %d still answers HTTP %d %s after the revocation, want 401 within 1 s", i+1, st, time.Since(revoked))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// listStatus sends one stateless 2026-07-28 tools/list with token to
// endpoint and returns the HTTP status.
func listStatus(t *testing.T, endpoint, token string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("tools/list on %s: %v", endpoint, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// bucket: 300 concurrent calls of one task (docs/requirements.md#rate-limits: 10 ops-tier calls
// per task) through the proxy, so about 100 on each replica: exactly 10
// reach the upstream, the other 290 are refused with the seed's message,
// and the audit trail has 10 allowed and 290 rate-limited rows.
func (rs *replicaSet) bucket(t *testing.T) {
	const calls, limit, tool = 300, 10, "test_simple_text"
	token, task := rs.taskToken(t, upstreamProfile)
	before := rs.upstream.calls(tool)
	perReplica := rs.proxy.counts()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: calls, MaxConnsPerHost: calls}, Timeout: 60 * time.Second}
	var (
		wg                 sync.WaitGroup
		allowed, refused   atomic.Int64
		mu                 sync.Mutex
		other              []string
		wantRefusal        = "Rate limit exceeded for tool '" + tool + "'"
		start              = make(chan struct{})
		params, _          = json.Marshal(map[string]any{"name": tool, "arguments": map[string]any{}, "_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{}}})
		body               = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + string(params) + `}`
		endpoint, deadline = rs.mcpURL(), time.Now().Add(60 * time.Second)
	)
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", tool)
			resp, err := client.Do(req)
			var r rawReply
			if err == nil {
				r.status = resp.StatusCode
				err = json.NewDecoder(resp.Body).Decode(&r)
				_ = resp.Body.Close()
			}
			switch {
			case err == nil && r.Result != nil && !r.Result.IsError && len(r.Result.Content) == 1 && r.Result.Content[0].Text == simpleText:
				allowed.Add(1)
			case err == nil && r.Result != nil && r.Result.IsError && len(r.Result.Content) == 1 && r.Result.Content[0].Text == wantRefusal:
				refused.Add(1)
			default:
				mu.Lock()
				other = append(other, fmt.Sprintf("HTTP %d %+v %+v %v", r.status, r.Result, r.Error, err))
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	after := rs.proxy.counts()
	for i := range after {
		t.Logf("replica %d took %d of the %d calls", i+1, after[i]-perReplica[i], calls)
		if after[i]-perReplica[i] < calls/6 {
			t.Errorf("replica %d took %d of %d calls: the proxy did not spread them", i+1, after[i]-perReplica[i], calls)
		}
	}
	if len(other) > 0 {
		t.Errorf("%d calls got neither the result nor the seed's refusal %q, e.g. %s", len(other), wantRefusal, other[0])
	}
	if allowed.Load() != limit || refused.Load() != calls-limit {
		t.Errorf("%d allowed, %d refused; want exactly %d allowed and %d refused", allowed.Load(), refused.Load(), limit, calls-limit)
	}
	if n := rs.upstream.calls(tool) - before; n != limit {
		t.Errorf("the upstream received %d calls of %s, want exactly %d", n, tool, limit)
	}
	statuses := auditStatuses(t, rs.bases[1], task)
	t.Logf("audit rows of task %s: %v", task, statuses)
	if statuses["allowed"] != limit || statuses["rate_limited"] != calls-limit || len(statuses) != 2 {
		t.Errorf("audit rows of task %s by status = %v, want allowed %d and rate_limited %d only", task, statuses, limit, calls-limit)
	}
}

// auditStatuses counts the audit rows of task by status, read through
// base's admin API, every page.
func auditStatuses(t *testing.T, base, task string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	cursor := ""
	for {
		path := "/audit-events?workspace_id=" + devWorkspace + "&task_id=" + task + "&limit=100"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Events []struct {
				Status string `json:"status"`
			} `json:"events"`
			Next string `json:"next_cursor"`
		}
		if err := json.Unmarshal(adminCall(t, base, http.MethodGet, path, ""), &page); err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Events {
			counts[e.Status]++
		}
		if page.Next == "" {
			return counts
		}
		cursor = page.Next
	}
}

// roundRobin is the load balancer of the test: a reverse proxy on
// loopback that sends each request to the next replica, with no
// stickiness of any kind, and streams replies as they come (SSE).
type roundRobin struct {
	url     string
	srv     *http.Server
	ln      net.Listener
	next    atomic.Int64
	served  []atomic.Int64
	proxies []*httputil.ReverseProxy
}

func newRoundRobin(bases []string) (*roundRobin, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rr := &roundRobin{url: "http://" + ln.Addr().String(), ln: ln, served: make([]atomic.Int64, len(bases))}
	for _, b := range bases {
		target, err := url.Parse(b)
		if err != nil {
			return nil, err
		}
		p := httputil.NewSingleHostReverseProxy(target)
		p.FlushInterval = -1
		p.Transport = &http.Transport{MaxIdleConnsPerHost: 100}
		rr.proxies = append(rr.proxies, p)
	}
	rr.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(rr.next.Add(1)-1) % len(rr.proxies)
		rr.served[i].Add(1)
		// The replica checks Host against its own address (DNS
		// rebinding); a load balancer in front of it is configured
		// with the name it serves, here the replica's.
		r.Host = ""
		// Without full duplex, net/http's HTTP/1 server consumes and
		// closes the rest of the request body once the response starts
		// (golang/go#40747); the backend transport's last read of that
		// body (its check for trailing bytes) then fails under load, it
		// closes the backend connection, and the streamed response is
		// cut off mid-body ("other side closed" in the client). Real
		// load balancers stream both ways.
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		rr.proxies[i].ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = rr.srv.Serve(ln) }()
	return rr, nil
}

// counts returns how many requests each replica got so far.
func (rr *roundRobin) counts() []int64 {
	out := make([]int64, len(rr.served))
	for i := range rr.served {
		out[i] = rr.served[i].Load()
	}
	return out
}

func (rr *roundRobin) close() { _ = rr.srv.Close() }

// callCounter sits in front of the fixture upstream and counts the
// tools/call requests it forwards, by tool name: the calls the gateway
// dispatched.
type callCounter struct {
	url string
	srv *http.Server
	mu  sync.Mutex
	n   map[string]int
}

func newCallCounter(upstream string) (*callCounter, error) {
	target, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &callCounter{url: "http://" + ln.Addr().String() + "/", n: map[string]int{}}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	c.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
				c.mu.Lock()
				c.n[m.Params.Name]++
				c.mu.Unlock()
			}
		}
		r.Host = ""
		proxy.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = c.srv.Serve(ln) }()
	return c, nil
}

func (c *callCounter) calls(tool string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[tool]
}

func (c *callCounter) close() { _ = c.srv.Close() }
