package config

import (
	"net"
	"time"
)

// Conn bounds what one client connection may hold of the gateway, so that
// every connection is answered or closed in bounded time and a flood of
// connections cannot take the file descriptors the database and the probes
// need. It is embedded in Config, so its fields read as cfg.BodyTimeout.
// The same limits apply to the main and the metrics listener (except
// MaxConnections, see there).
type Conn struct {
	// HeaderTimeout is the time a client has to send a request's line and
	// headers, counted from the first byte of the request
	// (MCPGATE_HTTP_HEADER_TIMEOUT, default 10s).
	HeaderTimeout time.Duration
	// BodyTimeout is the time a client has to send a request's body in
	// full, counted from the end of its headers
	// (MCPGATE_HTTP_BODY_TIMEOUT, default 30s). A body that has not arrived
	// by then is answered with an error and its connection closed.
	BodyTimeout time.Duration
	// WriteTimeout is the time a client has to take one reply off the
	// wire (MCPGATE_HTTP_WRITE_TIMEOUT, default 30s): a reply, or each
	// event of an SSE stream, so long-lived streams are not cut, but a
	// client that stops reading is.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that carries no request
	// for this long (MCPGATE_HTTP_IDLE_TIMEOUT, default 2m).
	IdleTimeout time.Duration
	// MaxConnections is how many connections the main listener holds at
	// once (MCPGATE_HTTP_MAX_CONNECTIONS, default 4096); further clients
	// wait in the kernel's accept queue until one closes. Every open MCP
	// event stream holds one. The metrics listener has its own, fixed cap
	// (MetricsMaxConnections).
	MaxConnections int
}

// MetricsMaxConnections is how many connections the metrics listener
// (MCPGATE_METRICS_LISTEN) holds at once: enough for probes and scrapers,
// and apart from the main listener's cap, so /readyz answers while the
// main listener is full.
const MetricsMaxConnections = 64

// Defaults of Conn.
const (
	DefaultHeaderTimeout  = 10 * time.Second
	DefaultBodyTimeout    = 30 * time.Second
	DefaultWriteTimeout   = 30 * time.Second
	DefaultIdleTimeout    = 2 * time.Minute
	DefaultMaxConnections = 4096
)

// loadConn reads the connection limits and MCPGATE_METRICS_LISTEN; it
// needs c.Listen.
func (c *Config) loadConn(r *reader) {
	c.Conn = Conn{
		HeaderTimeout:  r.duration("MCPGATE_HTTP_HEADER_TIMEOUT", DefaultHeaderTimeout),
		BodyTimeout:    r.duration("MCPGATE_HTTP_BODY_TIMEOUT", DefaultBodyTimeout),
		WriteTimeout:   r.duration("MCPGATE_HTTP_WRITE_TIMEOUT", DefaultWriteTimeout),
		IdleTimeout:    r.duration("MCPGATE_HTTP_IDLE_TIMEOUT", DefaultIdleTimeout),
		MaxConnections: r.positive("MCPGATE_HTTP_MAX_CONNECTIONS", DefaultMaxConnections),
	}
	c.MetricsListen = r.getenv("MCPGATE_METRICS_LISTEN")
	c.Pprof = r.boolean("MCPGATE_PPROF")
	if c.MetricsListen == "" {
		if c.Pprof {
			r.fail("MCPGATE_PPROF=true needs MCPGATE_METRICS_LISTEN: profiles are served only on the metrics listener, never on the public port; set MCPGATE_METRICS_LISTEN=127.0.0.1:9090, say")
		}
		return
	}
	_, port, err := net.SplitHostPort(c.MetricsListen)
	switch {
	case err != nil:
		r.fail("MCPGATE_METRICS_LISTEN=%q: want host:port, e.g. 127.0.0.1:9090 (%v)", c.MetricsListen, err)
	case c.MetricsListen == c.Listen && port != "0":
		r.fail("MCPGATE_METRICS_LISTEN=%q is MCPGATE_LISTEN too; give /metrics and the probes another port, or unset it to serve them on the main listener", c.MetricsListen)
	}
}

// duration reads a positive Go duration such as 30s, 1m30s or 500ms.
func (r *reader) duration(name string, def time.Duration) time.Duration {
	v := r.getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		r.fail("%s=%q: want a positive duration with its unit, such as 30s, 2m or 500ms", name, v)
		return def
	}
	return d
}
