package pipeline

import (
	"context"
	"encoding/json"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/tracing"
)

// Span attributes of a tools/call (docs/operations.md, "Traces"): the OpenTelemetry MCP
// semantic conventions' names, and mcpgate's decision.
const (
	attrMethod          = "mcp.method.name"
	attrSession         = "mcp.session.id"
	attrProtocolVersion = "mcp.protocol.version"
	attrToolName        = "gen_ai.tool.name"
	attrOperation       = "gen_ai.operation.name"
	attrErrorType       = "error.type"
	attrAllowed         = "mcpgate.decision.allowed"
	attrDecisionID      = "mcpgate.decision.id"
	attrRevision        = "mcpgate.policy.revision"
	attrReason          = "mcpgate.decision.reason"
	attrAuditStatus     = "mcpgate.audit.status"
)

// startCallSpan starts the server span of a tools/call when tracing is
// on, named "tools/call {tool}" as the MCP semantic conventions say, a
// child of the trace context in params._meta (SEP-414) or else of the
// HTTP request's traceparent (tracing.Middleware). Off, it returns ctx
// and a nil span.
func (pl *Pipeline) startCallSpan(ctx context.Context, params *gateway.CallRequest) (context.Context, trace.Span) {
	if pl.Tracer == nil {
		return ctx, nil
	}
	if len(params.Meta) > 0 {
		var meta map[string]any
		if json.Unmarshal(params.Meta, &meta) == nil {
			ctx = tracing.FromMeta(ctx, meta)
		}
	}
	return pl.startServerSpan(ctx, "tools/call "+params.Name, "tools/call",
		attribute.String(attrToolName, params.Name), attribute.String(attrOperation, "execute_tool"))
}

// startServerSpan starts the server span name of an MCP request of
// method, with the session and protocol version of its HTTP request.
func (pl *Pipeline) startServerSpan(ctx context.Context, name, method string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	attrs = append(attrs, attribute.String(attrMethod, method))
	session, version := tracing.Transport(ctx)
	if session != "" {
		attrs = append(attrs, attribute.String(attrSession, session))
	}
	if version != "" {
		attrs = append(attrs, attribute.String(attrProtocolVersion, version))
	}
	return pl.Tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// listSpan starts the server span of a tools/list when tracing is on
// (nil when off); the caller ends it.
func (pl *Pipeline) listSpan(ctx context.Context) (context.Context, trace.Span) {
	if pl.Tracer == nil {
		return ctx, nil
	}
	return pl.startServerSpan(ctx, "tools/list", "tools/list")
}

// endCallSpan records the call's decision and outcome on span (nil: off)
// and ends it.
func endCallSpan(span trace.Span, c *Call, res *gateway.ToolResult, err error) {
	if span == nil {
		return
	}
	ev := c.Event
	// One SetAttributes call: each takes the span's lock and grows its
	// attribute list.
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, attribute.String(attrAuditStatus, ev.Status), attribute.String(attrRevision, ev.PolicyRevision))
	if d := c.Decision; d != nil {
		attrs = append(attrs, attribute.Bool(attrAllowed, d.Allow), attribute.String(attrDecisionID, d.ID))
	} else {
		attrs = append(attrs, attribute.Bool(attrAllowed, false))
	}
	if len(ev.ReasonCodes) > 0 {
		attrs = append(attrs, attribute.String(attrReason, ev.ReasonCodes[0]))
	}
	switch {
	case err != nil:
		attrs = append(attrs, attribute.String(attrErrorType, string(gateway.ErrorCodeOf(err))))
		span.SetStatus(codes.Error, gateway.ErrorMessageOf(err))
	case res != nil && res.IsError:
		attrs = append(attrs, attribute.String(attrErrorType, "tool_error"))
		span.SetStatus(codes.Error, "tool_error")
	}
	span.SetAttributes(attrs...)
	span.End()
}

// runStep runs step i of callSteps, in a child span named after the step
// when tracing is on, the call's span is recorded (its trace sampled)
// and the step is one of spannedSteps (the one hook on the step loop:
// steps know nothing of tracing). Under a call span the sampler left out
// a child would not be recorded either: starting it would cost the call
// an id and a context and show nothing.
func (pl *Pipeline) runStep(ctx context.Context, i int, s step, c *Call) error {
	name := stepNames()[i]
	if pl.Tracer == nil || !spanSteps()[i] || (name == approvalStep && !needsApproval(c)) ||
		!trace.SpanFromContext(ctx).IsRecording() {
		return s(pl, ctx, c)
	}
	if name == decideStep {
		return pl.decideSpanned(ctx, s, c)
	}
	ctx, span := pl.Tracer.Start(ctx, name)
	err := s(pl, ctx, c)
	endStepSpan(span, err)
	return err
}

// decideSpanned runs the decide step s and gives it its span only when
// the engine evaluated the policy: a decision from the engine's cache
// (Decision.Cached) is a lookup in memory, whose time the call's span
// holds as it holds the other checks'. The span is started once the
// step has run, with the step's start time; the step starts no spans of
// its own.
func (pl *Pipeline) decideSpanned(ctx context.Context, s step, c *Call) error {
	start := time.Now()
	err := s(pl, ctx, c)
	if err == nil && c.Decision != nil && c.Decision.Cached {
		return nil
	}
	_, span := pl.Tracer.Start(ctx, decideStep, trace.WithTimestamp(start))
	endStepSpan(span, err)
	return err
}

// endStepSpan ends a step's span, with status error when the step failed.
func endStepSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, gateway.ErrorMessageOf(err))
	}
	span.End()
}

// spannedSteps are the steps that get a child span of the call's:
// the decision, a person's approval, the reservation and the dispatch,
// where a call waits on the policy, a person, the store or the upstream.
// The other steps are checks in memory (or a cached read) whose time the
// call's span holds; a span each would cost every traced call more than
// they take (docs/benchmarks.md, "Tracing"). The approval step gets its
// span only when the decision asks for a person (needsApproval): for
// any other call it returns at once. The decision gets its span only
// when the policy was evaluated, not read from the engine's cache
// (decideSpanned).
var spannedSteps = []string{decideStep, approvalStep, "mcpgate.confirmOrReserve", "mcpgate.dispatch"}

// decideStep and approvalStep are the span names of decide and
// awaitApproval.
const (
	decideStep   = "mcpgate.decide"
	approvalStep = "mcpgate.awaitApproval"
)

// spanSteps reports by callSteps index whether the step gets a span
// (spannedSteps).
var spanSteps = sync.OnceValue(func() []bool {
	out := make([]bool, len(callSteps))
	for i, name := range stepNames() {
		out[i] = slices.Contains(spannedSteps, name)
	}
	return out
})

// stepNames are the names of callSteps' methods ("decide", "dispatch",
// …), read once from the functions themselves, so a step added to the
// list is named without more code.
var stepNames = sync.OnceValue(func() []string {
	out := make([]string, len(callSteps))
	for i, s := range callSteps {
		name := runtime.FuncForPC(reflect.ValueOf(s).Pointer()).Name() // …/pipeline.(*Pipeline).decide-fm
		name = strings.TrimSuffix(name[strings.LastIndexByte(name, '.')+1:], "-fm")
		out[i] = "mcpgate." + name
	}
	return out
})

// traceID is the trace id of ctx's span, "" without one.
func traceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return sc.TraceID().String()
	}
	return ""
}
