package mcpupstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
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
// checked for a close by the upstream (alive), so a connection the
// upstream ended while it sat idle is not written to (an upstream that
// closes it in the instant between that check and the write still fails
// that one call, as it would with net/http's Transport in the same race).
// Connections idle for longer than idleTimeout are closed whenever the
// pool is used. Response heads are limited to maxResponseHeadBytes, and at
// most maxInformational 1xx responses may precede the real one.
type inlineTransport struct {
	fallback    http.RoundTripper
	proxy       func(*http.Request) (*url.URL, error)
	dialer      net.Dialer
	maxIdle     int
	idleTimeout time.Duration

	mu   sync.Mutex
	idle map[string][]*inlineConn // by host:port, most recently used last
}

// Limits on what the upstream sends before a response's body (net/http's
// Transport applies the same kind: MaxResponseHeaderBytes).
const (
	maxResponseHeadBytes = 1 << 20
	maxInformational     = 8
)

// errTooManyInformational is the error of a reply that sends more than
// maxInformational 1xx responses.
var errTooManyInformational = errors.New("the upstream sent more than 8 informational (1xx) responses before its reply")

// errSwitchedProtocols is the error of a 101 reply: no request here asks
// for an upgrade, and the connection no longer speaks HTTP after it.
var errSwitchedProtocols = errors.New("the upstream answered 101 Switching Protocols to a request that asked for no upgrade")

// inlineConn is one pooled HTTP/1.1 connection.
type inlineConn struct {
	t     *inlineTransport
	addr  string
	conn  net.Conn
	lr    *limitReader // under br: limits the response head
	br    *bufio.Reader
	bw    *bufio.Writer
	since time.Time // when it went idle
}

// limitReader reads from r while left is positive: set before a response
// head, lifted (math.MaxInt64) for its body.
type limitReader struct {
	r    io.Reader
	left int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, fmt.Errorf("the upstream's response head is larger than %d bytes", maxResponseHeadBytes)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
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
	b := &inlineBody{rc: resp.Body, c: c, ctx: ctx, stop: stop, reuse: !resp.Close && !req.Close}
	if resp.Body == http.NoBody { // nothing to read (202, 204, Content-Length 0): release now
		b.end(io.EOF)
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
	c.lr.left = maxResponseHeadBytes
	defer func() { c.lr.left = math.MaxInt64 }()
	for range maxInformational + 1 {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, err
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errSwitchedProtocols
		case resp.StatusCode >= 100 && resp.StatusCode < 200:
			// 1xx informational responses (103 Early Hints, say)
			// precede the real one.
			c.lr.left = maxResponseHeadBytes
			continue
		}
		return resp, nil
	}
	return nil, errTooManyInformational
}

// get returns an idle connection to addr that is still open (the most
// recently used first), or dials one.
func (t *inlineTransport) get(ctx context.Context, addr string) (*inlineConn, error) {
	t.mu.Lock()
	t.expireLocked(addr, time.Now())
	for {
		list := t.idle[addr]
		if len(list) == 0 {
			break
		}
		c := list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[addr] = list[:len(list)-1]
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
	lr := &limitReader{r: conn, left: math.MaxInt64}
	return &inlineConn{t: t, addr: addr, conn: conn, lr: lr, br: bufio.NewReaderSize(lr, 4096), bw: bufio.NewWriterSize(conn, 4096)}, nil
}

// put returns c to the idle pool, or closes it when the pool is full.
func (t *inlineTransport) put(c *inlineConn) {
	c.since = time.Now()
	t.mu.Lock()
	t.expireLocked(c.addr, c.since)
	if list := t.idle[c.addr]; len(list) < t.maxIdle {
		t.idle[c.addr] = append(list, c)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	_ = c.conn.Close()
}

// expireLocked closes addr's connections idle for longer than
// idleTimeout. The list is in the order the connections went idle, so
// they are at its head; a busy pool that reuses its newest connections
// still closes the ones a burst left behind. t.mu is held.
func (t *inlineTransport) expireLocked(addr string, now time.Time) {
	list := t.idle[addr]
	n := 0
	for n < len(list) && t.idleTimeout > 0 && now.Sub(list[n].since) > t.idleTimeout {
		_ = list[n].conn.Close()
		n++
	}
	if n > 0 {
		t.idle[addr] = append(list[:0], list[n:]...)
		clear(list[len(list)-n:])
	}
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
// the connection (what is left of the response is never read). After its
// end, an error or Close, reads return what ended it (io.EOF, the error,
// or http.ErrBodyReadAfterClose), and an error after the request's
// context ended is the context's.
type inlineBody struct {
	rc    io.ReadCloser
	c     *inlineConn
	ctx   context.Context
	stop  func() bool
	reuse bool

	mu   sync.Mutex // guards err (Close may race a Read)
	err  error
	done atomic.Bool // the connection was released
}

func (b *inlineBody) Read(p []byte) (int, error) {
	if b.done.Load() {
		b.mu.Lock()
		defer b.mu.Unlock()
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	if err != nil {
		eof := errors.Is(err, io.EOF)
		if !eof && b.ctx.Err() != nil {
			err = b.ctx.Err()
		}
		b.end(err)
		b.finish(eof)
	}
	return n, err
}

func (b *inlineBody) Close() error {
	b.end(http.ErrBodyReadAfterClose)
	b.finish(false)
	return nil
}

// end keeps err as what later reads return, unless something ended the
// body before.
func (b *inlineBody) end(err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.mu.Unlock()
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
