package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// guard bounds every wait of these tests on the client side. It is far
// above the small timeouts the tests configure: a test that reaches it
// has found a connection the gateway left open.
const guard = 5 * time.Second

// served is a real gateway (server.Open, App.Listen, App.Serve, as
// `mcpgate serve` runs it) on loopback listeners.
type served struct {
	app *server.App
	ls  *server.Listeners
}

// serve starts a gateway on an embedded store with env on top of the test
// defaults (loopback addresses on free ports).
func serve(t *testing.T, env map[string]string) *served {
	t.Helper()
	vars := map[string]string{
		"MCPGATE_LISTEN":       "127.0.0.1:0",
		"MCPGATE_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "listen.db"),
		"MCPGATE_JWT_SECRET":   "listen-test-secret-0123456789abcdef0123",
		"MCPGATE_ADMIN_TOKEN":  "listen-admin-token",
	}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	app, err := server.Open(context.Background(), cfg, zap.NewNop(), "listen-test")
	if err != nil {
		t.Fatal(err)
	}
	ls, err := app.Listen()
	if err != nil {
		_ = app.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Serve(ctx, ls, zap.NewNop()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
		_ = app.Close()
	})
	return &served{app: app, ls: ls}
}

func (s *served) token(t *testing.T) string {
	t.Helper()
	tok, err := s.app.JWT.Issue(auth.AgentClaims{Subject: "u1", WorkspaceID: "ws-a", TaskID: "t1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// dial opens a raw TCP connection to l.
func dial(t *testing.T, l net.Listener) net.Conn {
	t.Helper()
	if l == nil {
		t.Fatal("no such listener")
	}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// readToClose reads c until the gateway closes it and returns what came;
// it fails the test when the connection is still open after guard.
func readToClose(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(guard))
	got, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the gateway neither answered nor closed the connection within %v; it sent %q", guard, got)
	}
	return string(got) // EOF or a reset: closed
}

// A client that sends a request's headers and part of its body and then
// stalls gets its connection closed once the body timeout passes, whatever
// handler the request reached and whether or not that handler reads the
// body (issue 8, point 2).
func TestStalledBodyIsClosed(t *testing.T) {
	s := serve(t, map[string]string{"MCPGATE_HTTP_BODY_TIMEOUT": "200ms"})
	tok := s.token(t)
	cases := []struct {
		note, head string
	}{
		{"MCP POST with a token", "POST /mcp HTTP/1.1\r\nAuthorization: Bearer " + tok + "\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"},
		{"MCP POST without a token", "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\n"},
		{"legacy messages POST", "POST /messages?sessionId=x HTTP/1.1\r\nAuthorization: Bearer " + tok + "\r\nContent-Type: application/json\r\n"},
		{"admin PUT", "PUT /admin/v1/workspaces/ws-a HTTP/1.1\r\nAuthorization: Bearer listen-admin-token\r\nContent-Type: application/json\r\n"},
		{"unknown path", "POST /nowhere HTTP/1.1\r\n"},
	}
	for _, c := range cases {
		t.Run(c.note, func(t *testing.T) {
			t.Parallel()
			conn := dial(t, s.ls.Main)
			req := c.head + "Host: " + s.ls.Main.Addr().String() + "\r\nContent-Length: 1000\r\n\r\n" + `{"jsonrpc":"2.0",`
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
			got := readToClose(t, conn)
			t.Logf("answer before the close: %.60q", got)
		})
	}
}

// The error reply to a body that stalls gets through even when the write
// timeout is no longer than the body timeout: the write deadline of a
// request with a body counts from the end of its body time.
func TestStalledBodyGets408(t *testing.T) {
	s := serve(t, map[string]string{"MCPGATE_HTTP_BODY_TIMEOUT": "300ms", "MCPGATE_HTTP_WRITE_TIMEOUT": "300ms"})
	conn := dial(t, s.ls.Main)
	req := "POST /mcp HTTP/1.1\r\nAuthorization: Bearer " + s.token(t) + "\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n" +
		"Host: " + s.ls.Main.Addr().String() + "\r\nContent-Length: 1000\r\n\r\n" + `{"jsonrpc":"2.0",`
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	if got := readToClose(t, conn); !strings.HasPrefix(got, "HTTP/1.1 408 ") {
		t.Fatalf("answer %.80q, want HTTP 408 before the close", got)
	}
}

// A client that never finishes its headers is closed after the header
// timeout.
func TestSlowHeadersAreClosed(t *testing.T) {
	s := serve(t, map[string]string{"MCPGATE_HTTP_HEADER_TIMEOUT": "200ms"})
	conn := dial(t, s.ls.Main)
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: "+s.ls.Main.Addr().String()+"\r\n"); err != nil {
		t.Fatal(err)
	}
	readToClose(t, conn)
}

// A keep-alive connection without a next request is closed after the idle
// timeout.
func TestIdleConnectionsAreClosed(t *testing.T) {
	s := serve(t, map[string]string{"MCPGATE_HTTP_IDLE_TIMEOUT": "200ms"})
	conn := dial(t, s.ls.Main)
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: "+s.ls.Main.Addr().String()+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if got := readToClose(t, conn); !strings.HasPrefix(got, "HTTP/1.1 200 ") {
		t.Errorf("answer %q, want a 200 before the close", got)
	}
}

// get sends one GET on the keep-alive connection conn and returns the
// status; it fails the test if no answer comes within wait.
func get(t *testing.T, conn net.Conn, br *bufio.Reader, path string, wait time.Duration) (int, error) {
	t.Helper()
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, conn.RemoteAddr()); err != nil {
		return 0, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// The main listener holds at most MCPGATE_HTTP_MAX_CONNECTIONS
// connections; the next client waits until one closes, and meanwhile the
// probes on the metrics listener still answer (issue 8, points 2 and 5f).
func TestConnectionCapLeavesProbesAnswering(t *testing.T) {
	s := serve(t, map[string]string{"MCPGATE_HTTP_MAX_CONNECTIONS": "2", "MCPGATE_METRICS_LISTEN": "127.0.0.1:0"})
	var held []net.Conn
	for range 2 {
		c := dial(t, s.ls.Main)
		if _, err := get(t, c, bufio.NewReader(c), "/nowhere", guard); err != nil {
			t.Fatalf("connection %d within the cap: %v", len(held)+1, err)
		}
		held = append(held, c)
	}
	third := dial(t, s.ls.Main)
	br := bufio.NewReader(third)
	var ne net.Error
	if code, err := get(t, third, br, "/nowhere", 300*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a connection above the cap was served (status %d, err %v); want it to wait", code, err)
	}
	probe := dial(t, s.ls.Metrics)
	if code, err := get(t, probe, bufio.NewReader(probe), "/readyz", guard); err != nil || code != http.StatusOK {
		t.Fatalf("/readyz on the metrics listener with the main listener full: status %d, err %v; want 200", code, err)
	}
	_ = held[0].Close()
	_ = third.SetReadDeadline(time.Now().Add(guard))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the waiting connection was not served after one closed: %v", err)
	}
	_ = resp.Body.Close()
}

// With MCPGATE_METRICS_LISTEN set, /metrics and the probes are served
// there and not on the main listener; without it, on the main listener.
func TestMetricsListener(t *testing.T) {
	paths := []string{"/metrics", "/healthz", "/readyz"}
	t.Run("apart", func(t *testing.T) {
		s := serve(t, map[string]string{"MCPGATE_METRICS_LISTEN": "127.0.0.1:0"})
		for _, p := range paths {
			if code := status(t, s.ls.Metrics, p); code != http.StatusOK {
				t.Errorf("GET %s on the metrics listener: %d, want 200", p, code)
			}
			if code := status(t, s.ls.Main, p); code != http.StatusNotFound {
				t.Errorf("GET %s on the main listener: %d, want 404", p, code)
			}
		}
		if code := status(t, s.ls.Metrics, "/mcp"); code != http.StatusNotFound {
			t.Errorf("GET /mcp on the metrics listener: %d, want 404", code)
		}
	})
	t.Run("together", func(t *testing.T) {
		s := serve(t, nil)
		if s.ls.Metrics != nil {
			t.Errorf("a metrics listener is open without MCPGATE_METRICS_LISTEN")
		}
		for _, p := range paths {
			if code := status(t, s.ls.Main, p); code != http.StatusOK {
				t.Errorf("GET %s on the main listener: %d, want 200", p, code)
			}
		}
	})
}

// MCPGATE_PPROF serves Go's profiles on the metrics listener only; off,
// they are served nowhere.
func TestPprofOnlyOnTheMetricsListener(t *testing.T) {
	on := serve(t, map[string]string{"MCPGATE_METRICS_LISTEN": "127.0.0.1:0", "MCPGATE_PPROF": "true"})
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
		if code := status(t, on.ls.Metrics, p); code != http.StatusOK {
			t.Errorf("GET %s on the metrics listener with MCPGATE_PPROF: %d, want 200", p, code)
		}
		if code := status(t, on.ls.Main, p); code != http.StatusNotFound {
			t.Errorf("GET %s on the main listener: %d, want 404", p, code)
		}
	}
	off := serve(t, map[string]string{"MCPGATE_METRICS_LISTEN": "127.0.0.1:0"})
	if code := status(t, off.ls.Metrics, "/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/ without MCPGATE_PPROF: %d, want 404", code)
	}
}

func status(t *testing.T, l net.Listener, path string) int {
	t.Helper()
	if l == nil {
		t.Fatalf("GET %s: no such listener", path)
	}
	c := &http.Client{Timeout: guard}
	resp, err := c.Get("http://" + l.Addr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// An SSE stream outlives the write timeout: the timeout bounds each
// event, not the stream. Here the stream's first event is written at once
// and its second, the initialize result, after the write timeout has
// passed since the request.
func TestStreamOutlivesWriteTimeout(t *testing.T) {
	s := serve(t, map[string]string{"MCPGATE_HTTP_WRITE_TIMEOUT": "200ms"})
	tok := s.token(t)
	base := "http://" + s.ls.Main.Addr().String()
	req, _ := http.NewRequest(http.MethodGet, base+"/sse", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	events := make(chan string, 4)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- data
			}
		}
	}()
	endpoint := next(t, events)
	time.Sleep(600 * time.Millisecond) // three write timeouts
	post, _ := http.NewRequest(http.MethodPost, base+endpoint, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	post.Header.Set("Authorization", "Bearer "+tok)
	post.Header.Set("Content-Type", "application/json")
	pr, err := http.DefaultClient.Do(post)
	if err != nil {
		t.Fatal(err)
	}
	_ = pr.Body.Close()
	if pr.StatusCode != http.StatusAccepted {
		t.Fatalf("POST %s: %d, want 202", endpoint, pr.StatusCode)
	}
	if got := next(t, events); !strings.Contains(got, `"protocolVersion"`) {
		t.Errorf("second event %q, want the initialize result", got)
	}
}

func next(t *testing.T, events <-chan string) string {
	t.Helper()
	select {
	case e, ok := <-events:
		if !ok {
			t.Fatal("the SSE stream ended")
		}
		return e
	case <-time.After(guard):
		t.Fatalf("no SSE event within %v", guard)
	}
	return ""
}

// An address another process already listens on stops the gateway with an
// error that names the variable and says what to do: free the port or
// choose another address. This holds for each of the three listeners
// (under `serve --dev` the cc_server one takes 127.0.0.1:9030 unasked).
func TestAddressInUseSaysWhatToDo(t *testing.T) {
	for _, name := range []string{"MCPGATE_LISTEN", "MCPGATE_METRICS_LISTEN", "MCPGATE_CCSERVER_LISTEN"} {
		t.Run(name, func(t *testing.T) {
			busy, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = busy.Close() }()
			vars := map[string]string{
				"MCPGATE_LISTEN":       "127.0.0.1:0",
				"MCPGATE_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "busy.db"),
				"MCPGATE_JWT_SECRET":   "listen-test-secret-0123456789abcdef0123",
			}
			vars[name] = busy.Addr().String()
			cfg, err := config.Load(func(k string) string { return vars[k] })
			if err != nil {
				t.Fatal(err)
			}
			app, err := server.Open(context.Background(), cfg, zap.NewNop(), "listen-test")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = app.Close() }()
			ls, err := app.Listen()
			if err == nil {
				_ = ls.Close()
				t.Fatalf("Listen on the busy address %s succeeded", busy.Addr())
			}
			msg := err.Error()
			for _, want := range []string{
				name + "=" + busy.Addr().String(),
				"another process already listens on " + busy.Addr().String(),
				"set " + name + " to a free host:port",
			} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
		})
	}
}

// With the probes on the main listener (no MCPGATE_METRICS_LISTEN), a
// listener full of client connections (long-lived streams, say) still
// answers /healthz, /readyz and /metrics at once, on a small reserve of
// connections beyond the cap; a client request on a reserve connection is
// answered 503 with Retry-After and its connection closed, and once a
// connection closes clients are served again (issue 22, item 1: 125 listen
// streams of one token left /healthz hanging).
func TestListenStreamsPerCredentialLeaveProbesAnswering(t *testing.T) {
	s := serve(t, map[string]string{"MCPGATE_HTTP_MAX_CONNECTIONS": "2"})
	var held []net.Conn
	for range 2 {
		c := dial(t, s.ls.Main)
		if _, err := get(t, c, bufio.NewReader(c), "/nowhere", guard); err != nil {
			t.Fatalf("connection %d within the cap: %v", len(held)+1, err)
		}
		held = append(held, c)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		probe := dial(t, s.ls.Main)
		if code, err := get(t, probe, bufio.NewReader(probe), path, guard); err != nil || code != http.StatusOK {
			t.Fatalf("%s with the main listener full: status %d, err %v; want 200", path, code, err)
		}
		if got := readToClose(t, probe); got != "" {
			t.Fatalf("%s: the reserve connection carried more: %q", path, got)
		}
	}
	client := dial(t, s.ls.Main)
	_, _ = fmt.Fprintf(client, "GET /nowhere HTTP/1.1\r\nHost: %s\r\n\r\n", client.RemoteAddr())
	if got := readToClose(t, client); !strings.HasPrefix(got, "HTTP/1.1 503") || !strings.Contains(got, "Retry-After:") || !strings.Contains(got, "MCPGATE_HTTP_MAX_CONNECTIONS") {
		t.Fatalf("a client request above the cap got %q; want 503 with Retry-After, saying why", got)
	}
	_ = held[0].Close()
	deadline := time.Now().Add(guard)
	for {
		c := dial(t, s.ls.Main)
		code, err := get(t, c, bufio.NewReader(c), "/nowhere", guard)
		_ = c.Close()
		if err == nil && code == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a client after a connection closed: status %d, err %v; want it served (404)", code, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
