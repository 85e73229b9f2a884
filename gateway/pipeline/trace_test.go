package pipeline_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpgate/mcpgate/gateway"
)

// countingTracer counts the spans started through it.
type countingTracer struct {
	trace.Tracer
	started atomic.Int64
}

func (t *countingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	t.started.Add(1)
	return t.Tracer.Start(ctx, name, opts...)
}

// A call whose trace the sampler leaves out starts its call span only:
// its step spans would not be recorded either, so none is started (each
// would cost the call an id and a context). A sampled call starts the
// call span and one per spanned step (decide, confirmOrReserve,
// dispatch; no approval asked).
func TestUnsampledCallStartsNoStepSpans(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sampler sdktrace.Sampler
		want    int64
	}{
		{"never", sdktrace.NeverSample(), 1},
		{"always", sdktrace.AlwaysSample(), 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, p := benchPipeline(t, allowBundle, structuredAdapter{})
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(tc.sampler))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			tr := &countingTracer{Tracer: tp.Tracer("test")}
			pl.Tracer = tr
			raw := json.RawMessage(`{"workflow_id":"wfl-1","inputs":{"date":"2026-11-30","count":3}}`)
			var args map[string]any
			if err := json.Unmarshal(raw, &args); err != nil {
				t.Fatal(err)
			}
			if _, err := pl.CallTool(context.Background(), p, &gateway.CallRequest{Name: "workflow.trigger", Arguments: args, RawArguments: raw}); err != nil {
				t.Fatal(err)
			}
			if got := tr.started.Load(); got != tc.want {
				t.Errorf("spans started = %d, want %d", got, tc.want)
			}
		})
	}
}
