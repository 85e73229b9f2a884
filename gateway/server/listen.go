package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/net/netutil"

	"github.com/mcpgate/mcpgate/gateway/config"
)

// Listeners are the open listeners of one gateway process. Each holds at
// most a fixed number of connections at once (config.Conn.MaxConnections,
// config.MetricsMaxConnections); a client above the cap waits in the
// kernel's accept queue until a connection closes. The probes never wait
// behind client connections: on a listener of their own, or, when Main
// serves them, on a reserve of probeReserve connections beyond Main's cap
// (reserveListener).
type Listeners struct {
	// Main serves the MCP endpoints, the admin API and the OAuth metadata
	// (MCPGATE_LISTEN), and the probes unless Metrics is open.
	Main net.Listener
	// Metrics serves /metrics, /healthz and /readyz
	// (MCPGATE_METRICS_LISTEN); nil when they are served on Main.
	Metrics net.Listener
	// CCServer serves the cc_server surface (MCPGATE_CCSERVER_LISTEN);
	// nil when it is off.
	CCServer net.Listener
}

// Close closes every listener.
func (l *Listeners) Close() error {
	err := l.Main.Close()
	if l.Metrics != nil {
		err = errors.Join(err, l.Metrics.Close())
	}
	if l.CCServer != nil {
		err = errors.Join(err, l.CCServer.Close())
	}
	return err
}

// Listen opens the listeners the configuration names, on a.Config
// (Listen).
func (a *App) Listen() (*Listeners, error) { return Listen(a.Config) }

// Listen opens the listeners cfg names: the main one, the metrics one when
// MCPGATE_METRICS_LISTEN is set, the cc_server one when the surface is on.
// It needs nothing of an App, so `serve` binds first, before the store
// opens and the policy's tests run: an address in use fails at once. An
// address that cannot be bound fails with an error naming its variable.
func Listen(cfg *config.Config) (*Listeners, error) {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, listenError("MCPGATE_LISTEN", cfg.Listen, err)
	}
	ls := &Listeners{Main: newReserveListener(ln, cfg.MaxConnections, probeReserve)}
	if cfg.MetricsListen != "" {
		ls.Main = netutil.LimitListener(ln, cfg.MaxConnections) // the probes are served apart
		ml, err := net.Listen("tcp", cfg.MetricsListen)
		if err != nil {
			_ = ln.Close()
			return nil, listenError("MCPGATE_METRICS_LISTEN", cfg.MetricsListen, err)
		}
		ls.Metrics = netutil.LimitListener(ml, config.MetricsMaxConnections)
	}
	if cfg.CCServer.On() {
		cl, err := net.Listen("tcp", cfg.CCServer.Listen)
		if err != nil {
			_ = ls.Close()
			return nil, listenError("MCPGATE_CCSERVER_LISTEN", cfg.CCServer.Listen, err)
		}
		ls.CCServer = netutil.LimitListener(cl, cfg.MaxConnections)
	}
	return ls, nil
}

// listenError words a failed bind of the address in the variable name.
// An address in use (the commonest case: a second gateway, or another
// program on 8080, or on 9030 under `serve --dev`) says what to do.
func listenError(name, addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s=%s: another process already listens on %s; stop it, or set %s to a free host:port (%w)", name, addr, addr, name, err)
	}
	return fmt.Errorf("%s=%s: %w", name, addr, err)
}

// Serve serves ls until ctx ends, then drains open requests for up to
// drainTimeout. It closes the listeners. Every connection is answered or
// closed in bounded time: see newHTTPServer.
func (a *App) Serve(ctx context.Context, ls *Listeners, log *zap.Logger) error {
	main := newHTTPServer(onlyProbesOnReserve(a.Server), a.Config.Conn, log)
	main.ConnContext = markReserve
	servers := []*http.Server{main}
	serving := []net.Listener{ls.Main}
	if ls.Metrics != nil {
		servers = append(servers, newHTTPServer(a.Server.Probes(), a.Config.Conn, log))
		serving = append(serving, ls.Metrics)
	}
	if ls.CCServer != nil && a.CC != nil {
		servers = append(servers, newHTTPServer(a.CC.Handler, a.Config.Conn, log))
		serving = append(serving, ls.CCServer)
	}
	done := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { done <- srv.Serve(serving[i]) }()
	}
	var err error
	select {
	case err = <-done: // a listener failed: stop the others too
	case <-ctx.Done():
		log.Info("shutting down")
	}
	sctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	for _, srv := range servers {
		if serr := srv.Shutdown(sctx); serr != nil && !errors.Is(serr, context.DeadlineExceeded) && err == nil {
			err = serr
		}
	}
	return err
}

// drainTimeout is how long Serve waits for open requests at shutdown.
const drainTimeout = 10 * time.Second

// newHTTPServer returns the http.Server of one listener, with the limits of
// c:
//   - a client has HeaderTimeout to send a request's headers, then
//     BodyTimeout to send its body (withBodyDeadline);
//   - a reply must be written within WriteTimeout of the request; the MCP
//     transport gives each SSE event, and a POST reply that waited for long
//     tool calls, a WriteTimeout of its own, so streams are not cut;
//   - a keep-alive connection without a request is closed after
//     IdleTimeout.
//
// ReadTimeout stays off: it would also bound the read net/http keeps
// pending while a handler runs, and so cancel the context of a long call
// or stream when it passes.
func newHTTPServer(h http.Handler, c config.Conn, log *zap.Logger) *http.Server {
	return &http.Server{
		Handler:           withBodyDeadline(h, c.BodyTimeout, c.WriteTimeout),
		ReadHeaderTimeout: c.HeaderTimeout,
		WriteTimeout:      c.WriteTimeout,
		IdleTimeout:       c.IdleTimeout,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
}

// withBodyDeadline gives a client timeout, from the end of a request's
// headers, to send the request's body. The read deadline stays in force
// until the body has been read to its end, so it also bounds the read
// net/http makes after the handler to discard a body the handler did not
// read (an unauthenticated POST, say): a body that stalls always ends with
// an error reply and a closed connection. net/http lifts the deadline
// itself when the body reaches EOF, as it starts the read it keeps pending
// to notice the client leaving, so a long reply after a complete body is
// not cut (TestBodyDeadlineLiftedOnceBodyIsRead holds it to that).
// Requests without a body get no deadline: that pending read starts at
// once for them, and the deadline would cancel their context (an SSE
// stream's, say) when it passed.
//
// The write deadline of a request with a body counts from the end of its
// body time, not from the request (as http.Server.WriteTimeout would): the
// reply to a body that stalls, a 408, is written after the body timeout
// passed, and must still get through.
func withBodyDeadline(h http.Handler, timeout, write time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			body := time.Now().Add(timeout)
			_ = rc.SetReadDeadline(body)
			if write > 0 {
				_ = rc.SetWriteDeadline(body.Add(write))
			}
		}
		h.ServeHTTP(w, r)
	})
}
