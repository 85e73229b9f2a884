package pipeline_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/canon"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
	"github.com/mcpgate/mcpgate/gateway/tracing"
	"github.com/mcpgate/mcpgate/tools"
)

// memoryStore commits every reservation and audit write at once, so a
// benchmark measures the pipeline, not a database. Other Store methods are
// not called on the path it serves (the embedded nil interface panics).
type memoryStore struct {
	pipeline.Store
	id int64
}

func (s *memoryStore) Reserve(_ context.Context, r gateway.Reservation) (gateway.ReservationResult, error) {
	s.id++
	return gateway.ReservationResult{AuditID: s.id}, nil
}
func (s *memoryStore) FinishAudit(context.Context, *gateway.AuditEvent) error { return nil }

type fixedCaller struct{ c *gateway.Caller }

func (f fixedCaller) LoadCaller(context.Context, *gateway.Principal) (*gateway.Caller, error) {
	return f.c, nil
}

// structuredAdapter answers every call with a small structured result, as
// the demo backend does.
type structuredAdapter struct{}

func (structuredAdapter) CallTool(context.Context, gateway.ToolCall) (*gateway.ToolResult, error) {
	return &gateway.ToolResult{StructuredContent: map[string]any{"run_id": "run-1", "status": "queued", "position": json.Number("3")}}, nil
}

// allowBundle is a policy that allows a member's calls of read and ops
// tools: the engine, its input and its cache do their whole work, on rules
// of this test's own (the pipeline links no bundle).
var allowBundle = fstest.MapFS{"supacloud/decision.rego": {Data: []byte(`package supacloud

decision := {"allow": true, "visible": true} if {
	input.member.role == "member"
	input.tool.tier in {"read", "ops"}
	input.arguments.workflow_id != ""
}

visible_tools := set()
`)}}

// benchPipeline is the pipeline of the benchmarks: the shipped catalog,
// bundle's policy with its cache warm after the first call, one fixed
// caller (member olivia of ws-a on task t-1 with profile p-1 granting
// read and ops), the default limits, a store that costs nothing and
// adapter; and the principal that calls.
func benchPipeline(b testing.TB, bundle fstest.MapFS, adapter pipeline.Adapter) (*pipeline.Pipeline, *gateway.Principal) {
	b.Helper()
	ctx := context.Background()
	cat, err := tools.Load()
	if err != nil {
		b.Fatal(err)
	}
	refs := make([]policy.ToolRef, 0, cat.Len())
	for _, t := range cat.Tools() {
		refs = append(refs, policy.ToolRef{Name: t.Name, Tier: t.Tier, CarveOut: t.CarveOut})
	}
	engine, err := policy.New(ctx, policy.Options{FS: bundle, Edition: gateway.EditionCommunity, Tools: refs})
	if err != nil {
		b.Fatal(err)
	}
	rules := ratelimit.NewRules(ratelimit.DefaultLimits())
	caller := &gateway.Caller{
		Workspace:        &gateway.Workspace{ID: "ws-a", OrgPlan: "team"},
		Task:             &gateway.Task{WorkspaceID: "ws-a", ID: "t-1", Status: gateway.TaskRunning},
		OrgPlan:          &gateway.OrgPlan{Name: "team", Permissions: gateway.Permissions{"workspace.budget.view": true}},
		Member:           &gateway.Member{WorkspaceID: "ws-a", UserID: "olivia", Role: "member", SeatType: "developer"},
		ProfileRequested: "p-1",
		Profile:          &gateway.Profile{WorkspaceID: "ws-a", ID: "p-1", Name: "ci-bot", Allowlist: []string{"supacloud.read.*", "supacloud.ops.*"}},
	}
	pl := &pipeline.Pipeline{Store: &memoryStore{}, Callers: fixedCaller{caller}, Decider: engine, Catalog: cat,
		Adapter: adapter, RateLimits: &rules}
	p := &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "olivia", WorkspaceID: "ws-a", TaskID: "t-1", ProfileID: "p-1"}
	return pl, p
}

// BenchmarkCallTool measures one allowed tools/call through every step of
// the pipeline (catalog, caller, the policy engine with its cache warm,
// schema, rate-limit plan, reservation, dispatch, obligations, finish) on
// a store that costs nothing, from parsed params to the result, with the
// result encoded as the transport encodes it.
func BenchmarkCallTool(b *testing.B) {
	pl, p := benchPipeline(b, allowBundle, structuredAdapter{})
	benchCalls(b, pl, p)
}

// BenchmarkCallToolTraced is BenchmarkCallTool with tracing on: every
// call sampled, its server span and step spans recorded (and dropped, no
// exporter), for the cost tracing adds against BenchmarkCallTool, where
// it is off (docs/benchmarks.md).
func BenchmarkCallToolTraced(b *testing.B) {
	pl, p := benchPipeline(b, allowBundle, structuredAdapter{})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	pl.Tracer = tp.Tracer("bench")
	benchCalls(b, pl, p)
}

// BenchmarkCallToolExported is BenchmarkCallToolTraced with the gateway's
// own trace pipeline (tracing.New: the batch span processor and the
// OTLP/HTTP exporter) sending every span to a sink in this process, so
// that cpu-µs/op holds all that tracing costs a call: its spans, their
// batching, protobuf encoding and POST, and the garbage they leave (the
// sink's reading of the POSTs too, a small part).
func BenchmarkCallToolExported(b *testing.B) {
	var posts atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		posts.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(sink.Close)
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
	b.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "") // the general endpoint above, not one from the environment
	b.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	// A queue that holds every span of the run: the batch processor drops
	// those that find its queue full, and a dropped span costs nothing.
	b.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", "1000000")
	tr, err := tracing.New(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	pl, p := benchPipeline(b, allowBundle, structuredAdapter{})
	pl.Tracer = tr.Tracer
	// The spans still queued are exported inside the measured time.
	benchCalls(b, pl, p, func() {
		if err := tr.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
	})
	if posts.Load() == 0 {
		b.Fatal("the sink received no export")
	}
}

// benchCalls calls workflow.trigger through pl as p, b.N times, then
// each of finish (work the calls left behind, to be counted with them),
// and reports, beside the wall time, cpu-µs/op: the process's CPU time
// (user and system, every goroutine's, the collector's too) per call.
func benchCalls(b *testing.B, pl *pipeline.Pipeline, p *gateway.Principal, finish ...func()) {
	ctx := context.Background()
	raw := json.RawMessage(`{"workflow_id":"wfl-1","inputs":{"date":"2026-11-30","count":3}}`)
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		args, err := canon.Decode(raw)
		if err != nil {
			b.Fatal(err)
		}
		res, err := pl.CallTool(ctx, p, &gateway.CallRequest{Name: "workflow.trigger", Arguments: args.(map[string]any), RawArguments: raw})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(res); err != nil {
			b.Fatal(err)
		}
	}
	for _, f := range finish {
		f()
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
