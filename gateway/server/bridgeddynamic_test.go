package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/test/upstreamtest"
)

// switchedUpstream is a go-sdk MCP server of the tools given behind a
// switch: while down is true it answers every request 503; with noGET it
// refuses the standalone GET stream, so that the gateway hears no
// list_changed from it and only its refreshes see a change.
func switchedUpstream(t *testing.T, down *atomic.Bool, noGET bool, names ...string) (*mcp.Server, string) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "switched", Version: "1"}, nil)
	for _, n := range names {
		upstreamtest.SetTool(s, n, "Tool "+n+".", false)
	}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case down.Load():
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		case noGET && r.Method == http.MethodGet:
			http.Error(w, "no stream", http.StatusMethodNotAllowed)
		default:
			sdk.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return s, srv.URL + "/mcp"
}

// toldAndCallable waits up to wait for the session to be told its tools
// changed, then checks that tools/list shows tool and that a call of it
// answers want.
func toldAndCallable(t *testing.T, cs *mcp.ClientSession, changed <-chan struct{}, tool, want string, wait time.Duration) {
	t.Helper()
	select {
	case <-changed:
	case <-time.After(wait):
		t.Fatalf("no notifications/tools/list_changed within %v; want one before %s is listed", wait, tool)
	}
	if got := sessionTools(t, cs); !slices.Contains(got, tool) {
		t.Fatalf("tools/list after the change: %v, want %s", got, tool)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != want {
		t.Fatalf("call of %s: %+v %v; want %q", tool, res, err, want)
	}
}

// An upstream that is down when the gateway starts does not stop it: its
// tools are absent and /readyz names it degraded (by name, not address)
// while the other upstream serves. Once it answers, the refresh interval
// alone (it sends no list_changed) brings its tools in, the connected
// clients are told with tools/list_changed (a 2026-07-28 client on its
// subscription, a 2025-11-25 session on its GET stream) and can call
// them, and /readyz says ok. An upstream that stops answering after it
// was listed keeps its tools listed, is named degraded, and a call of
// its tool is refused naming it.
func TestBridgedUpstreamDownAtStartComesBack(t *testing.T) {
	var trackerDown, forgeDown atomic.Bool
	trackerDown.Store(true)
	_, forgeURL := switchedUpstream(t, &forgeDown, false, "issues.list")
	_, trackerURL := switchedUpstream(t, &trackerDown, true, "tickets.get")
	app, _, err := upstreamsAppWith(t, `{"upstreams":[
	  {"name":"forge","url":"`+forgeURL+`","tier":"read"},
	  {"name":"tracker","url":"`+trackerURL+`","tier":"read"}
	]}`, map[string]string{"MCPGATE_UPSTREAM_REFRESH": "1s"})
	if err != nil {
		t.Fatalf("an upstream down at start stopped the start: %v", err)
	}
	p := seedAgent(t, app, "supacloud.forge.*", "supacloud.tracker.*")
	cs, changed := agentSession(t, app) // 2026-07-28: told on its subscriptions/listen stream
	oldChanged := make(chan struct{}, 16)
	old := agentClient(t, app, "2025-11-25", &mcp.ClientOptions{ // a session: told on its GET stream
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { oldChanged <- struct{}{} },
	})
	sessionTools(t, old) // its baseline
	if got := sessionTools(t, cs); !slices.Contains(got, "forge.issues.list") || slices.Contains(got, "tracker.tickets.get") {
		t.Fatalf("tools/list with tracker down: %v; want forge's tool and none of tracker's", got)
	}
	if text, code := callBridged(app, p, "tracker.tickets.get"); code == "" {
		t.Errorf("a call of a tool of tracker, never listed, answered %q; want it refused as an unknown tool", text)
	}
	code, ready := request(t, app, http.MethodGet, "/readyz")
	trackerHost := strings.TrimPrefix(trackerURL, "http://")
	trackerHost = trackerHost[:strings.IndexByte(trackerHost, '/')]
	if code != http.StatusOK || !strings.Contains(ready, `"forge":"ok","tracker":"degraded"`) || strings.Contains(ready, trackerHost) {
		t.Errorf("/readyz %d %s: want 200 naming tracker degraded, without its address", code, ready)
	}

	trackerDown.Store(false)
	toldAndCallable(t, cs, changed, "tracker.tickets.get", "tickets.get ran", 4*time.Second)
	toldAndCallable(t, old, oldChanged, "tracker.tickets.get", "tickets.get ran", time.Second)
	if _, ready := request(t, app, http.MethodGet, "/readyz"); !strings.Contains(ready, `"forge":"ok","tracker":"ok"`) {
		t.Errorf("/readyz once tracker answers: %s", ready)
	}

	// forge stops answering after it was listed: a failed refresh keeps
	// its tools listed (the client sees the same list), /readyz names it
	// degraded, and a call of its tool is a tool execution error naming
	// it (the tool never ran).
	forgeDown.Store(true)
	waitFor(t, "/readyz to name forge degraded", func() bool {
		_, ready := request(t, app, http.MethodGet, "/readyz")
		return strings.Contains(ready, `"forge":"degraded","tracker":"ok"`)
	})
	if got := sessionTools(t, cs); !slices.Contains(got, "forge.issues.list") {
		t.Errorf("tools/list with forge down after it was listed: %v; want its last listed tools kept", got)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "forge.issues.list", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), `upstream "forge"`) {
		t.Errorf("call of forge's tool while it is down: %+v %v; want a tool execution error naming it", res, err)
	}
}

// Every replica converges on the same registry within the refresh
// interval, without hearing the upstream's list_changed: two gateways on
// one PostgreSQL bridge an upstream that offers no GET stream; a tool it
// adds is listed by both within the interval (and some slack for the
// listing), and so is a tool it removes.
func TestBridgedReplicasConvergeWithinTheRefreshInterval(t *testing.T) {
	var down atomic.Bool
	forge, forgeURL := switchedUpstream(t, &down, true, "issues.list")
	file := filepath.Join(t.TempDir(), "upstreams.json")
	if err := os.WriteFile(file, []byte(`{"upstreams":[{"name":"forge","url":"`+forgeURL+`","tier":"read","new_tools":"allow"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const interval = time.Second
	reps := openReplicas(t, 2, func(_ int, vars map[string]string) {
		vars["MCPGATE_UPSTREAMS_FILE"] = file
		vars["MCPGATE_UPSTREAM_REFRESH"] = interval.String()
	})
	p := &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "u1", WorkspaceID: "ws-a", TaskID: "t1", ProfileID: "bot"}
	lists := func(r *replica, tool string) bool { return slices.Contains(listedNames(t, r.app, p), tool) }
	for i, r := range reps {
		waitFor(t, fmt.Sprintf("replica %d to list forge's tool", i), func() bool { return lists(r, "forge.issues.list") })
	}
	converge := func(what string, cond func(*replica) bool) {
		t.Helper()
		deadline := time.Now().Add(interval + time.Second)
		for i, r := range reps {
			for !cond(r) {
				if time.Now().After(deadline) {
					t.Fatalf("replica %d: %s not within the %v refresh interval (and 1 s of slack)", i, what, interval)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	upstreamtest.SetTool(forge, "issues.close", "Close an issue.", false)
	converge("the added tool listed", func(r *replica) bool { return lists(r, "forge.issues.close") })
	forge.RemoveTools("issues.list")
	converge("the removed tool gone", func(r *replica) bool { return !lists(r, "forge.issues.list") })
}
