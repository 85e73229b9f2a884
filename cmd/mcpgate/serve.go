package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"io"

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
	ls, err := app.Listen()
	if err != nil {
		return err
	}
	if devEnv != nil {
		if err := devEnv.seed(ctx, app, out, "http://"+ls.Main.Addr().String()); err != nil {
			_ = ls.Close()
			return err
		}
	}
	log.Info("mcpgate listening", zap.String("addr", ls.Main.Addr().String()), zap.String("edition", string(cfg.Edition)), zap.String("version", version))
	if ls.Metrics != nil {
		log.Info("metrics and probes listening", zap.String("addr", ls.Metrics.Addr().String()))
	}
	return app.Serve(ctx, ls, log)
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
