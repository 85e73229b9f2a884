// Package ratelimit_test proves the rate limits of issue 3 end to end: the
// real gateway (in process through server.Open, and as `mcpgate serve`
// processes) on PostgreSQL and the embedded store, driven over HTTP with
// JSON-RPC, with tool calls dispatched to a counting upstream MCP server;
// and, on the same processes, the order in which a session's flow record,
// taken in the reservation of the rate-limit slots, decides a read and an
// egress sent at once (issue 28); that a decision on a bridged tool's
// pinned definition made through one `mcpgate serve` process applies on
// the others within a second (issue 25); and the audit chain sealed on
// by the replicas left when one is killed (issue 26).
package ratelimit_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
	"github.com/mcpgate/mcpgate/gateway/server"
	"github.com/mcpgate/mcpgate/test/testbin"
)

const (
	jwtSecret       = "ratelimit-secret-0123456789abcdef0123456789"
	adminToken      = "ratelimit-admin-token"
	protocolVersion = "2025-06-18"
	workspace       = "ws-rl"
	opsTool         = "schedule.pause"
)

// opsArgs are valid arguments of opsTool.
var opsArgs = map[string]any{"schedule_id": "sch-1"}

// storeURLs are the stores every store-parametrised test runs on.
func storeURLs() map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "mcpgate.db") },
		"postgres": func(t *testing.T) string { return pgtest.SchemaURL(t) },
	}
}

// baseEnv is the environment every gateway of these tests gets.
func baseEnv(dbURL, upstreamURL string) map[string]string {
	env := map[string]string{
		"MCPGATE_DATABASE_URL": dbURL,
		"MCPGATE_JWT_SECRET":   jwtSecret,
		"MCPGATE_ADMIN_TOKEN":  adminToken,
		"MCPGATE_LISTEN":       "127.0.0.1:0",
		"MCPGATE_LOG_FORMAT":   "json",
		// These tests count every refusal's audit row (200 concurrent
		// calls of one task against a bucket of 10).
		"MCPGATE_REFUSED_CALLS_PER_SECOND": "100000",
	}
	if upstreamURL != "" {
		env["MCPGATE_UPSTREAM_URL"] = upstreamURL
	}
	return env
}

// ---- the upstream: a real MCP server that counts what reaches it ----

// upstream implements opsTool and projects.list and counts dispatches.
type upstream struct {
	srv   *httptest.Server
	calls atomic.Int64
}

func startUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	s := mcp.NewServer(&mcp.Implementation{Name: "counting-upstream", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object"}`)
	for _, name := range []string{opsTool, "projects.list"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u.calls.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	}
	u.srv = httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) url() string { return u.srv.URL }

// ---- gateways ----

// inProcess runs the real App (server.Open, as `mcpgate serve` does) behind
// an httptest server and returns its base URL and the App.
func inProcess(t *testing.T, env map[string]string) (string, *server.App) {
	t.Helper()
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	app, err := server.Open(context.Background(), cfg, zap.NewNop(), "ratelimit-test")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Server)
	t.Cleanup(func() {
		srv.Close()
		_ = app.Close()
	})
	return srv.URL, app
}

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// process is one running `mcpgate serve`.
type process struct {
	cmd  *exec.Cmd
	url  string
	logs *syncBuffer
	done chan struct{}
}

// startProcess starts `mcpgate serve` with env and waits until it listens.
func startProcess(t *testing.T, env map[string]string) *process {
	t.Helper()
	cmd := exec.Command(testbin.Mcpgate(t), "serve")
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, logs: &syncBuffer{}, done: make(chan struct{})}
	addr := make(chan string, 1)
	go p.readLogs(stderr, addr)
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.stop(t) })
	select {
	case a := <-addr:
		p.url = "http://" + a
	case <-p.done:
		t.Fatalf("mcpgate serve exited at start:\n%s", p.logs)
	case <-time.After(60 * time.Second):
		t.Fatalf("mcpgate serve did not listen within 60 s:\n%s", p.logs)
	}
	return p
}

// readLogs copies the process's JSON log and reports the listen address.
func (p *process) readLogs(r io.Reader, addr chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		p.logs.Write(append(line, '\n'))
		var entry struct{ Msg, Addr string }
		if json.Unmarshal(line, &entry) == nil && entry.Msg == "mcpgate listening" {
			select {
			case addr <- entry.Addr:
			default:
			}
		}
	}
}

// stop ends the process with SIGTERM (graceful shutdown), or kills it after
// 15 s; stopping twice is harmless.
func (p *process) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	// Connections the client dialed but never used look busy to the
	// server's graceful shutdown for 5 s; close them first.
	sharedHTTP.CloseIdleConnections()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Errorf("mcpgate serve ignored SIGTERM for 15 s; killing it")
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ---- credentials and seeding ----

// agentToken signs an agent session JWT with the shared HS256 secret, as
// the platform would (claims of docs/http.md).
func agentToken(t *testing.T, user, task, profile string) string {
	t.Helper()
	claims := jwt.MapClaims{
		"sub": user, "workspace_id": workspace, "task_id": task, "aud": "mcpgate",
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(),
	}
	if profile != "" {
		claims["agent_profile_id"] = profile
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(jwtSecret))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// admin sends one admin API request and fails t unless it succeeds.
func admin(t *testing.T, base, method, path string, body any) []byte {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, base+"/admin/v1"+path, rd)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: HTTP %d %s", method, path, resp.StatusCode, out)
	}
	return out
}

// seed creates workspace ws-rl with member u1, profiles "operator" and
// "operator2" (supacloud.ops.* and supacloud.read.*) and running tasks,
// through the admin API.
func seed(t *testing.T, base string, tasks ...string) {
	t.Helper()
	admin(t, base, http.MethodPut, "/workspaces/"+workspace, map[string]any{"name": "Rate limits", "slug": "rl", "org_plan": "team"})
	admin(t, base, http.MethodPut, "/workspaces/"+workspace+"/members/u1", map[string]any{"role": "member", "seat_type": "developer"})
	for _, profile := range []string{"operator", "operator2"} {
		admin(t, base, http.MethodPut, "/workspaces/"+workspace+"/profiles/"+profile,
			map[string]any{"name": profile, "allowlist": []string{"supacloud.ops.*", "supacloud.read.*"}})
	}
	for _, task := range tasks {
		admin(t, base, http.MethodPut, "/workspaces/"+workspace+"/tasks/"+task, map[string]any{"status": "running"})
	}
}

// auditCounts returns the tool-call audit rows of ws-rl by status, through
// the admin API (the admin writes that set the workspace up are rows of
// their own kind).
func auditCounts(t *testing.T, base string, filter string) map[string]int {
	t.Helper()
	var list struct {
		Events []struct {
			Status string `json:"status"`
		} `json:"events"`
	}
	body := admin(t, base, http.MethodGet, "/audit-events?kind=tool_call&workspace_id="+workspace+"&limit=1000"+filter, nil)
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("audit listing: %v: %s", err, body)
	}
	evs := list.Events
	out := map[string]int{}
	for _, ev := range evs {
		out[ev.Status]++
		out["total"]++
	}
	return out
}

// ---- a minimal MCP client speaking JSON-RPC over Streamable HTTP ----

// client is one MCP session of one agent token on one gateway.
type client struct {
	base, token, session string
	hc                   *http.Client
	ids                  atomic.Int64
}

// sharedHTTP keeps enough idle connections for 200 concurrent calls.
var sharedHTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}, Timeout: 60 * time.Second}

// rpcError is the JSON-RPC error object mcpgate sends (docs/http.md,
// Errors); a refused call is not one (reply.refusal).
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    struct {
		Class  string `json:"class"`
		Status int    `json:"status"`
		Bucket string `json:"bucket"`
	} `json:"data"`
}

// connect opens a session (initialize, notifications/initialized).
func connect(t *testing.T, base, token string) *client {
	t.Helper()
	c := &client{base: base, token: token, hc: sharedHTTP}
	resp, err := c.post(context.Background(), "initialize", map[string]any{
		"protocolVersion": protocolVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "ratelimit-test", "version": "1"},
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	if resp.err != nil {
		t.Fatalf("initialize: %+v", resp.err)
	}
	if _, err := c.post(context.Background(), "notifications/initialized", nil, false); err != nil {
		t.Fatal(err)
	}
	return c
}

type reply struct {
	result json.RawMessage
	err    *rpcError
	// refusal is set when the result is the gateway's tool execution
	// error for a refused call (a rate limit, a policy denial).
	refusal *refusal
}

// refusal is a refused tools/call as the wire carries it: a result with
// isError, its one text block, and _meta["io.mcpgate/denial"]
// (docs/http.md, Errors).
type refusal struct {
	Text   string
	Class  string `json:"class"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Bucket string `json:"bucket"`
}

// refusalOf decodes result as the gateway's refusal; nil when it is not one.
func refusalOf(result json.RawMessage) *refusal {
	var res struct {
		Content []struct{ Text string }    `json:"content"`
		IsError bool                       `json:"isError"`
		Meta    map[string]json.RawMessage `json:"_meta"`
	}
	var r refusal
	if json.Unmarshal(result, &res) != nil || !res.IsError || len(res.Content) != 1 ||
		json.Unmarshal(res.Meta["io.mcpgate/denial"], &r) != nil {
		return nil
	}
	r.Text = res.Content[0].Text
	return &r
}

// callTool sends tools/call and returns the result (and the refusal it
// carries) or the JSON-RPC error.
func (c *client) callTool(ctx context.Context, name string, args map[string]any) (reply, error) {
	return c.post(ctx, "tools/call", map[string]any{"name": name, "arguments": args}, true)
}

func (c *client) post(ctx context.Context, method string, params any, request bool) (reply, error) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	if request {
		msg["id"] = c.ids.Add(1)
	}
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/mcp", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", protocolVersion)
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.session = sid
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil || !request {
		return reply{}, err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw = sseData(raw)
	}
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return reply{}, fmt.Errorf("%s: HTTP %d, body %q: %v", method, resp.StatusCode, raw, err)
	}
	return reply{result: out.Result, err: out.Error, refusal: refusalOf(out.Result)}, nil
}

// sseData returns the data of the first event of an SSE body.
func sseData(b []byte) []byte {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			return d
		}
	}
	return b
}
