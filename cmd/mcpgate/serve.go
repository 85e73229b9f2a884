package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
)

func serve(ctx context.Context, args []string, out io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	dev := fs.Bool("dev", false, "development mode: embedded store, demo workspace, generated keys, console logs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var devEnv *devDefaults
	if *dev {
		devEnv = newDevDefaults(getenv)
		getenv = devEnv.getenv
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	log, err := newLogger(cfg.LogFormat)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	app, err := server.Open(ctx, cfg, log, version)
	if err != nil {
		return err
	}
	defer func() { _ = app.Close() }()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("MCPGATE_LISTEN=%s: %w", cfg.Listen, err)
	}
	if devEnv != nil {
		if err := devEnv.seed(ctx, app, out, "http://"+ln.Addr().String()); err != nil {
			_ = ln.Close()
			return err
		}
	}
	log.Info("mcpgate listening", zap.String("addr", ln.Addr().String()), zap.String("edition", string(cfg.Edition)), zap.String("version", version))
	return serveHTTP(ctx, ln, app.Server, log)
}

// serveHTTP serves until ctx ends, then drains for up to 10 s.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, log *zap.Logger) error {
	// IdleTimeout closes keep-alive connections nobody uses; request bodies
	// have their own read deadline in the MCP transport.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// newLogger returns a zap logger: JSON for production, console for make run.
// Tokens and secrets are never passed to it.
func newLogger(format string) (*zap.Logger, error) {
	if format == "console" {
		cfg := zap.NewDevelopmentConfig()
		cfg.EncoderConfig.EncodeLevel = zapcore.CapitalColorLevelEncoder
		return cfg.Build()
	}
	return zap.NewProduction()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func migrate(ctx context.Context, getenv func(string) string) error {
	url := getenv("MCPGATE_DATABASE_URL")
	if url == "" {
		url = "sqlite:mcpgate.db"
	}
	s, err := server.OpenStore(ctx, url)
	if err != nil {
		return err
	}
	return s.Close()
}
