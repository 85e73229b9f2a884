package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/adapters/bridge"
	"github.com/mcpgate/mcpgate/adapters/bridge/bridgetest"
	"github.com/mcpgate/mcpgate/gateway"
)

var objectSchema = json.RawMessage(`{"type":"object"}`)

// sdkServer is a go-sdk MCP server named name whose tool "echo" answers
// "<name>:<the argument bytes it received>", behind a switch that makes
// it misbehave on tools/call (mode) or refuse everything (down).
type sdkServer struct {
	*mcp.Server
	url     string
	name    string
	mode    atomic.Value // "" or one of the misbehaviours of serve
	down    atomic.Bool
	noGET   atomic.Bool   // answer GET 405: no stream, so no list_changed is heard
	entered chan struct{} // a misbehaving tools/call arrived
	srv     *httptest.Server
}

func newSDKServer(t *testing.T, name string) *sdkServer {
	t.Helper()
	s := &sdkServer{name: name, entered: make(chan struct{}, 16)}
	s.mode.Store("")
	s.Server = mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", Description: "echo of " + name, InputSchema: objectSchema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + ":" + string(req.Params.Arguments)}}}, nil
		})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.Server }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, sdk) }))
	t.Cleanup(srv.Close)
	s.srv = srv
	s.url = srv.URL + "/mcp/key-in-the-path"
	return s
}

// serve answers r as the SDK would, unless the server is down (503 to
// everything) or r is a tools/call while a misbehaviour is on.
func (s *sdkServer) serve(w http.ResponseWriter, r *http.Request, sdk http.Handler) {
	if s.down.Load() {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	if r.Method == http.MethodGet && s.noGET.Load() {
		http.Error(w, "no stream", http.StatusMethodNotAllowed)
		return
	}
	bridgetest.Wrap(sdk, func(string) string {
		mode := s.mode.Load().(string)
		if mode != "" {
			s.entered <- struct{}{}
		}
		return mode
	}).ServeHTTP(w, r)
}

func newBridge(t *testing.T, opts bridge.Options, servers ...*sdkServer) *bridge.Bridge {
	t.Helper()
	for _, s := range servers {
		opts.Upstreams = append(opts.Upstreams, bridge.Upstream{Name: s.name, Prefix: s.name + ".", URL: s.url, Tier: gateway.TierRead})
	}
	b, err := bridge.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func text(res *gateway.ToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	s, _ := res.Content[0]["text"].(string)
	return s
}

// Two upstreams' tools are listed under their prefixes, with the
// upstream's annotations kept apart and the file's tier, and a call goes
// to the upstream that owns the tool, under its own name, with the
// client's exact bytes.
func TestBridgeListsAndRoutes(t *testing.T) {
	alpha, beta := newSDKServer(t, "alpha"), newSDKServer(t, "beta")
	b := newBridge(t, bridge.Options{}, alpha, beta)
	var names []string
	for _, tl := range b.Tools() {
		names = append(names, tl.Name)
		if tl.Listed.Name != "echo" || tl.Tier != gateway.TierRead || !strings.Contains(string(tl.Listed.Annotations), `"readOnlyHint":true`) {
			t.Errorf("tool %+v: want the upstream's name echo, tier read and its annotations as sent", tl)
		}
	}
	if strings.Join(names, ",") != "alpha.echo,beta.echo" {
		t.Fatalf("registry %v", names)
	}
	for _, st := range b.Status() {
		if st.State != bridge.StateOK || st.Tools != 1 {
			t.Errorf("status %+v", st)
		}
	}
	args := `{"n":123456789012345678901234567890.000001,"s":"é"}`
	for _, up := range []string{"alpha", "beta"} {
		res, err := b.CallTool(context.Background(), gateway.ToolCall{Tool: up + ".echo", RawArguments: json.RawMessage(args), WorkspaceID: "ws"})
		if err != nil || res.IsError {
			t.Fatalf("%s.echo: %v %+v", up, err, res)
		}
		if got := text(res); got != up+":"+args {
			t.Errorf("%s.echo answered %q; want %q (its upstream, the exact bytes)", up, got, up+":"+args)
		}
	}
	_, err := b.CallTool(context.Background(), gateway.ToolCall{Tool: "echo"})
	var ge *gateway.Error
	if !errors.As(err, &ge) || ge.Code != gateway.ENotFound || !errors.Is(err, gateway.ErrNotDispatched) {
		t.Errorf("a name that is not bridged: %v", err)
	}
}

// One upstream misbehaving (slow past the timeout, a reply that never
// ends, not JSON, a JSON-RPC error, down, a 10 MB reply past the default
// bound) fails only its own calls, within the timeout, as a tool
// execution error naming it and not its address, while calls to the
// other upstream, made during the bad call, succeed.
func TestBridgeIsolatesAMisbehavingUpstream(t *testing.T) {
	good, bad := newSDKServer(t, "good"), newSDKServer(t, "bad")
	const timeout = 3 * time.Second
	b := newBridge(t, bridge.Options{Timeout: timeout}, good, bad)
	host := strings.TrimPrefix(bad.url, "http://")
	host = host[:strings.IndexByte(host, '/')]
	for _, tc := range []struct{ mode, want, reason string }{
		{"slow", "did not answer", "[upstream.timeout]"},
		{"endless", "did not answer", "[upstream.timeout]"},
		{"garbage", "not a JSON-RPC message", "[upstream.malformed_reply]"},
		// An event that is not JSON is skipped (as a ping of some servers
		// is); the call still ends at the timeout.
		{"garbage-event", "did not answer", "[upstream.timeout]"},
		{"rpc-error", "backend exploded", "[upstream.rpc_error]"},
		{"down", "502", "[upstream.malformed_reply]"},
		{"huge", "8 MiB", "[upstream.reply_too_large]"},
		{"truncated", "not a JSON-RPC message", "[upstream.malformed_reply]"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			bad.mode.Store(tc.mode)
			defer bad.mode.Store("")
			badDone := make(chan *gateway.ToolResult, 1)
			go func() {
				start := time.Now()
				res, err := b.CallTool(context.Background(), gateway.ToolCall{Tool: "bad.echo", RawArguments: json.RawMessage(`{}`)})
				if err != nil {
					t.Errorf("bad.echo returned an error instead of a tool execution error: %v", err)
				}
				if took := time.Since(start); took > timeout+time.Second {
					t.Errorf("bad.echo (%s) answered after %v; want within the timeout (%v)", tc.mode, took, timeout)
				}
				badDone <- res
			}()
			<-bad.entered // the bad call is at the upstream
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					args := fmt.Sprintf(`{"i":%d}`, i)
					res, err := b.CallTool(context.Background(), gateway.ToolCall{Tool: "good.echo", RawArguments: json.RawMessage(args)})
					if err != nil || res.IsError || text(res) != "good:"+args {
						t.Errorf("good.echo during a %s call of bad: %v %q", tc.mode, err, text(res))
					}
				}()
			}
			wg.Wait()
			if tc.mode == "slow" || tc.mode == "endless" {
				select {
				case res := <-badDone:
					t.Fatalf("the %s call of bad returned before the good calls were done: %q", tc.mode, text(res))
				default:
				}
			}
			res := <-badDone
			if res == nil || !res.IsError || !strings.Contains(text(res), `upstream "bad"`) || !strings.Contains(text(res), tc.want) || !strings.Contains(text(res), tc.reason) {
				t.Errorf("bad.echo (%s): %+v; want a tool execution error naming upstream \"bad\", reason %s and saying %q", tc.mode, res, tc.reason, tc.want)
			}
			if strings.Contains(text(res), host) || strings.Contains(text(res), "key-in-the-path") {
				t.Errorf("bad.echo (%s) shows the upstream's address: %q", tc.mode, text(res))
			}
		})
	}
}

// An upstream that refuses the connection after it was listed gives an
// error marked not dispatched (the tool never ran), naming the upstream
// with reason upstream.unreachable, while the other upstream answers.
func TestBridgeUnreachableIsNotDispatched(t *testing.T) {
	good, gone := newSDKServer(t, "good"), newSDKServer(t, "gone")
	b := newBridge(t, bridge.Options{Timeout: 3 * time.Second}, good, gone)
	gone.srv.CloseClientConnections()
	gone.srv.Close()
	_, err := b.CallTool(context.Background(), gateway.ToolCall{Tool: "gone.echo", RawArguments: json.RawMessage(`{}`)})
	var ge *gateway.Error
	if !errors.As(err, &ge) || !errors.Is(err, gateway.ErrNotDispatched) || !ge.UpstreamFailure || len(ge.Reasons) != 1 ||
		ge.Reasons[0].Code != "upstream.unreachable" || !strings.Contains(ge.Message, `upstream "gone"`) {
		t.Fatalf("call of a tool whose upstream refuses connections: %v (%+v); want a not-dispatched upstream failure naming it, reason upstream.unreachable", err, ge)
	}
	res, err := b.CallTool(context.Background(), gateway.ToolCall{Tool: "good.echo", RawArguments: json.RawMessage(`{}`)})
	if err != nil || res.IsError {
		t.Errorf("good.echo beside an unreachable upstream: %v %+v", err, res)
	}
}

// An upstream down at start is degraded, not an error; once it answers a
// refresh lists its tools (and says the registry changed); down again, a
// refresh keeps its last tools, and a call of one is a tool execution
// error naming it.
func TestBridgeDegradedUpstream(t *testing.T) {
	up, other := newSDKServer(t, "flaky"), newSDKServer(t, "steady")
	up.down.Store(true)
	var changes atomic.Int32
	b := newBridge(t, bridge.Options{Timeout: 3 * time.Second, OnChange: func() { changes.Add(1) }}, up, other)
	st := b.Status()
	if st[0].State != bridge.StateDegraded || st[0].Tools != 0 || st[1].State != bridge.StateOK {
		t.Fatalf("status with flaky down at start: %+v", st)
	}
	if _, ok := b.Lookup("flaky.echo"); ok {
		t.Fatal("a tool of an upstream never listed is in the registry")
	}
	if _, ok := b.Lookup("steady.echo"); !ok {
		t.Fatal("the other upstream's tool is missing")
	}
	n := changes.Load()

	up.down.Store(false)
	if err := b.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := b.Status(); st[0].State != bridge.StateOK || st[0].Tools != 1 {
		t.Fatalf("status once flaky answers: %+v", st)
	}
	if changes.Load() != n+1 {
		t.Errorf("OnChange called %d times for the new tools; want once", changes.Load()-n)
	}

	up.down.Store(true)
	err := b.Refresh(context.Background())
	if err == nil || !strings.Contains(err.Error(), `"flaky"`) {
		t.Errorf("refresh with flaky down: %v; want its failure naming it", err)
	}
	if st := b.Status(); st[0].State != bridge.StateDegraded || st[0].Tools != 1 {
		t.Fatalf("status with flaky down again: %+v; want degraded with its last tool kept", st)
	}
	if changes.Load() != n+1 {
		t.Error("a failed refresh changed the registry")
	}
	// The call never reached flaky (its session could not be made): an
	// error marked not dispatched, naming it (#25 step 3; it used to be
	// a tool execution error, which hid that the tool never ran).
	_, err = b.CallTool(context.Background(), gateway.ToolCall{Tool: "flaky.echo", RawArguments: json.RawMessage(`{}`)})
	if !errors.Is(err, gateway.ErrNotDispatched) || !strings.Contains(gateway.ErrorMessageOf(err), `upstream "flaky"`) {
		t.Errorf("call of flaky's kept tool while it is down: %v; want a not-dispatched error naming it", err)
	}
}

// A tool the upstream adds, a changed description and a removed tool show
// at the next refresh.
//
// The upstream offers no GET stream, so that only Refresh lists it
// (TestBridgeHearsListChanged covers its notifications).
func TestBridgeRefreshFollowsTheUpstream(t *testing.T) {
	s := newSDKServer(t, "live")
	s.noGET.Store(true)
	var changes atomic.Int32
	b := newBridge(t, bridge.Options{OnChange: func() { changes.Add(1) }}, s)
	n := changes.Load()
	s.AddTool(&mcp.Tool{Name: "added", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	if err := b.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Lookup("live.added"); !ok || changes.Load() != n+1 {
		t.Fatalf("after the upstream added a tool: found %v, changes %d", ok, changes.Load()-n)
	}
	if err := b.Refresh(context.Background()); err != nil || changes.Load() != n+1 {
		t.Fatalf("a refresh with nothing changed: %v, changes %d; want none", err, changes.Load()-n)
	}
	s.AddTool(&mcp.Tool{Name: "echo", Description: "a new description", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	s.RemoveTools("added")
	if err := b.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	tl, ok := b.Lookup("live.echo")
	if _, gone := b.Lookup("live.added"); gone || !ok || tl.Listed.Description != "a new description" || changes.Load() != n+2 {
		t.Errorf("after a removal and a new description: %+v (added still there: %v), changes %d", tl, gone, changes.Load()-n)
	}
}

func TestBridgeRefusesABadURL(t *testing.T) {
	_, err := bridge.New(context.Background(), bridge.Options{Upstreams: []bridge.Upstream{{Name: "x", Prefix: "x.", URL: "ftp://secret@host/"}}})
	if err == nil || !strings.Contains(err.Error(), `"x"`) || strings.Contains(err.Error(), "secret") {
		t.Fatalf("ftp URL: %v", err)
	}
}

// An upstream's notifications/tools/list_changed refreshes the registry
// without waiting for the refresh interval (an hour here).
func TestBridgeHearsListChanged(t *testing.T) {
	s := newSDKServer(t, "notifying")
	changed := make(chan struct{}, 8)
	b := newBridge(t, bridge.Options{Refresh: time.Hour, OnChange: func() { changed <- struct{}{} }}, s)
	<-changed // the first listing
	s.AddTool(&mcp.Tool{Name: "fresh", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("no refresh after the upstream announced its new tool")
	}
	if _, ok := b.Lookup("notifying.fresh"); !ok {
		t.Errorf("registry after list_changed: %+v", b.Tools())
	}
}

// Without a Refresh call or a list_changed (the upstream offers no GET
// stream), the refresh interval alone lists again: an upstream down at
// start has its tools once it answers, and a tool it adds later shows,
// each within an interval or two.
func TestBridgeRefreshesEveryInterval(t *testing.T) {
	s := newSDKServer(t, "late")
	s.noGET.Store(true)
	s.down.Store(true)
	const interval = 200 * time.Millisecond
	b := newBridge(t, bridge.Options{Refresh: interval, Timeout: 2 * time.Second}, s)
	if st := b.Status(); st[0].State != bridge.StateDegraded || len(b.Tools()) != 0 {
		t.Fatalf("status with the upstream down at start: %+v, tools %+v", st, b.Tools())
	}
	within := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * interval)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v of a %v refresh interval", what, 5*interval, interval)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	s.down.Store(false)
	within("the upstream's tools once it answers", func() bool {
		_, ok := b.Lookup("late.echo")
		return ok && b.Status()[0].State == bridge.StateOK
	})
	s.AddTool(&mcp.Tool{Name: "later", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	within("a tool the upstream added", func() bool { _, ok := b.Lookup("late.later"); return ok })
}

// An upstream that accepts the connection and never answers (not even the
// handshake) holds the start at most the timeout: New returns with it
// degraded and the other upstream's tools listed.
func TestBridgeStartBoundedByTheTimeout(t *testing.T) {
	hung := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // so that net/http hears the client hang up, which ends r's context
		<-r.Context().Done()
	}))
	t.Cleanup(hung.Close)
	steady := newSDKServer(t, "steady")
	const timeout = time.Second
	start := time.Now()
	b := newBridge(t, bridge.Options{Timeout: timeout, Upstreams: []bridge.Upstream{{Name: "hung", Prefix: "hung.", URL: hung.URL + "/mcp", Tier: gateway.TierRead}}}, steady)
	if took := time.Since(start); took > timeout+time.Second {
		t.Errorf("New took %v with an upstream that never answers; want at most the timeout (%v) and some slack", took, timeout)
	}
	st := b.Status()
	if st[0].Name != "hung" || st[0].State != bridge.StateDegraded || st[1].State != bridge.StateOK {
		t.Errorf("status %+v; want hung degraded and steady ok", st)
	}
	if _, ok := b.Lookup("steady.echo"); !ok {
		t.Errorf("registry %+v; want steady's tool", b.Tools())
	}
}
