package server_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/adapters/bridge/bridgetest"
	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// chattyUpstream is a go-sdk MCP server whose tools answer as a well-kept
// upstream does: echo answers the argument bytes it received, fails an
// isError result, chatty reports progress on the caller's token and logs
// before it answers, and wait runs until it is cancelled (it says so on
// cancelled, and that it started on entered).
func chattyUpstream(t *testing.T, entered, cancelled chan<- struct{}) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "chatty", Version: "1"},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Tools: &mcp.ToolCapabilities{}}})
	tool := func(name string, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, h)
	}
	answer := func(text string, isError bool) *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	}
	tool("echo", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return answer(string(req.Params.Arguments), false), nil
	})
	tool("fails", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return answer("the forge said no", true), nil
	})
	tool("chatty", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for _, p := range []float64{0, 50, 100} {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: p, Total: 100}); err != nil {
				return nil, err
			}
		}
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "half way there"})
		return answer("done", false), nil
	})
	tool("wait", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		entered <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// badReasons are the reason codes the tool execution error of a call of
// badUpstream's tool of each bridgetest mode names.
var badReasons = map[string]string{
	bridgetest.Slow: "[upstream.timeout]", bridgetest.Endless: "[upstream.timeout]",
	bridgetest.Garbage: "[upstream.malformed_reply]", bridgetest.GarbageEvent: "[upstream.timeout]", bridgetest.RPCError: "[upstream.rpc_error]",
	bridgetest.Down: "[upstream.malformed_reply]", bridgetest.Huge: "[upstream.reply_too_large]",
	bridgetest.Truncated: "[upstream.malformed_reply]",
}

// badUpstream is a go-sdk MCP server that lists one tool per bridgetest
// mode and, called, misbehaves as the tool's name says instead of
// answering.
func badUpstream(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "bad", Version: "1"}, nil)
	for _, mode := range bridgetest.Modes {
		s.AddTool(&mcp.Tool{Name: mode, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a well-behaved answer"}}}, nil
		})
	}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(bridgetest.Wrap(sdk, func(tool string) string { return tool }))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// agentClient connects a go-sdk client with opts to the app's /mcp as
// alice (task t1, profile bot), at protocol version ("": the client's
// latest).
func agentClient(t *testing.T, app *server.App, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	srv := httptest.NewServer(app.Server)
	t.Cleanup(srv.Close)
	tok, err := app.JWT.Issue(auth.AgentClaims{Subject: "alice", WorkspaceID: "ws-a", TaskID: "t1", ProfileID: "bot"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bridged-calls-test", Version: "1"}, opts).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{tok, http.DefaultTransport}}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if got := cs.InitializeResult(); version != "" && (got == nil || got.ProtocolVersion != version) {
		t.Fatalf("the session's protocol is %+v; want %s", got, version)
	}
	return cs
}

// resultText is the first text block of res.
func resultText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// Calls through the gateway reach the upstream that owns the tool, under
// its own name, with the client's exact argument bytes; results, isError
// results, progress on the caller's token and log messages come back; the
// caller's cancellation reaches the upstream's tool. An upstream that
// misbehaves in every way at once (slow, a reply that never ends, not
// JSON, a JSON-RPC error, a 10 MB reply, a 502, cut-off JSON) gives each
// call a tool execution error naming it within MCPGATE_UPSTREAM_TIMEOUT,
// while calls to the other upstream, made during them, answer at once.
func TestBridgedCallsThroughTheGateway(t *testing.T) {
	entered, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	const timeout = 2 * time.Second
	app, _, err := upstreamsAppWith(t, `{"upstreams":[
	  {"name":"forge","url":"`+chattyUpstream(t, entered, cancelled)+`","tier":"read"},
	  {"name":"bad","url":"`+badUpstream(t)+`","tier":"read"}
	]}`, map[string]string{"MCPGATE_UPSTREAM_TIMEOUT": timeout.String()})
	if err != nil {
		t.Fatal(err)
	}
	seedAgent(t, app, "supacloud.forge.*", "supacloud.bad.*")
	// Both ways a client talks to the gateway: a session (2025-11-25),
	// and stateless requests (2026-07-28, the client's default).
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("protocol "+cmp.Or(version, "latest"), func(t *testing.T) {
			var mu sync.Mutex
			var progress, logs []string
			cs := agentClient(t, app, version, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					defer mu.Unlock()
					progress = append(progress, fmt.Sprintf("%v:%v", r.Params.ProgressToken, r.Params.Progress))
				},
				LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
					mu.Lock()
					defer mu.Unlock()
					logs = append(logs, fmt.Sprint(r.Params.Data))
				},
			})
			ctx := context.Background()

			t.Run("exact bytes", func(t *testing.T) {
				args := `{"n":123456789012345678901234567890.000001,"f":1.50,"s":"\u00e9","u":"\u0000"}`
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "forge.echo", Arguments: json.RawMessage(args)})
				if err != nil || res.IsError || resultText(res) != args {
					t.Fatalf("forge.echo answered %q (%v, %v); want the upstream's echo to have received exactly %s", resultText(res), res, err, args)
				}
			})
			t.Run("isError result", func(t *testing.T) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "forge.fails", Arguments: map[string]any{}})
				if err != nil || !res.IsError || resultText(res) != "the forge said no" {
					t.Fatalf("forge.fails: %+v %v; want the upstream's isError result as it sent it", res, err)
				}
			})
			t.Run("progress and log", func(t *testing.T) {
				params := &mcp.CallToolParams{Name: "forge.chatty", Arguments: map[string]any{}}
				params.SetProgressToken("tok-7")
				params.Meta["io.modelcontextprotocol/logLevel"] = "info" // 2026-07-28: log messages only with a level
				res, err := cs.CallTool(ctx, params)
				if err != nil || res.IsError || resultText(res) != "done" {
					t.Fatalf("forge.chatty: %+v %v", res, err)
				}
				deadline := time.Now().Add(5 * time.Second)
				for {
					mu.Lock()
					p, l := strings.Join(progress, ","), strings.Join(logs, ",")
					mu.Unlock()
					if p == "tok-7:0,tok-7:50,tok-7:100" && l == "half way there" {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("the client heard progress [%s] and log [%s]; want progress 0, 50, 100 on its token tok-7 and the upstream's log message", p, l)
					}
					time.Sleep(10 * time.Millisecond)
				}
			})
			t.Run("cancellation", func(t *testing.T) {
				cctx, cancel := context.WithCancel(ctx)
				defer cancel()
				done := make(chan error, 1)
				go func() {
					_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "forge.wait", Arguments: map[string]any{}})
					done <- err
				}()
				select {
				case <-entered:
				case <-time.After(5 * time.Second):
					t.Fatal("forge.wait never reached the upstream")
				}
				cancel()
				select {
				case <-cancelled:
				case <-time.After(5 * time.Second):
					t.Fatal("the client's cancellation never reached the upstream's tool")
				}
				<-done
			})
			// The misbehaving upstream's errors are isError results, which
			// both protocols carry alike (isError result): run once.
			if version != "" {
				return
			}
			t.Run("misbehaving upstream", func(t *testing.T) {
				var wg sync.WaitGroup
				badDone := make(chan struct{})
				for _, mode := range bridgetest.Modes {
					wg.Add(1)
					go func() {
						defer wg.Done()
						start := time.Now()
						res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bad." + mode, Arguments: map[string]any{}})
						took := time.Since(start)
						if want := badReasons[mode]; err != nil || !res.IsError || !strings.Contains(resultText(res), `upstream "bad"`) || !strings.Contains(resultText(res), want) {
							t.Errorf("bad.%s: %v %.300q; want a tool execution error naming upstream \"bad\" with %s", mode, err, resultText(res), want)
						}
						if took > timeout+2*time.Second { // slack for a loaded machine
							t.Errorf("bad.%s answered after %v; want within MCPGATE_UPSTREAM_TIMEOUT (%v)", mode, took, timeout)
						}
					}()
				}
				go func() { wg.Wait(); close(badDone) }()
				time.Sleep(200 * time.Millisecond) // the bad calls are at the upstream
				for i := range 3 {
					args := fmt.Sprintf(`{"i":%d}`, i)
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "forge.echo", Arguments: json.RawMessage(args)})
					if err != nil || res.IsError || resultText(res) != args {
						t.Errorf("forge.echo while bad misbehaves: %+v %v", res, err)
					}
				}
				select {
				case <-badDone:
					t.Error("the slow calls of bad ended before the calls of forge made during them; want forge answered at once")
				default:
				}
				<-badDone
			})
		})
	}
}
