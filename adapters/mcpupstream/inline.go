package mcpupstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// inlineTransport is the http.RoundTripper of an Adapter without
// Options.HTTPClient for upstreams on plain http:// that no proxy stands
// in front of (the usual sidecar upstream). It speaks HTTP/1.1 with
// keep-alive and does the whole exchange on the caller's goroutine: it
// writes the request on a pooled connection and reads the response from
// it, with net/http's own request writer (http.Request.Write) and response
// parser (http.ReadResponse). net/http's Transport instead hands every
// request to a writing goroutine and the response back from a reading
// goroutine of the connection, and the wake-ups between the three are
// most of what forwarding a call costs the gateway on top of the
// syscalls. Everything else (https, proxies from the environment, other
// schemes) goes to fallback, net/http's Transport.
//
// A connection is reused only when its last response was read to its end
// without error and neither side asked to close it; before reuse it is
// checked for a close by the upstream (alive), so a request is never
// written to a connection the upstream already ended while idle. A
// connection idle for longer than idleTimeout is closed instead.
type inlineTransport struct {
	fallback    http.RoundTripper
	proxy       func(*http.Request) (*url.URL, error)
	dialer      net.Dialer
	maxIdle     int
	idleTimeout time.Duration

	mu   sync.Mutex
	idle map[string][]*inlineConn // by host:port, most recently used last
}

// inlineConn is one pooled HTTP/1.1 connection.
type inlineConn struct {
	t     *inlineTransport
	addr  string
	conn  net.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
	since time.Time // when it went idle
}

// newInlineTransport returns an inlineTransport that keeps up to maxIdle
// idle connections per upstream address and hands what it does not do to
// fallback.
func newInlineTransport(fallback *http.Transport, maxIdle int) *inlineTransport {
	return &inlineTransport{
		fallback:    fallback,
		proxy:       fallback.Proxy,
		dialer:      net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		maxIdle:     maxIdle,
		idleTimeout: fallback.IdleConnTimeout,
		idle:        map[string][]*inlineConn{},
	}
}

// RoundTrip implements http.RoundTripper.
func (t *inlineTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		return t.fallback.RoundTrip(req)
	}
	if t.proxy != nil {
		if p, err := t.proxy(req); err != nil || p != nil {
			return t.fallback.RoundTrip(req)
		}
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		closeBody(req)
		return nil, err
	}
	addr := canonicalAddr(req)
	c, err := t.get(ctx, addr)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	// A context that ends mid-exchange unblocks the connection's reads and
	// writes; the connection is then closed, never reused.
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	resp, err := c.exchange(req)
	if err != nil {
		stop()
		_ = c.conn.Close()
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	b := &inlineBody{rc: resp.Body, c: c, stop: stop, reuse: !resp.Close && !req.Close}
	if resp.Body == http.NoBody { // nothing to read (202, 204, Content-Length 0): release now
		b.finish(true)
		return resp, nil
	}
	resp.Body = b
	return resp, nil
}

// exchange writes req and reads its response head.
func (c *inlineConn) exchange(req *http.Request) (*http.Response, error) {
	if err := req.Write(c.bw); err != nil {
		return nil, err
	}
	if err := c.bw.Flush(); err != nil {
		return nil, err
	}
	for {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, err
		}
		// 1xx informational responses (103 Early Hints, say) precede the
		// real one; 101 would switch protocols, which no request here asks.
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		return resp, nil
	}
}

// get returns an idle connection to addr that is still open, or dials one.
func (t *inlineTransport) get(ctx context.Context, addr string) (*inlineConn, error) {
	now := time.Now()
	t.mu.Lock()
	for {
		list := t.idle[addr]
		if len(list) == 0 {
			break
		}
		c := list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[addr] = list[:len(list)-1]
		if t.idleTimeout > 0 && now.Sub(c.since) > t.idleTimeout {
			_ = c.conn.Close()
			continue
		}
		t.mu.Unlock()
		if alive(c.conn) {
			return c, nil
		}
		_ = c.conn.Close()
		t.mu.Lock()
	}
	t.mu.Unlock()
	conn, err := t.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &inlineConn{t: t, addr: addr, conn: conn, br: bufio.NewReaderSize(conn, 4096), bw: bufio.NewWriterSize(conn, 4096)}, nil
}

// put returns c to the idle pool, or closes it when the pool is full.
func (t *inlineTransport) put(c *inlineConn) {
	c.since = time.Now()
	t.mu.Lock()
	if list := t.idle[c.addr]; len(list) < t.maxIdle {
		t.idle[c.addr] = append(list, c)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	_ = c.conn.Close()
}

// CloseIdleConnections closes every idle connection (http.Client's
// CloseIdleConnections calls it), and the fallback's.
func (t *inlineTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[string][]*inlineConn{}
	t.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			_ = c.conn.Close()
		}
	}
	if ci, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// inlineBody is a response body on an inlineConn: read to its end, it
// gives the connection back to the pool; closed before that, it closes
// the connection (what is left of the response is never read).
type inlineBody struct {
	rc    io.ReadCloser
	c     *inlineConn
	stop  func() bool
	reuse bool
	done  atomic.Bool // the connection was released (Close may race a Read)
}

func (b *inlineBody) Read(p []byte) (int, error) {
	if b.done.Load() {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	if err != nil {
		b.finish(errors.Is(err, io.EOF))
	}
	return n, err
}

func (b *inlineBody) Close() error {
	b.finish(false)
	return nil
}

// finish releases the connection once: to the pool when the body ended
// cleanly (eof), reuse is allowed and the context did not fire meanwhile.
func (b *inlineBody) finish(eof bool) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	fired := !b.stop()
	if eof && b.reuse && !fired && b.c.br.Buffered() == 0 {
		b.c.t.put(b.c)
		return
	}
	_ = b.c.conn.Close()
}

// canonicalAddr is req's host:port, with the scheme's port when the URL
// names none.
func canonicalAddr(req *http.Request) string {
	host, port := req.URL.Hostname(), req.URL.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(host, port)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
