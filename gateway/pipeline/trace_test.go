package pipeline_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
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

// A decision the engine evaluated gets its mcpgate.decide span, started
// when the step began and a child of the call's; one the engine answered
// from its cache gets none (a lookup in memory, like the checks whose
// time the call's span holds).
func TestCachedDecisionHasNoSpan(t *testing.T) {
	pl, p := benchPipeline(t, allowBundle, structuredAdapter{})
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	pl.Tracer = tp.Tracer("test")
	raw := json.RawMessage(`{"workflow_id":"wfl-1","inputs":{"date":"2026-11-30","count":3}}`)
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil {
		t.Fatal(err)
	}
	call := func() []string {
		t.Helper()
		rec.Reset()
		if _, err := pl.CallTool(context.Background(), p, &gateway.CallRequest{Name: "workflow.trigger", Arguments: args, RawArguments: raw}); err != nil {
			t.Fatal(err)
		}
		var names []string
		var root, decide sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			names = append(names, s.Name())
			switch s.Name() {
			case "tools/call workflow.trigger":
				root = s
			case "mcpgate.decide":
				decide = s
			}
		}
		if decide != nil && (root == nil || decide.Parent().SpanID() != root.SpanContext().SpanID() ||
			decide.StartTime().Before(root.StartTime()) || decide.EndTime().Before(decide.StartTime())) {
			t.Fatalf("decide span %v (parent %v, %v–%v) is not a child of the call's span %v within it", decide.Name(), decide.Parent().SpanID(), decide.StartTime(), decide.EndTime(), root)
		}
		slices.Sort(names)
		return names
	}
	if got, want := call(), []string{"mcpgate.confirmOrReserve", "mcpgate.decide", "mcpgate.dispatch", "tools/call workflow.trigger"}; !slices.Equal(got, want) {
		t.Fatalf("spans of the first call = %v, want %v", got, want)
	}
	if got, want := call(), []string{"mcpgate.confirmOrReserve", "mcpgate.dispatch", "tools/call workflow.trigger"}; !slices.Equal(got, want) {
		t.Fatalf("spans of the same call again (decision cached) = %v, want %v", got, want)
	}
}
