package mcpupstream

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
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
	}
	if n := s.conns.Load(); n != 2 {
		t.Fatalf("five calls, the fourth answered with Connection: close, opened %d connections, want 2", n)
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
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/big", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = resp.Body.Read(make([]byte, 10))
	_ = resp.Body.Close()
	if got, err := post(t, rt, context.Background(), s.URL+"/", ""); err != nil || got != "ok" {
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
