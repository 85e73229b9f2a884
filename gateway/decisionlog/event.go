// Package decisionlog writes one event per tools/call decision in OPA's
// decision-log event format, masked by the policy bundle's
// data.system.log.mask rule, to a JSONL file and/or an OPA-compatible HTTP
// service, without ever holding up the call that made the decision.
package decisionlog

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpgate/mcpgate/gateway"
)

// Event is one decision-log event with the field names of OPA's decision
// log plugin (its EventV1): the same JSON a collector built for OPA reads.
// Input and Result are JSON values (maps, slices, strings, json.Number,
// bools, nil) that the event owns: masking changes them in place.
type Event struct {
	// Labels identify the gateway process: "id" (random per process, as
	// OPA's instance id), "version" (mcpgate's) and "app" ("mcpgate").
	Labels map[string]string `json:"labels"`
	// DecisionID is the decision's id, as in the audit row and the
	// tool execution error's _meta denial.
	DecisionID string `json:"decision_id"`
	// Bundles names, per bundle, the revision that decided; empty when
	// the revision is not known.
	Bundles map[string]BundleInfo `json:"bundles,omitempty"`
	// Path is the decision's query as a slash path, e.g.
	// "supacloud/decision" for data.supacloud.decision.
	Path string `json:"path,omitempty"`
	// Input is the policy input as evaluated, nil when the mask erased it.
	Input any `json:"input,omitempty"`
	// Result is the decision document (allow, visible, tier, reasons,
	// obligations).
	Result any `json:"result,omitempty"`
	// Erased and Masked list the JSON pointers the mask removed and
	// upserted, as OPA writes them.
	Erased []string `json:"erased,omitempty"`
	Masked []string `json:"masked,omitempty"`
	// Timestamp is when the decision was made (UTC).
	Timestamp time.Time `json:"timestamp"`
	// Metrics holds OPA-style timers, e.g. "timer_mcpgate_decide_ns".
	Metrics map[string]any `json:"metrics,omitempty"`
	// Custom is OPA's field for what a deployment adds: mcpgate puts the
	// tool name and the request id there ("tool", "request_id").
	Custom map[string]any `json:"custom,omitempty"`
	// TraceID and SpanID name the span of the decision when the call is
	// traced (docs/operations.md, "Traces"), as OPA's own events do with distributed
	// tracing on; empty otherwise.
	TraceID string `json:"trace_id,omitempty"`
	SpanID  string `json:"span_id,omitempty"`
}

// BundleInfo is OPA's per-bundle metadata of an event.
type BundleInfo struct {
	Revision string `json:"revision,omitempty"`
}

// The surface whose decisions are logged and the path of its query.
const (
	Bundle       = "supacloud"
	DecisionPath = "supacloud/decision"
)

// maskInput is the event as the mask policy sees it (OPA gives the mask the
// event itself as input: input.input is the policy input, input.result the
// decision). It shares Input and Result with ev.
func (ev *Event) maskInput() map[string]any {
	m := map[string]any{
		"decision_id": ev.DecisionID,
		"path":        ev.Path,
		"timestamp":   ev.Timestamp.Format(time.RFC3339Nano),
	}
	if ev.Labels != nil {
		labels := make(map[string]any, len(ev.Labels))
		for k, v := range ev.Labels {
			labels[k] = v
		}
		m["labels"] = labels
	}
	if len(ev.Bundles) > 0 {
		b := make(map[string]any, len(ev.Bundles))
		for k, v := range ev.Bundles {
			b[k] = map[string]any{"revision": v.Revision}
		}
		m["bundles"] = b
	}
	if ev.Input != nil {
		m["input"] = ev.Input
	}
	if ev.Result != nil {
		m["result"] = ev.Result
	}
	if ev.Metrics != nil {
		m["metrics"] = ev.Metrics
	}
	if ev.Custom != nil {
		m["custom"] = ev.Custom
	}
	return m
}

// resultDocument is the decision document of d as the policy returns it
// (policies/supacloud/README.md, Decision), as a JSON value the event owns.
func resultDocument(d *gateway.Decision) map[string]any {
	reasons := make([]any, len(d.Reasons))
	for i, r := range d.Reasons {
		reasons[i] = map[string]any{"code": r.Code, "message": r.Message}
	}
	redact := make([]any, len(d.Obligations.Redact))
	for i, f := range d.Obligations.Redact {
		redact[i] = f
	}
	return map[string]any{
		"allow":   d.Allow,
		"visible": d.Visible,
		"tier":    string(d.Tier),
		"reasons": reasons,
		"obligations": map[string]any{
			"redact":                redact,
			"confirmation_required": d.Obligations.ConfirmationRequired,
		},
	}
}

// LogDecision logs the decision d of one tools/call of tool on the
// SupaCloud surface (Bundle): input is the policy input as evaluated
// (gateway.Decision.Input), revision the bundle revision that decided (""
// when unknown), took the time the decision took. It returns at once
// (Log); the request id comes from ctx. It implements the pipeline's
// DecisionLog.
func (l *Logger) LogDecision(ctx context.Context, d *gateway.Decision, input any, tool, revision string, took time.Duration) {
	l.logDecision(ctx, Bundle, d, input, tool, revision, took)
}

// ForSurface is the pipeline's DecisionLog of another surface's pipeline
// (e.g. "ccserver"): its events have path "<surface>/decision" and name
// the revision under bundles.<surface>.
func (l *Logger) ForSurface(surface string) *SurfaceLog { return &SurfaceLog{l: l, surface: surface} }

// SurfaceLog logs the decisions of one surface (Logger.ForSurface).
type SurfaceLog struct {
	l       *Logger
	surface string
}

// LogDecision is Logger.LogDecision for the surface.
func (s *SurfaceLog) LogDecision(ctx context.Context, d *gateway.Decision, input any, tool, revision string, took time.Duration) {
	s.l.logDecision(ctx, s.surface, d, input, tool, revision, took)
}

func (l *Logger) logDecision(ctx context.Context, surface string, d *gateway.Decision, input any, tool, revision string, took time.Duration) {
	ev := Event{
		Labels:     l.labels,
		DecisionID: d.ID,
		Path:       surface + "/decision",
		Input:      input,
		Result:     resultDocument(d),
		Timestamp:  l.now().UTC(),
		Metrics:    map[string]any{"timer_mcpgate_decide_ns": took.Nanoseconds()},
		Custom:     map[string]any{"tool": tool},
	}
	if id := gateway.RequestIDFrom(ctx); id != "" {
		ev.Custom["request_id"] = id
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		ev.TraceID, ev.SpanID = sc.TraceID().String(), sc.SpanID().String()
	}
	if revision != "" {
		ev.Bundles = map[string]BundleInfo{surface: {Revision: revision}}
	}
	l.Log(ev)
}

// LogFlip logs one shadow flip (MCPGATE_SHADOW_POLICY_DIR) as an event of
// its own, beside the live decision's: the candidate's decision shadow,
// never enforced, of the same call as the live decision live. Its
// decision_id is the candidate's, path DecisionPath, input the policy
// input (shadow.Input), result the candidate's decision document, and
// bundles.supacloud.revision the candidate's revision. custom.shadow ties
// it to the live decision and holds both revisions:
//
//	{"direction": "allow_to_deny"|"deny_to_allow", "live_decision_id": …,
//	 "live_revision": …, "shadow_revision": …}
//
// so a collector tells flip events from enforced decisions by
// custom.shadow (policy replay skips them). The wiring calls it while the
// call is decided, so the event precedes the live decision's. It returns
// at once (Log).
func (l *Logger) LogFlip(ctx context.Context, live, shadow *gateway.Decision, tool, direction string) {
	l.logFlip(ctx, Bundle, live, shadow, tool, direction)
}

// LogFlip is Logger.LogFlip for the surface: the event's path is
// "<surface>/decision" and the candidate's revision is under
// bundles.<surface>.
func (s *SurfaceLog) LogFlip(ctx context.Context, live, shadow *gateway.Decision, tool, direction string) {
	s.l.logFlip(ctx, s.surface, live, shadow, tool, direction)
}

func (l *Logger) logFlip(ctx context.Context, surface string, live, shadow *gateway.Decision, tool, direction string) {
	ev := Event{
		Labels:     l.labels,
		DecisionID: shadow.ID,
		Path:       surface + "/decision",
		Input:      shadow.Input,
		Result:     resultDocument(shadow),
		Timestamp:  l.now().UTC(),
		Custom: map[string]any{"tool": tool, "shadow": map[string]any{
			"direction": direction, "live_decision_id": live.ID,
			"live_revision": live.Revision, "shadow_revision": shadow.Revision,
		}},
	}
	if id := gateway.RequestIDFrom(ctx); id != "" {
		ev.Custom["request_id"] = id
	}
	if shadow.Revision != "" {
		ev.Bundles = map[string]BundleInfo{surface: {Revision: shadow.Revision}}
	}
	l.Log(ev)
}
