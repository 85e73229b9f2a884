package server

import (
	"context"
	"net"
	"net/http"
	"slices"
	"sync"
)

// probeReserve is how many connections the main listener accepts beyond
// its cap (config.Conn.MaxConnections) when it serves the probes, so that
// /healthz, /readyz and /metrics answer while client connections (long-lived
// streams, say) fill the cap: enough for a scraper and a kubelet's liveness
// and readiness probes at once.
const probeReserve = 16

// reserveListener caps the connections it holds at once, as
// netutil.LimitListener does, and admits up to reserve more beyond the
// cap as reserve connections: those serve one probe request and close
// (onlyProbesOnReserve). A connection is reserve only while the cap is
// full when it is accepted. Past both, Accept waits, as LimitListener's
// does, and clients wait in the kernel's accept queue.
type reserveListener struct {
	net.Listener
	slots   chan struct{} // one per held connection within the cap
	reserve chan struct{} // one per held reserve connection
}

func newReserveListener(l net.Listener, limit, reserve int) *reserveListener {
	return &reserveListener{Listener: l, slots: make(chan struct{}, limit), reserve: make(chan struct{}, reserve)}
}

// Accept waits for room within the cap or in the reserve, then for a
// connection.
func (l *reserveListener) Accept() (net.Conn, error) {
	var room chan struct{}
	select {
	case l.slots <- struct{}{}:
		room = l.slots
	default:
		select {
		case l.slots <- struct{}{}:
			room = l.slots
		case l.reserve <- struct{}{}:
			room = l.reserve
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-room
		return nil, err
	}
	if room == l.reserve { // a connection within the cap closed meanwhile: take its place
		select {
		case l.slots <- struct{}{}:
			<-l.reserve
			room = l.slots
		default:
		}
	}
	return &heldConn{Conn: c, room: room, reserve: room == l.reserve}, nil
}

// heldConn gives its room back when closed.
type heldConn struct {
	net.Conn
	room    chan struct{}
	reserve bool
	once    sync.Once
}

func (c *heldConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.room })
	return err
}

// reserveKey marks the context of a request on a reserve connection.
type reserveKey struct{}

// markReserve is the http.Server's ConnContext: it marks the requests of
// reserve connections.
func markReserve(ctx context.Context, c net.Conn) context.Context {
	if hc, ok := c.(*heldConn); ok && hc.reserve {
		return context.WithValue(ctx, reserveKey{}, true)
	}
	return ctx
}

// onlyProbesOnReserve serves the probes (probePaths) on reserve
// connections and answers every other request there 503 with Retry-After,
// closing the connection either way so the reserve is free for the next
// probe; requests on other connections go to h unchanged.
func onlyProbesOnReserve(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(reserveKey{}) == nil {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		if r.Method == http.MethodGet && slices.Contains(probePaths, r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable",
			"error": "the gateway holds as many connections as it may (MCPGATE_HTTP_MAX_CONNECTIONS); retry shortly, or close idle connections and streams"})
	})
}
