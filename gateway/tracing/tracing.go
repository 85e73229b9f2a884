// Package tracing sets up OpenTelemetry traces (docs/operations.md, "Traces",
// docs/operations.md "Traces"): an OTLP/HTTP exporter and a sampler
// configured by the standard OTEL_* variables, and the W3C trace context
// carried in HTTP headers and in an MCP request's params._meta (SEP-414).
// Tracing is off, at no cost on the request path, unless an OTLP
// endpoint is configured.
package tracing

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Propagator is the trace context format mcpgate reads and writes:
// traceparent and tracestate (W3C Trace Context), in HTTP headers and in
// params._meta.
var Propagator = propagation.TraceContext{}

// ScopeName names the instrumentation scope of mcpgate's spans.
const ScopeName = "github.com/mcpgate/mcpgate"

// Enabled reports whether getenv configures an OTLP trace endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
// and does not turn traces off (OTEL_SDK_DISABLED=true,
// OTEL_TRACES_EXPORTER=none).
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Tracing is a running trace pipeline: Tracer starts spans, Shutdown
// exports what is buffered and stops.
type Tracing struct {
	Tracer   trace.Tracer
	provider *sdktrace.TracerProvider
}

// New starts the exporter and the tracer provider. The exporter reads
// OTEL_EXPORTER_OTLP_* (endpoint, headers, timeout, …), the provider the
// sampler from OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (default
// parentbased_always_on) and the batch settings from OTEL_BSP_*; the
// resource is service.name mcpgate (OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES override) with the service version.
func New(ctx context.Context, version string) (*Tracing, error) {
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter (OTEL_EXPORTER_OTLP_*): %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("mcpgate"), semconv.ServiceVersion(version)),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("trace resource (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME): %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{Tracer: tp.Tracer(ScopeName), provider: tp}, nil
}

// Shutdown exports the spans still buffered and stops the provider.
func (t *Tracing) Shutdown(ctx context.Context) error { return t.provider.Shutdown(ctx) }

// transport is what the HTTP request of an MCP message tells its spans.
type transport struct{ sessionID, protocolVersion string }

type transportKey struct{}

// Middleware reads the trace context of each request's traceparent
// header and its MCP session and protocol version headers into the
// request's context, for the spans the request path starts (FromContext,
// Transport).
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx = context.WithValue(ctx, transportKey{}, transport{
			sessionID: r.Header.Get("Mcp-Session-Id"), protocolVersion: r.Header.Get("Mcp-Protocol-Version"),
		})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Transport returns the MCP session id and protocol version headers of
// the request ctx belongs to ("" when absent or without Middleware).
func Transport(ctx context.Context) (sessionID, protocolVersion string) {
	t, _ := ctx.Value(transportKey{}).(transport)
	return t.sessionID, t.protocolVersion
}

// MetaCarrier reads and writes the trace context in an MCP request's
// params._meta object (SEP-414: "traceparent" and "tracestate" string
// members). A member that is not a string is not read.
type MetaCarrier map[string]any

// Get returns the string member key.
func (m MetaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

// Set sets member key.
func (m MetaCarrier) Set(key, value string) { m[key] = value }

// Keys lists the members.
func (m MetaCarrier) Keys() []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// FromMeta returns ctx with the remote span context of meta's
// traceparent when it carries a valid one (SEP-414), which then parents
// the request's span in place of the HTTP header's; else ctx.
func FromMeta(ctx context.Context, meta map[string]any) context.Context {
	if _, ok := meta["traceparent"]; !ok {
		return ctx
	}
	if sc := trace.SpanContextFromContext(Propagator.Extract(context.Background(), MetaCarrier(meta))); sc.IsValid() {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return ctx
}

// Inject returns the traceparent and tracestate of ctx's span ("" when
// ctx has no valid span), for a request to an upstream.
func Inject(ctx context.Context) (traceparent, tracestate string) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return "", ""
	}
	var p pair
	Propagator.Inject(ctx, &p)
	return p.traceparent, p.tracestate
}

// pair carries the two members Propagator (W3C Trace Context, nothing
// else) writes, in fields rather than a map: Inject runs for every traced
// call to an upstream, twice (headers and params._meta). Set drops any
// other key, so a propagator that writes more (baggage) needs a map.
type pair struct{ traceparent, tracestate string }

func (p *pair) Get(key string) string {
	switch key {
	case "traceparent":
		return p.traceparent
	case "tracestate":
		return p.tracestate
	}
	return ""
}

func (p *pair) Set(key, value string) {
	switch key {
	case "traceparent":
		p.traceparent = value
	case "tracestate":
		p.tracestate = value
	}
}

// Keys lists the members set.
func (p *pair) Keys() []string {
	keys := make([]string, 0, 2)
	if p.traceparent != "" {
		keys = append(keys, "traceparent")
	}
	if p.tracestate != "" {
		keys = append(keys, "tracestate")
	}
	return keys
}
