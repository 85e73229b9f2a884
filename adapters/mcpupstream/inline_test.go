package mcpupstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingServer is an httptest server that counts the connections it
// accepted.
type countingServer struct {
	*httptest.Server
	conns atomic.Int64
}

func startCounting(t *testing.T, h http.HandlerFunc, idle time.Duration) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.IdleTimeout = idle
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func newTestInline() *inlineTransport {
	std := http.DefaultTransport.(*http.Transport).Clone()
	std.Proxy = nil
	return newInlineTransport(std, 4)
}

// post sends body to url through rt and returns the response body.
func post(t *testing.T, rt http.RoundTripper, ctx context.Context, url, body string) (string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func echoBody(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func TestInlineReusesOneConnection(t *testing.T) {
	s := startCounting(t, echoBody, 0)
	rt := newTestInline()
	for i := range 20 {
		got, err := post(t, rt, context.Background(), s.URL, `{"n":`+string(rune('0'+i%10))+`}`)
		if err != nil || got != `{"n":`+string(rune('0'+i%10))+`}` {
			t.Fatalf("call %d: %q, %v", i, got, err)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("20 sequential calls opened %d connections, want 1", n)
	}
}

// An upstream that closes a connection while it is idle (its idle
// timeout) costs the next call nothing: the closed connection is found
// before a request is written to it, and a new one is dialled.
func TestInlineSkipsAConnectionTheUpstreamClosed(t *testing.T) {
	if !canPeek {
		t.Skip("alive cannot peek at a socket on this platform (the adapters use net/http's Transport here)")
	}
	s := startCounting(t, echoBody, 50*time.Millisecond)
	rt := newTestInline()
	for i := range 3 {
		if got, err := post(t, rt, context.Background(), s.URL, `{}`); err != nil || got != `{}` {
			t.Fatalf("call %d: %q, %v", i, got, err)
		}
		time.Sleep(200 * time.Millisecond) // the server closes the idle connection
	}
	if n := s.conns.Load(); n != 3 {
		t.Fatalf("3 calls 200 ms apart on a server with a 50 ms idle timeout opened %d connections, want 3", n)
	}
}

// Body-less, chunked and 1xx-preceded responses and Connection: close are
// read as net/http's Transport reads them; a connection the upstream asked
// to close is not reused.
func TestInlineResponseForms(t *testing.T) {
	s := startCounting(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/chunked":
			w.Header().Set("Content-Type", "text/event-stream")
			for _, part := range []string{"data: 1\n\n", "data: 2\n\n"} {
				_, _ = io.WriteString(w, part)
				w.(http.Flusher).Flush()
			}
		case "/early":
			w.Header().Set("Link", "</x>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			_, _ = io.WriteString(w, "after hints")
		case "/empty":
			w.WriteHeader(http.StatusAccepted)
		case "/close":
			w.Header().Set("Connection", "close")
			_, _ = io.WriteString(w, "bye")
		}
	}, 0)
	rt := newTestInline()
	// A body-less reply (202) gives its connection back at once, even to a
	// caller that closes the body without reading it.
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/empty", strings.NewReader("{}"))
	resp, err := rt.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("/empty: %v, %v", resp, err)
	}
	_ = resp.Body.Close()
	for _, c := range []struct{ path, want string }{
		{"/chunked", "data: 1\n\ndata: 2\n\n"}, {"/early", "after hints"}, {"/close", "bye"}, {"/chunked", "data: 1\n\ndata: 2\n\n"},
	} {
		if got, err := post(t, rt, context.Background(), s.URL+c.path, ""); err != nil || got != c.want {
			t.Fatalf("%s: %q, %v; want %q", c.path, got, err, c.want)
		}
		if idle := idleCount(rt); c.path == "/close" && idle != 0 {
			t.Fatalf("after a reply with Connection: close the pool holds %d connections, want 0", idle)
		}
	}
	req, _ = http.NewRequest(http.MethodPost, s.URL+"/early", nil)
	req.Close = true // the client asks to close: not reused either
	if resp, err := rt.RoundTrip(req); err != nil {
		t.Fatal(err)
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	if idle := idleCount(rt); idle != 0 {
		t.Fatalf("after a request with Close the pool holds %d connections, want 0", idle)
	}
	if n := s.conns.Load(); n != 2 {
		t.Fatalf("five calls, the fourth answered with Connection: close, then one with Close, opened %d connections, want 2", n)
	}
}

// A context that ends while the upstream has not answered ends the
// exchange at once with the context's error, and its connection, on which
// the answer may still arrive, is never reused. A body closed before its
// end closes its connection too.
func TestInlineCancelAndEarlyClose(t *testing.T) {
	release := make(chan struct{})
	s := startCounting(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			<-release
		case "/big":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, strings.Repeat("x", 1<<20))
		}
		_, _ = io.WriteString(w, "ok")
	}, 0)
	defer close(release)
	rt := newTestInline()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := post(t, rt, ctx, s.URL+"/slow", ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow call: %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the cancelled call returned after %v", d)
	}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, s.URL+"/big", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = resp.Body.Read(make([]byte, 10))
	_ = resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 10)); !errors.Is(err, http.ErrBodyReadAfterClose) {
		t.Fatalf("read after Close: %v, want http.ErrBodyReadAfterClose", err)
	}
	watchdog, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if got, err := post(t, rt, watchdog, s.URL+"/", ""); err != nil || got != "ok" {
		t.Fatalf("call after: %q, %v", got, err)
	}
	if n := s.conns.Load(); n != 3 {
		t.Fatalf("a cancelled call, a body closed early and a third call opened %d connections, want 3", n)
	}
}

// Requests the transport does not do itself go to its fallback: https,
// and any request a proxy stands in front of.
func TestInlineFallback(t *testing.T) {
	var fell atomic.Int64
	rt := newTestInline()
	rt.fallback = roundTripFunc(func(*http.Request) (*http.Response, error) {
		fell.Add(1)
		return nil, errors.New("fallback")
	})
	rt.proxy = func(r *http.Request) (*url.URL, error) {
		if r.URL.Host == "behind-proxy:80" {
			return url.Parse("http://proxy:3128")
		}
		return nil, nil
	}
	for _, u := range []string{"https://example.invalid/mcp", "http://behind-proxy:80/mcp"} {
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader("{}"))
		if _, err := rt.RoundTrip(req); err == nil || err.Error() != "fallback" {
			t.Fatalf("%s: %v, want the fallback's error", u, err)
		}
	}
	if fell.Load() != 2 {
		t.Fatalf("fallback called %d times, want 2", fell.Load())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func idleCount(rt *inlineTransport) int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	n := 0
	for _, l := range rt.idle {
		n += len(l)
	}
	return n
}

// The pool keeps at most maxIdle connections per upstream, and closes
// the ones idle for longer than idleTimeout the next time it is used,
// even those a busy pool never reaches (it reuses its newest first).
func TestInlinePoolBounds(t *testing.T) {
	var gate sync.WaitGroup
	release := make(chan struct{})
	s := startCounting(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			gate.Done()
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	}, 0)
	rt := newTestInline() // maxIdle 4
	rt.idleTimeout = 100 * time.Millisecond
	const callers = 6
	gate.Add(callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			if _, err := post(t, rt, context.Background(), s.URL+"/wait", ""); err != nil {
				t.Error(err)
			}
		})
	}
	gate.Wait() // six connections open at once
	close(release)
	wg.Wait()
	if n := idleCount(rt); n != 4 {
		t.Fatalf("after 6 concurrent calls the pool holds %d idle connections, want maxIdle 4", n)
	}
	time.Sleep(250 * time.Millisecond)
	if _, err := post(t, rt, context.Background(), s.URL+"/", ""); err != nil {
		t.Fatal(err)
	}
	if n, idle := s.conns.Load(), idleCount(rt); n != callers+1 || idle != 1 {
		t.Fatalf("a call after the idle timeout: %d connections opened (want %d: all idle ones expired), %d idle (want 1)", n, callers+1, idle)
	}
}

// rawServer answers every request on a connection with reply(i), i
// counting the requests of that connection from 0, and counts its
// connections. after, when set, is written 20 ms after the first reply,
// while the connection stays open (an unsolicited 408, say).
func rawServer(t *testing.T, reply func(i int) string, after string) (url string, conns *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	conns = &atomic.Int64{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for i := 0; ; i++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					_, _ = io.WriteString(c, reply(i))
					if i == 0 && after != "" {
						time.Sleep(20 * time.Millisecond) // after the client read the reply
						_, _ = io.WriteString(c, after)
					}
				}
			}()
		}
	}()
	return "http://" + l.Addr().String() + "/mcp", conns
}

const okReply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

// A connection on which the upstream sent something unasked while it was
// idle (a 408 before it closes, say) is not reused: its bytes would be
// read as the next request's reply.
func TestInlineSkipsAConnectionWithUnreadBytes(t *testing.T) {
	if !canPeek {
		t.Skip("alive cannot peek at a socket on this platform")
	}
	url, conns := rawServer(t, func(int) string { return okReply }, "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")
	rt := newTestInline()
	for i := range 2 {
		if got, err := post(t, rt, context.Background(), url, "{}"); err != nil || got != "ok" {
			t.Fatalf("call %d: %q, %v", i, got, err)
		}
		time.Sleep(50 * time.Millisecond) // the 408 arrives on the idle connection
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("two calls opened %d connections, want 2 (the first one had an unread 408)", n)
	}
}

// Replies that break the exchange are errors, and their connections are
// closed: a 101 that no request asked for, more 1xx than
// maxInformational, and a head above maxResponseHeadBytes.
func TestInlineRefusesBrokenReplies(t *testing.T) {
	for _, c := range []struct {
		name, reply string
		want        string
	}{
		{"101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n", "101 Switching Protocols"},
		{"many 1xx", strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n", maxInformational+1) + okReply, "informational"},
		{"huge head", "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", maxResponseHeadBytes) + "\r\nContent-Length: 2\r\n\r\nok", "larger than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, _ := rawServer(t, func(int) string { return c.reply }, "")
			rt := newTestInline()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := post(t, rt, ctx, url, "{}"); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
			if n := idleCount(rt); n != 0 {
				t.Fatalf("the pool kept %d connections", n)
			}
		})
	}
}
