package pgtest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy is a TCP proxy between a gateway and PostgreSQL that a test can
// cut (close every connection and refuse new ones, as a database that went
// away) or stall (keep every connection open and forward nothing, as a
// database that stopped answering), and then restore.
type Proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	resume *sync.Cond // broadcast when stalled or cut changes
	cut    bool
	stall  bool
	conns  map[net.Conn]struct{}
}

// NewProxy listens on a local port and forwards to target (host:port);
// it stops when t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.resume = sync.NewCond(&p.mu)
	go p.serve()
	t.Cleanup(func() { _ = ln.Close(); p.Cut(true) })
	return p
}

// ProxyURL starts a Proxy to the host of the postgres:// URL dsn and
// returns it with dsn pointed at it.
func ProxyURL(t testing.TB, dsn string) (*Proxy, string) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := NewProxy(t, u.Host)
	u.Host = p.Addr()
	return p, u.String()
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

// track registers c, unless the proxy is cut.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) forward(c net.Conn) {
	if !p.track(c) || !p.wait() {
		_ = c.Close()
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(up) {
		_ = c.Close()
		return
	}
	go func() { p.copy(up, c); _ = up.Close() }()
	p.copy(c, up)
	_ = c.Close()
}

// copy forwards src to dst, holding what it read while the proxy stalls.
func (p *Proxy) copy(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.wait() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wait blocks while the proxy stalls; false when it is cut.
func (p *Proxy) wait() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.stall && !p.cut {
		p.resume.Wait()
	}
	return !p.cut
}

// Cut cuts (closing every open connection) or restores the link.
func (p *Proxy) Cut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			_ = c.Close()
		}
		clear(p.conns)
	}
	p.resume.Broadcast()
}

// Stall stops forwarding bytes, keeping every connection open and
// accepting new ones (stall true), or forwards again what it held and
// what comes next (stall false).
func (p *Proxy) Stall(stall bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stall = stall
	p.resume.Broadcast()
}
