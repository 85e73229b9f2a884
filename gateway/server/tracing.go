package server

import (
	"context"
	"net/http"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway/tracing"
)

// openTracing starts traces when the standard OTEL_* variables configure
// an OTLP endpoint (docs/operations.md, "Traces"; tracing.Enabled); off, every pipeline's
// Tracer stays nil. The exporter reads the environment itself, so these
// variables are read from the process, not from Config.
func (a *App) openTracing(ctx context.Context, log *zap.Logger, version string) error {
	if !tracing.Enabled(os.Getenv) {
		return nil
	}
	tr, err := tracing.New(ctx, version)
	if err != nil {
		return err
	}
	a.tracer = tr.Tracer
	a.closers = append(a.closers, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return tr.Shutdown(ctx)
	})
	log.Info("traces on: OTLP/HTTP exporter and sampler from the OTEL_* variables",
		zap.String("endpoint", os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")), zap.String("sampler", os.Getenv("OTEL_TRACES_SAMPLER")))
	return nil
}

// traced is h reading each request's trace context when on.
func traced(h http.Handler, on bool) http.Handler {
	if !on {
		return h
	}
	return tracing.Middleware(h)
}
