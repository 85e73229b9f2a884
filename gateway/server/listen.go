package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// Listeners are the open listeners of one gateway process.
type Listeners struct {
	// Main serves the MCP endpoints, the admin API and the OAuth metadata
	// (MCPGATE_LISTEN).
	Main net.Listener
}

// Close closes every listener.
func (l *Listeners) Close() error {
	return l.Main.Close()
}

// Listen opens the listeners the configuration names. An address already
// in use fails with an error naming its variable.
func (a *App) Listen() (*Listeners, error) {
	ln, err := net.Listen("tcp", a.Config.Listen)
	if err != nil {
		return nil, fmt.Errorf("MCPGATE_LISTEN=%s: %w", a.Config.Listen, err)
	}
	return &Listeners{Main: ln}, nil
}

// Serve serves ls until ctx ends, then drains open requests for up to
// drainTimeout. It closes the listeners.
func (a *App) Serve(ctx context.Context, ls *Listeners, log *zap.Logger) error {
	// IdleTimeout closes keep-alive connections nobody uses; request bodies
	// have their own read deadline in the MCP transport.
	srv := &http.Server{Handler: a.Server, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ls.Main) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// drainTimeout is how long Serve waits for open requests at shutdown.
const drainTimeout = 10 * time.Second
