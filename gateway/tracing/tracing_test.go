package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

const (
	traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	spanID  = "00f067aa0ba902b7"
	parent  = "00-" + traceID + "-" + spanID + "-01"
)

func TestEnabled(t *testing.T) {
	for name, tc := range map[string]struct {
		env  map[string]string
		want bool
	}{
		"nothing set":     {map[string]string{}, false},
		"endpoint":        {map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		"traces endpoint": {map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		"SDK disabled":    {map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"}, false},
		"exporter none":   {map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Enabled(func(k string) string { return tc.env[k] }); got != tc.want {
				t.Fatalf("Enabled = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFromMetaAndInject(t *testing.T) {
	ctx := FromMeta(context.Background(), map[string]any{"traceparent": parent, "tracestate": "vendor=1"})
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsRemote() || sc.TraceID().String() != traceID || sc.SpanID().String() != spanID {
		t.Fatalf("span context from _meta = %+v, want the remote %s/%s", sc, traceID, spanID)
	}
	if tp, ts := Inject(ctx); tp != parent || ts != "vendor=1" {
		t.Fatalf("Inject = %q %q, want %q vendor=1", tp, ts, parent)
	}
	for name, meta := range map[string]map[string]any{
		"none":       {},
		"not string": {"traceparent": 42},
		"malformed":  {"traceparent": "00-zz-yy-01"},
	} {
		if sc := trace.SpanContextFromContext(FromMeta(context.Background(), meta)); sc.IsValid() {
			t.Errorf("%s: _meta %v gave span context %+v, want none", name, meta, sc)
		}
	}
	if tp, _ := Inject(context.Background()); tp != "" {
		t.Fatalf("Inject without a span = %q, want empty", tp)
	}
	noState := FromMeta(context.Background(), map[string]any{"traceparent": parent})
	if tp, ts := Inject(noState); tp != parent || ts != "" {
		t.Fatalf("Inject without a tracestate = %q %q, want %q and none", tp, ts, parent)
	}
}

func TestMiddleware(t *testing.T) {
	var got context.Context
	h := Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r.Context() }))
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set("Traceparent", parent)
	r.Header.Set("Mcp-Session-Id", "s-1")
	r.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if sc := trace.SpanContextFromContext(got); sc.TraceID().String() != traceID {
		t.Fatalf("trace from the header = %+v", sc)
	}
	if s, v := Transport(got); s != "s-1" || v != "2025-06-18" {
		t.Fatalf("Transport = %q %q", s, v)
	}
}

// New's provider samples as OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG say (docs/operations.md, "Traces"): the default
// follows a caller's decision, always_off and a ratio of 0 keep nothing,
// parentbased_traceidratio follows a sampled caller whatever the ratio.
func TestNewHonoursTheSampler(t *testing.T) {
	sampled := trace.TraceFlags(0).WithSampled(true)
	tid, _ := trace.TraceIDFromHex(traceID)
	sid, _ := trace.SpanIDFromHex(spanID)
	parent := trace.ContextWithRemoteSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: sampled, Remote: true}))
	unsampledParent := trace.ContextWithRemoteSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, Remote: true}))
	for _, tc := range []struct {
		sampler, arg               string
		root, child, childOfUnsamp bool
	}{
		{"", "", true, true, false},
		{"always_off", "", false, false, false},
		{"always_on", "", true, true, true},
		{"traceidratio", "0", false, false, false},
		{"parentbased_traceidratio", "0", false, true, false},
		{"parentbased_always_off", "", false, true, false},
	} {
		name := strings.TrimSpace(tc.sampler + " " + tc.arg)
		if name == "" {
			name = "unset"
		}
		t.Run(name, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv("OTEL_TRACES_SAMPLER", tc.sampler)
			t.Setenv("OTEL_TRACES_SAMPLER_ARG", tc.arg)
			tr, err := New(context.Background(), "test")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tr.Shutdown(context.Background()) }()
			for _, c := range []struct {
				name string
				ctx  context.Context
				want bool
			}{{"root", context.Background(), tc.root}, {"child of a sampled caller", parent, tc.child}, {"child of an unsampled caller", unsampledParent, tc.childOfUnsamp}} {
				_, span := tr.Tracer.Start(c.ctx, "x")
				if got := span.SpanContext().IsSampled(); got != c.want {
					t.Errorf("%s: sampled %v, want %v", c.name, got, c.want)
				}
				span.End()
			}
		})
	}
}

// BenchmarkInject is the trace context written into each traced call to
// an upstream (twice a call: headers and params._meta).
func BenchmarkInject(b *testing.B) {
	ctx := FromMeta(context.Background(), map[string]any{"traceparent": parent, "tracestate": "vendor=1"})
	b.ReportAllocs()
	for b.Loop() {
		if tp, _ := Inject(ctx); tp == "" {
			b.Fatal("no traceparent")
		}
	}
}
