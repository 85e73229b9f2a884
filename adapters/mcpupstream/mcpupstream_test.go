package mcpupstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upstream is a real MCP server (go-sdk) on a real TCP port that tests can
// stop and start again on the same address.
type upstream struct {
	t        testing.TB
	addr     string
	srv      *httptest.Server
	echoRuns atomic.Int64 // echo handler executions since the last start
	notFound atomic.Int64 // HTTP 404 answers to POSTs (lost sessions) since the last start
	conns    atomic.Int64 // connections accepted since the last start
	opts     *mcp.StreamableHTTPOptions

	mu          sync.Mutex
	lastAuth    string
	lastVersion string
	lastArgs    json.RawMessage // the arguments bytes of the last echo call
}

func startUpstream(t testing.TB) *upstream {
	return startUpstreamWith(t, nil)
}

// startUpstreamWith starts an upstream whose handler uses opts; nil is the
// SDK default, a stateful server that hands out Mcp-Session-Id sessions.
func startUpstreamWith(t testing.TB, opts *mcp.StreamableHTTPOptions) *upstream {
	t.Helper()
	u := &upstream{t: t, opts: opts}
	u.start("127.0.0.1:0")
	t.Cleanup(u.stop)
	return u
}

func (u *upstream) url() string { return "http://" + u.addr + "/mcp" }

// start serves a fresh MCP server (no memory of earlier sessions) on addr.
func (u *upstream) start(addr string) {
	u.t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		u.t.Fatalf("listen %s: %v", addr, err)
	}
	u.addr = l.Addr().String()
	u.echoRuns.Store(0)
	u.notFound.Store(0)
	u.conns.Store(0)
	mcpSrv := newTestServer(u)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpSrv }, u.opts)
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.lastAuth = r.Header.Get("Authorization")
		u.lastVersion = r.Header.Get("Mcp-Protocol-Version")
		u.mu.Unlock()
		rec := http.ResponseWriter(w)
		if r.Method == http.MethodPost { // a dropped session's DELETE may also get 404; only calls count
			rec = &statusRecorder{ResponseWriter: w, on404: func() { u.notFound.Add(1) }}
		}
		h.ServeHTTP(rec, r)
	}))
	u.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			u.conns.Add(1)
		}
	}
	u.srv.Listener.Close()
	u.srv.Listener = l
	u.srv.Start()
}

func (u *upstream) stop() {
	if u.srv != nil {
		u.srv.CloseClientConnections()
		u.srv.Close()
		u.srv = nil
		// httptest's Close does this for http.DefaultTransport, which the
		// adapters used before they had a transport of their own: a
		// restarted upstream then meets no connection of the old one.
		inline.CloseIdleConnections() // and keepAlive's
	}
}

func (u *upstream) restart() {
	addr := u.addr
	u.stop()
	u.start(addr)
}

func (u *upstream) seen() (auth, version string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.lastAuth, u.lastVersion
}

type statusRecorder struct {
	http.ResponseWriter
	on404 func()
}

func (s *statusRecorder) WriteHeader(code int) {
	if code == http.StatusNotFound {
		s.on404()
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

var objectSchema = json.RawMessage(`{"type":"object","properties":{"project_id":{"type":"string"}}}`)

func newTestServer(u *upstream) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test-upstream", Version: "1.0.0"}, &mcp.ServerOptions{PageSize: 2})
	add := func(name string, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: "test tool " + name, InputSchema: objectSchema}, h)
	}
	add("echo", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.echoRuns.Add(1)
		u.mu.Lock()
		u.lastArgs = append(json.RawMessage(nil), req.Params.Arguments...)
		u.mu.Unlock()
		var args map[string]any
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: "echoed"}},
			StructuredContent: map[string]any{"arguments": args, "meta": map[string]any(req.Params.Meta)},
		}, nil
	})
	add("fail", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "project prj-9 not found"}}}, nil
	})
	add("image", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte("PNG"), MIMEType: "image/png"}}}, nil
	})
	add("array", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: []any{"a", "b"}}, nil
	})
	add("slow", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return s
}

func newAdapter(t *testing.T, url string, opts Options) *Adapter {
	t.Helper()
	a, err := New(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("New(%s): %v", url, err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

func TestCallToolMapsRequestAndResult(t *testing.T) {
	u := startUpstream(t)
	a := newAdapter(t, u.url(), Options{})
	tests := []struct {
		name        string
		call        gateway.ToolCall
		wantErr     gateway.ErrorCode
		wantIsError bool
		wantContent []map[string]any
		wantStruct  map[string]any
	}{
		{
			name: "arguments and _meta arrive",
			call: gateway.ToolCall{WorkspaceID: "ws-a", TaskID: "task-1", Actor: "user-7", Tool: "echo",
				Arguments: map[string]any{"project_id": "prj-1", "limit": float64(5)}},
			wantContent: []map[string]any{{"type": "text", "text": "echoed"}},
			wantStruct: map[string]any{
				"arguments": map[string]any{"project_id": "prj-1", "limit": json.Number("5")}, // numbers as the upstream wrote them
				"meta":      map[string]any{MetaWorkspaceID: "ws-a", MetaTaskID: "task-1", MetaActor: "user-7"},
			},
		},
		{
			name:        "coordinator without task leaves task_id out and sends empty arguments",
			call:        gateway.ToolCall{WorkspaceID: "ws-b", Actor: "token:ab12", Tool: "echo"},
			wantContent: []map[string]any{{"type": "text", "text": "echoed"}},
			wantStruct: map[string]any{
				"arguments": map[string]any{},
				"meta":      map[string]any{MetaWorkspaceID: "ws-b", MetaActor: "token:ab12"},
			},
		},
		{
			name:        "isError passes through as a result",
			call:        gateway.ToolCall{WorkspaceID: "ws-a", Tool: "fail"},
			wantIsError: true,
			wantContent: []map[string]any{{"type": "text", "text": "project prj-9 not found"}},
		},
		{
			name:        "non-text blocks keep their wire shape",
			call:        gateway.ToolCall{WorkspaceID: "ws-a", Tool: "image"},
			wantContent: []map[string]any{{"type": "image", "data": "UE5H", "mimeType": "image/png"}},
		},
		{
			name:        "non-object structured content becomes a text block",
			call:        gateway.ToolCall{WorkspaceID: "ws-a", Tool: "array"},
			wantContent: []map[string]any{{"type": "text", "text": `["a","b"]`}},
		},
		{
			name:    "unknown upstream tool is invalid",
			call:    gateway.ToolCall{WorkspaceID: "ws-a", Tool: "no.such.tool"},
			wantErr: gateway.EInvalid,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := a.CallTool(context.Background(), tc.call)
			if got := gateway.ErrorCodeOf(err); got != tc.wantErr {
				t.Fatalf("error code = %q (%v), want %q", got, err, tc.wantErr)
			}
			if err != nil {
				if !strings.Contains(gateway.ErrorMessageOf(err), gateway.DisplayURL(u.url())) {
					t.Errorf("message %q does not name the upstream", gateway.ErrorMessageOf(err))
				}
				// A protocol error is raised before any tool runs.
				if !errors.Is(err, gateway.ErrNotDispatched) {
					t.Errorf("error %v is not marked ErrNotDispatched", err)
				}
				return
			}
			if res.IsError != tc.wantIsError {
				t.Errorf("IsError = %v, want %v", res.IsError, tc.wantIsError)
			}
			if !reflect.DeepEqual(res.Content, tc.wantContent) {
				t.Errorf("Content = %#v, want %#v", res.Content, tc.wantContent)
			}
			if !reflect.DeepEqual(res.StructuredContent, tc.wantStruct) {
				t.Errorf("StructuredContent = %#v, want %#v", res.StructuredContent, tc.wantStruct)
			}
		})
	}
}

// TestCallToolForwardsEveryDigit: the upstream receives the client's
// argument bytes; 2^53+1 is not rounded to 2^53 on the way, neither from
// RawArguments nor from json.Number Arguments of a call built in Go.
func TestCallToolForwardsEveryDigit(t *testing.T) {
	u := startUpstream(t)
	a := newAdapter(t, u.url(), Options{})
	const big = "9007199254740993"
	for name, call := range map[string]gateway.ToolCall{
		"raw": {Tool: "echo", RawArguments: json.RawMessage(`{"n":` + big + `,"x":1.50}`),
			Arguments: map[string]any{"n": json.Number(big), "x": json.Number("1.50")}},
		"decoded": {Tool: "echo", Arguments: map[string]any{"n": json.Number(big), "x": json.Number("1.50")}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := a.CallTool(context.Background(), call); err != nil {
				t.Fatal(err)
			}
			u.mu.Lock()
			got := string(u.lastArgs)
			u.mu.Unlock()
			if !strings.Contains(got, `"n":`+big) || !strings.Contains(got, `"x":1.50`) {
				t.Errorf("upstream got arguments %s, want n %s and x 1.50 as sent", got, big)
			}
		})
	}
}

func TestOptionsReachUpstream(t *testing.T) {
	u := startUpstream(t)
	a := newAdapter(t, u.url(), Options{
		Header:          http.Header{"Authorization": {"Bearer upstream-secret"}},
		ProtocolVersion: "2025-06-18",
	})
	if _, err := a.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: "ws-a", Tool: "echo"}); err != nil {
		t.Fatal(err)
	}
	if auth, version := u.seen(); auth != "Bearer upstream-secret" || version != "2025-06-18" {
		t.Errorf("upstream saw Authorization %q, Mcp-Protocol-Version %q", auth, version)
	}
}

func TestListToolsFollowsPagination(t *testing.T) {
	u := startUpstream(t) // PageSize 2 and 5 tools: three pages
	a := newAdapter(t, u.url(), Options{})
	tools, err := a.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
		var got, want any
		_ = json.Unmarshal(tl.InputSchema, &got)
		_ = json.Unmarshal(objectSchema, &want)
		if !reflect.DeepEqual(got, want) || tl.Description != "test tool "+tl.Name {
			t.Errorf("tool %s: schema %s, description %q", tl.Name, tl.InputSchema, tl.Description)
		}
	}
	if want := []string{"array", "echo", "fail", "image", "slow"}; !reflect.DeepEqual(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
}

func TestNewRefusesBadURLAndDeadUpstream(t *testing.T) {
	dead := deadAddr(t)
	tests := []struct {
		name    string
		url     string
		want    gateway.ErrorCode
		wantMsg string
	}{
		{name: "relative URL", url: "/mcp", want: gateway.EInvalid, wantMsg: "not an absolute http(s) URL"},
		{name: "wrong scheme", url: "ftp://example.com/mcp", want: gateway.EInvalid, wantMsg: "MCPGATE_UPSTREAM_URL"},
		{name: "nothing listening", url: "http://" + dead + "/mcp", want: gateway.EUnavailable,
			wantMsg: "upstream MCP server http://" + dead + " unreachable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(context.Background(), tc.url, Options{Timeout: 2 * time.Second})
			if err == nil {
				_ = a.Close()
				t.Fatal("New succeeded")
			}
			if gateway.ErrorCodeOf(err) != tc.want || !strings.Contains(gateway.ErrorMessageOf(err), tc.wantMsg) {
				t.Errorf("got %q %q, want %q containing %q", gateway.ErrorCodeOf(err), gateway.ErrorMessageOf(err), tc.want, tc.wantMsg)
			}
		})
	}
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestUpstreamDownIsUnavailable(t *testing.T) {
	u := startUpstream(t)
	a := newAdapter(t, u.url(), Options{})
	u.stop()
	_, err := a.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: "ws-a", Tool: "echo"})
	if gateway.ErrorCodeOf(err) != gateway.EUnavailable {
		t.Fatalf("error = %v, want EUnavailable", err)
	}
	if want := "upstream MCP server " + gateway.DisplayURL(u.url()) + " unreachable"; !strings.Contains(gateway.ErrorMessageOf(err), want) {
		t.Errorf("message %q lacks %q", gateway.ErrorMessageOf(err), want)
	}
	if !errors.Is(err, gateway.ErrNotDispatched) {
		t.Errorf("a call to a stopped upstream is not marked ErrNotDispatched: %v", err)
	}
	if _, err := a.ListTools(context.Background()); gateway.ErrorCodeOf(err) != gateway.EUnavailable {
		t.Errorf("ListTools error = %v, want EUnavailable", err)
	}
}

func TestUpstreamRestartRecovers(t *testing.T) {
	tests := []struct {
		name         string
		stateless    bool
		downCall     bool // a call fails while the upstream is down
		wantLost404s bool // the restarted upstream saw the old session id
	}{
		{name: "session server, restart between calls", wantLost404s: true},
		{name: "session server, call while down", downCall: true},
		{name: "stateless server, restart between calls", stateless: true},
		{name: "stateless server, call while down", stateless: true, downCall: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := startUpstreamWith(t, &mcp.StreamableHTTPOptions{Stateless: tc.stateless})
			a := newAdapter(t, u.url(), Options{})
			call := gateway.ToolCall{WorkspaceID: "ws-a", Tool: "echo", Arguments: map[string]any{"n": float64(1)}}
			if _, err := a.CallTool(context.Background(), call); err != nil {
				t.Fatalf("first call: %v", err)
			}
			if tc.downCall {
				u.stop()
				if _, err := a.CallTool(context.Background(), call); gateway.ErrorCodeOf(err) != gateway.EUnavailable {
					t.Fatalf("call while down: %v, want EUnavailable", err)
				}
				u.start(u.addr)
			} else {
				u.restart()
			}
			res, err := a.CallTool(context.Background(), call)
			if err != nil {
				t.Fatalf("call after restart: %v", err)
			}
			if res.StructuredContent["arguments"].(map[string]any)["n"] != json.Number("1") {
				t.Errorf("result after restart = %#v", res.StructuredContent)
			}
			if n := u.echoRuns.Load(); n != 1 {
				t.Errorf("restarted upstream ran echo %d times, want exactly 1", n)
			}
			if got := u.notFound.Load() > 0; got != tc.wantLost404s {
				t.Errorf("restarted upstream answered 404: %v, want %v", got, tc.wantLost404s)
			}
		})
	}
}

func TestTimeoutIsUnavailable(t *testing.T) {
	u := startUpstream(t)
	a := newAdapter(t, u.url(), Options{Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := a.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: "ws-a", Tool: "slow"})
	if gateway.ErrorCodeOf(err) != gateway.EUnavailable || !strings.Contains(gateway.ErrorMessageOf(err), "did not answer") {
		t.Fatalf("error = %v, want EUnavailable timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timeout took %v", d)
	}
	// The request reached the upstream: whether the tool ran is unknown.
	if errors.Is(err, gateway.ErrNotDispatched) {
		t.Errorf("a timed-out call is marked ErrNotDispatched: %v", err)
	}
	// The session survives a slow call.
	if _, err := a.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: "ws-a", Tool: "echo"}); err != nil {
		t.Errorf("call after timeout: %v", err)
	}
}

// Concurrent calls across an upstream restart: a call that overlapped
// another when the session was lost cannot tell whether the upstream ran
// it, so it is not sent again; it fails with EUnavailable, not marked
// ErrNotDispatched. No call runs twice, and the adapter recovers: the next
// round all succeeds on a fresh session.
func TestConcurrentCallsAcrossRestart(t *testing.T) {
	u := startUpstream(t)
	a := newAdapter(t, u.url(), Options{})
	run := func(round int) (ok int) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range 16 {
			wg.Go(func() {
				ws := fmt.Sprintf("ws-%d", i%4)
				res, err := a.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: ws, Tool: "echo"})
				if err != nil {
					if gateway.ErrorCodeOf(err) != gateway.EUnavailable || errors.Is(err, gateway.ErrNotDispatched) {
						t.Errorf("round %d call %d: %v, want EUnavailable with an unknown outcome", round, i, err)
					}
					return
				}
				if got := res.StructuredContent["meta"].(map[string]any)[MetaWorkspaceID]; got != ws {
					t.Errorf("round %d call %d: workspace %v, want %s", round, i, got, ws)
				}
				mu.Lock()
				ok++
				mu.Unlock()
			})
		}
		wg.Wait()
		return ok
	}
	if ok := run(1); ok != 16 {
		t.Fatalf("round 1: %d of 16 calls succeeded", ok)
	}
	u.restart()
	ok := run(2)
	if n := u.echoRuns.Load(); n != int64(ok) {
		t.Errorf("after the restart the upstream ran echo %d times for %d successful calls: a call ran twice or a failure ran", n, ok)
	}
	if ok := run(3); ok != 16 {
		t.Errorf("round 3: %d of 16 calls succeeded, want all: the adapter did not recover", ok)
	}
}

func TestClosedAdapterRefuses(t *testing.T) {
	u := startUpstream(t)
	a, err := New(context.Background(), u.url(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err = a.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: "ws-a", Tool: "echo"})
	var gerr *gateway.Error
	if !errors.As(err, &gerr) || gerr.Code != gateway.EUnavailable || !errors.Is(err, gateway.ErrNotDispatched) {
		t.Errorf("call after Close = %v, want EUnavailable marked ErrNotDispatched", err)
	}
}

// A call the upstream is already running must never be sent again nor be
// reported as not dispatched when another call on the shared session meets
// the upstream's 404 for a lost session: the SDK fails every call in
// flight on that session with the same error (found in review; the
// deploy ran twice, or its idempotency key was freed for a second deploy).
func TestLostSessionDuringACallIsNotNeverDelivered(t *testing.T) {
	for _, refuseReconnect := range []bool{false, true} {
		t.Run(fmt.Sprintf("reconnect refused %v", refuseReconnect), func(t *testing.T) {
			var runs atomic.Int64
			started, release := make(chan struct{}, 4), make(chan struct{})
			s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
			s.AddTool(&mcp.Tool{Name: "deploy", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				runs.Add(1)
				started <- struct{}{}
				select {
				case <-release:
				case <-time.After(2 * time.Second):
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deployed"}}}, nil
			})
			s.AddTool(&mcp.Tool{Name: "echo", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}}, nil
			})
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
			var forget, refuse atomic.Bool
			var known atomic.Value
			known.Store("")
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				id := r.Header.Get("Mcp-Session-Id")
				if !forget.Load() && id != "" {
					known.Store(id)
				}
				if forget.Load() && id == known.Load().(string) && r.Method == http.MethodPost {
					http.Error(w, "session not found", http.StatusNotFound) // the upstream evicted the session
					return
				}
				if refuse.Load() && id == "" {
					http.Error(w, "overloaded", http.StatusInternalServerError)
					return
				}
				h.ServeHTTP(w, r)
			}))
			defer srv.Close()
			a := newAdapter(t, srv.URL, Options{Timeout: 5 * time.Second})
			done := make(chan error, 1)
			go func() {
				_, err := a.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: "ws", Tool: "deploy"})
				done <- err
			}()
			<-started // the deploy runs on the upstream
			forget.Store(true)
			refuse.Store(refuseReconnect)
			_, _ = a.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: "ws", Tool: "echo"})
			var err error
			select {
			case err = <-done:
				close(release)
			case <-time.After(time.Second):
				close(release)
				err = <-done
			}
			time.Sleep(100 * time.Millisecond) // let a wrong retry reach the upstream
			if errors.Is(err, gateway.ErrNotDispatched) {
				t.Errorf("the running deploy's error %v is marked not dispatched", err)
			}
			if n := runs.Load(); n != 1 {
				t.Errorf("the deploy ran %d times, want exactly once", n)
			}
		})
	}
}

// A call whose caller has already gone is not sent: the upstream would run
// a tool nobody waits for.
func TestCallToolWithEndedContextSendsNothing(t *testing.T) {
	u := startUpstream(t)
	a := newAdapter(t, u.url(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := a.CallTool(ctx, gateway.ToolCall{WorkspaceID: "ws-a", Tool: "echo"})
	if err == nil || !errors.Is(err, gateway.ErrNotDispatched) {
		t.Errorf("CallTool with a cancelled context: %v; want an error marked not dispatched", err)
	}
	if n := u.echoRuns.Load(); n != 0 {
		t.Errorf("the upstream ran the tool %d times for a caller that had gone", n)
	}
}

// Issue 8, point 5: an API key in the query of MCPGATE_UPSTREAM_URL, or a
// password in it, appeared in the errors (and so the log lines) of a
// gateway whose upstream was down.
func TestUpstreamURLSecretsStayOutOfErrors(t *testing.T) {
	const key, pw = "TOPSECRET-key-42", "hunter2-pw"
	leaks := func(t *testing.T, what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		for _, text := range []string{err.Error(), fmt.Sprintf("%+v", err), gateway.ErrorMessageOf(err)} {
			if strings.Contains(text, key) || strings.Contains(text, pw) {
				t.Errorf("%s: the error shows a secret of the URL: %s", what, text)
			}
		}
	}
	t.Run("down at start", func(t *testing.T) {
		_, err := New(context.Background(), "http://svc:"+pw+"@"+deadAddr(t)+"/mcp?api_key="+key+"&region=eu", Options{Timeout: 2 * time.Second})
		leaks(t, "New", err)
	})
	t.Run("down later", func(t *testing.T) {
		u := startUpstream(t)
		a := newAdapter(t, strings.Replace(u.url(), "http://", "http://svc:"+pw+"@", 1)+"?api_key="+key, Options{})
		u.stop()
		_, err := a.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: "ws-a", Tool: "echo"})
		leaks(t, "CallTool", err)
		_, err = a.ListTools(context.Background())
		leaks(t, "ListTools", err)
	})
	t.Run("bad URL", func(t *testing.T) {
		_, err := New(context.Background(), "ftp://svc:"+pw+"@host/mcp?api_key="+key, Options{})
		leaks(t, "New", err)
	})
}

// Issue 22, item 15: a secret in the upstream URL's path
// (https://host/mcp/SECRET-TOKEN) reached clients and the log. Wherever the
// upstream is named, only its scheme, host and port are shown.
func TestUpstreamURLPathRedacted(t *testing.T) {
	const tok = "SECRET-PATH-TOKEN-77"
	for raw, want := range map[string]string{
		"https://tools.internal/mcp/" + tok:                        "https://tools.internal",
		"http://svc:pw@tools.internal:8080/" + tok + "?k=v#frag":   "http://tools.internal:8080",
		"http://[::1]:9/" + tok:                                    "http://[::1]:9",
		"postgres://u:pw@db.internal:5432/" + tok + "?sslmode=off": "postgres://db.internal:5432",
	} {
		if got := gateway.DisplayURL(raw); got != want {
			t.Errorf("gateway.DisplayURL(%q) = %q; want %q", raw, got, want)
		}
	}
	shows := func(t *testing.T, what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		for _, text := range []string{err.Error(), fmt.Sprintf("%+v", err), gateway.ErrorMessageOf(err)} {
			if strings.Contains(text, tok) {
				t.Errorf("%s: the error shows the URL's path secret: %s", what, text)
			}
		}
	}
	_, err := New(context.Background(), "http://"+deadAddr(t)+"/mcp/"+tok, Options{Timeout: 2 * time.Second})
	shows(t, "New", err)
	u := startUpstream(t)
	a := newAdapter(t, u.url()+"/"+tok, Options{})
	if strings.Contains(a.URL(), tok) {
		t.Errorf("URL() = %q shows the path secret", a.URL())
	}
	u.stop()
	_, err = a.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: "ws-a", Tool: "echo"})
	shows(t, "CallTool", err)
	_, err = a.ListTools(context.Background())
	shows(t, "ListTools", err)
}
