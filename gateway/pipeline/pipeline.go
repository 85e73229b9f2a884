// Package pipeline runs the request path of one MCP tools/call behind the
// transport: a fixed list of small steps (callSteps) over one call-state
// value (Call), from the catalog lookup through the policy decision, the
// rate-limit reservation and the adapter to the obligations, and one
// finish that settles the call's audit row. tools/list is answered from
// the same decision function, so a tool is listed exactly when a call of
// it would be allowed.
//
// The package declares what it consumes (Store, Decider, CallerLoader,
// Adapter, Observer, Clock); the wiring (gateway/server) hands it the
// audit store, the policy engine, the caller cache, the adapter and the
// metrics.
package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/confirm"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
	"github.com/mcpgate/mcpgate/tools"
)

// Decider decides tool calls; *policy.Engine, *policy.Live and
// *policy.Snapshot implement it.
type Decider interface {
	// Decide returns the decision for one tools/call of tool with args
	// (already bounded by the tool's schema); an error refuses the call.
	Decide(ctx context.Context, p *gateway.Principal, c *gateway.Caller, tool policy.ToolRef, args map[string]any) (*gateway.Decision, error)
	// Visible returns the names of the tools p may call; the map must not
	// be modified.
	Visible(ctx context.Context, p *gateway.Principal, c *gateway.Caller) (map[string]bool, error)
}

// Snapshotter is an optional interface of a Decider whose policy can be
// swapped while the gateway runs (*policy.Live, hot reload): Snapshot
// returns the policy in force now, which does not change for its holder.
// A call takes one snapshot when it starts (Call.Policy) and is decided
// by it alone; tools/list likewise.
type Snapshotter interface {
	Snapshot() *policy.Snapshot
}

// Adapter executes allowed tool calls (adapters/demo, adapters/mcpupstream).
type Adapter interface {
	CallTool(ctx context.Context, call gateway.ToolCall) (*gateway.ToolResult, error)
}

// ResourceResolver is an optional interface of an Adapter: it tells the
// attributes of the record a call addresses, for tools whose catalog entry
// declares a resource (tools.ResourceRef), before the decision; the policy
// reads them as input.resource. The demo backend resolves approvals (their
// gate class, docs/requirements.md#external-human-gates). An adapter without it resolves nothing,
// and the policy then refuses what depends on the record (fail closed).
type ResourceResolver interface {
	// ResolveResource returns the attributes of record id of kind in
	// workspaceID (e.g. {"gate_class": "question"}), found false when the
	// workspace has no such record. An error refuses the call.
	ResolveResource(ctx context.Context, workspaceID, kind, id string) (attrs map[string]string, found bool, err error)
}

// CallerLoader loads what the policy needs about a principal (the
// workspace, member, profiles, seat type, org plan, overrides and task);
// Store and *callercache.Cache implement it. The returned Caller may be
// shared between calls: it must not be modified.
type CallerLoader interface {
	LoadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error)
}

// Observer is told about every tools/call and every reservation;
// *metrics.Metrics implements it.
type Observer interface {
	// ObserveCall is called once per tools/call with its audit row as
	// finally settled (also for a refusal that got no row).
	ObserveCall(ev *gateway.AuditEvent)
	// ObserveReservation is called once per reservation with its duration
	// and outcome (nil, ERateLimited, EConflict or another error).
	ObserveReservation(d time.Duration, err error)
}

// DecisionLog receives the decision of every tools/call for the decision
// log; *decisionlog.Logger implements it. LogDecision must return at once
// (it queues; it never waits for a sink): d is the decision, input the
// policy input it was made on (d.Input, kept by the engine), tool the
// catalog name, revision the policy bundle revision that decided ("" when
// unknown) and took the time the decision took.
type DecisionLog interface {
	LogDecision(ctx context.Context, d *gateway.Decision, input any, tool, revision string, took time.Duration)
}

// Clock returns the current time.
type Clock func() time.Time

// RatePlanner plans the rate-limit slots of one allowed call at now
// (ratelimit.Rules.Plan); it is called concurrently.
type RatePlanner interface {
	Plan(s ratelimit.Subject, now time.Time) (ratelimit.Plan, error)
}

// Pipeline is the request path behind the MCP transport: resolve the
// caller, decide, audit, dispatch, apply obligations. It implements
// the transport's Handler (gateway/mcp; the wiring asserts it). Store, Decider, Catalog and Adapter are required.
type Pipeline struct {
	Store Store
	// Callers, when set, loads each call's caller instead of
	// RegisterTasks(Store): the wiring sets the caller cache
	// (gateway/callercache) in front of RegisterTasks(Store) here, which
	// the admin API's changes invalidate. nil reads the store on every
	// call.
	Callers CallerLoader
	// Flows, when set, reads the session histories instead of Store (a
	// dry run's, which has no Store); nil takes Store's when it keeps
	// them (FlowStore).
	Flows FlowStore
	// flows holds the session histories read lately (flowCache).
	flows   flowCache
	Decider Decider
	Catalog *tools.Catalog
	Adapter Adapter
	// Registry, when set, is the surface's tool registry, Catalog with
	// the bridged tools on top (docs/requirements.md#bridged-tools): it
	// replaces Catalog, read once per call and per tools/list, and
	// Bridged dispatches the calls of its bridged tools (those with an
	// Upstream). nil serves Catalog alone.
	Registry *tools.Registry
	Bridged  Adapter
	// Logger receives store failures after the reply; nil logs nothing.
	Logger *zap.Logger
	// Metrics observes every call and reservation; nil observes nothing.
	Metrics Observer
	// AuditArguments logs the arguments in the audit row (without the
	// confirmation token); otherwise the row holds only their hash.
	AuditArguments bool
	// Now is the clock of audit times, latencies, rate-limit windows and
	// the refusal limiter; nil means time.Now.
	Now Clock
	// RateLimits plans the rate-limit slots of an allowed call (docs/requirements.md#rate-limits),
	// at Now, which the store takes in the transaction that
	// records its audit row; nil turns rate limiting off (the wiring
	// always sets it). A *ratelimit.Rules; the cc_server wiring gives one
	// that follows the live policy's limits.
	RateLimits RatePlanner
	// Refusals bounds, per principal, how many calls refused before
	// dispatch get an audit row (MCPGATE_REFUSED_CALLS_PER_SECOND); over
	// it a refused call is answered as rate limited (bucket
	// principal.refusals) without a row. nil audits every refusal.
	Refusals *RefusalLimiter
	// DecisionLog, when set, is told every tools/call decision
	// (MCPGATE_DECISION_LOG_FILE, MCPGATE_DECISION_LOG_URL); the engine
	// must then keep inputs (policy.Options.KeepInput). nil logs none.
	DecisionLog DecisionLog
	// Confirmer signs and verifies the deploy confirmation tokens
	// (docs/requirements.md#deploy-confirmation) with
	// SUPACLOUD_MCP_CONFIRMATION_SECRET; nil (the secret unset) makes
	// every call that needs the confirmation fail closed with -32603.
	Confirmer *confirm.Signer

	// The surface the pipeline serves is data: the catalog, the Decider
	// (its Rego package), the adapter and these three. Surface names it
	// in every audit row and picks its rate-limit rules ("" is
	// gateway.SurfaceSupaCloud).
	Surface string
	// ListEveryTool makes tools/list offer the whole catalog whatever the
	// decision (cc_server, docs/requirements.md#cc-registry: "Die volle Registrierung wird in
	// tools/list ohne Suchfilter angeboten"); what is callable now is
	// then told by the surface's search tools. Off, tools/list shows
	// exactly the tools the decision makes visible (SupaCloud).
	ListEveryTool bool
	// WorkspaceFromPolicy leaves a client-supplied workspace_id to the
	// policy, which checks it against the credential and the caller's
	// memberships (cc_server, docs/requirements.md#cc-workspace-id); the
	// audit row then names the decision's workspace. Off, a
	// workspace_id must be the credential's own (SupaCloud).
	WorkspaceFromPolicy bool
	// Approvals gets a person's approval of a call whose decision asks
	// for one (docs/requirements.md#cc-approval: requiresApproval tools and guard prompts); nil
	// refuses every such call (fail closed).
	Approvals Approver
	// Tracer, when set, traces each tools/call: a server span per call
	// and a child span per step (trace.go; docs/operations.md, "Traces"); nil (tracing
	// off, the default) costs one nil check per step.
	Tracer trace.Tracer
}

// Call is the state of one tools/call. Each step reads what the steps
// before it set and adds its own part; nothing else holds call state.
type Call struct {
	// Principal and Params are the authenticated caller and the parsed
	// tools/call params, as the transport hands them over.
	Principal *gateway.Principal
	Params    *gateway.CallRequest
	// Tool is the catalog entry of Params.Name (resolveTool).
	Tool *tools.Tool
	// Catalog is the registry the call resolved Tool in (Pipeline.catalog
	// when the call started), so its schema checks use the same one.
	Catalog *tools.Catalog
	// Caller is what the store knows of Principal (loadCaller); shared
	// with other calls, read-only.
	Caller *gateway.Caller
	// Resource are the attributes of the record the call addresses
	// (resolveResource), nil for a tool that declares none.
	Resource map[string]string
	// Policy is the Decider of this call: the Snapshot of a Snapshotter
	// taken when the call started, else Pipeline.Decider. A policy
	// reload during the call does not change it.
	Policy Decider
	// Session is the history of the call's flow key (loadSession), nil
	// when flow rules are off for it; flowKey is that key.
	Session *gateway.FlowSession
	flowKey string
	// flowSwitch is true when the admin of the workspace the call acts
	// in switched flow rules on (callWorkspace, gateway.Caller.FlowRulesOn),
	// set by loadSession: the policy's input.workspace.flow_rules.
	flowSwitch bool
	// flowStale is true once the reservation found the session changed
	// since the decision: loadSession then reads the store, not the
	// cache, which another call of the session may have filled meanwhile
	// with what it read before the change.
	flowStale bool
	// Decision is the policy's answer (decide).
	Decision *gateway.Decision
	// Event is the call's audit row, filled in by every step and written
	// by the reservation (an allowed call, before dispatch) or by finish.
	// Event.ID is non-zero once the reservation has written it.
	Event *gateway.AuditEvent
	// Claim is the idempotency key a confirmed deploy-tier call claimed
	// with its reservation (confirmOrReserve); nil for other calls.
	Claim *gateway.IdempotencyRecord
	// Arguments and RawArguments are what the adapter receives: the
	// client's, without the confirmation token once it has been verified.
	Arguments    map[string]any
	RawArguments json.RawMessage
	// Result is the reply. A step that answers the call itself (a
	// confirmation request, a replay from an idempotency key) sets it and
	// Answered, and the remaining steps are skipped.
	Result   *gateway.ToolResult
	Answered bool
	// overRefusals: a step already found the principal's refusal bucket
	// empty (refusalAudited); finish writes no row.
	overRefusals bool
	// refusalTaken: a step already took this call's token of the refusal
	// bucket (an approval request, a deploy step 1); a refusal after it
	// does not take a second.
	refusalTaken bool

	start time.Time
	// storeDeadline bounds the store work before dispatch (loading the
	// caller, then the reservation): one budget of storeTimeout, one
	// context (storeContext) for both, released by CallTool.
	storeDeadline time.Time
	storeCtx      context.Context
	storeCancel   context.CancelFunc
}

// storeContext is ctx (the call's context) bounded by the call's store
// deadline, made once for the steps that share that budget.
func (c *Call) storeContext(ctx context.Context) context.Context {
	if c.storeCtx == nil {
		c.storeCtx, c.storeCancel = context.WithDeadline(ctx, c.storeDeadline)
	}
	return c.storeCtx
}

// renewStoreBudget gives the store work after a wait that is not the
// store's (a person's approval) a budget of its own: a new deadline, and
// a new storeContext, since the one made before carries the old deadline.
func (c *Call) renewStoreBudget() {
	c.storeDeadline = time.Now().Add(storeTimeout)
	if c.storeCancel != nil {
		c.storeCancel()
	}
	c.storeCtx, c.storeCancel = nil, nil
}

// step is one stage of a tools/call. It returns an error to refuse (or
// fail) the call; the remaining steps are then skipped and finish writes
// the refusal.
type step func(pl *Pipeline, ctx context.Context, c *Call) error

// callSteps are the stages of every tools/call, in order.
var callSteps = []step{
	(*Pipeline).resolveTool,       // the catalog entry; malformed params, unknown names refused
	(*Pipeline).loadCaller,        // workspace, member, profiles, task: from the caller cache or store
	(*Pipeline).resolveResource,   // the addressed record's attributes, from the adapter (tools that declare one)
	(*Pipeline).loadSession,       // the flow key's history, when the policy's flow rules are on for the workspace
	(*Pipeline).decide,            // the policy, on the arguments bounded by the schema; hidden tools answered as unknown on /api/mcp
	(*Pipeline).checkWorkspace,    // a client-supplied workspace_id must be the credential's
	(*Pipeline).checkParamHeaders, // at 2026-07-28 the Mcp-Param-* headers against the arguments (x-mcp-header)
	(*Pipeline).validateArguments, // the schema, only once the policy allowed the tool
	(*Pipeline).awaitApproval,     // a person's approval of exactly this call, when the decision asks for one
	(*Pipeline).confirmOrReserve,  // confirmation and idempotency, then slots + audit row in one transaction
	(*Pipeline).dispatch,          // the adapter, with the exact argument bytes, unless the client has gone
	(*Pipeline).applyObligations,  // redactions on the result
	(*Pipeline).saveKeyResult,     // a confirmed call's result under its idempotency key
}

// CallTool runs one tools/call through callSteps and writes exactly one
// audit row for it, whatever the outcome, before it returns.
func (pl *Pipeline) CallTool(ctx context.Context, p *gateway.Principal, params *gateway.CallRequest) (*gateway.ToolResult, error) {
	ctx, span := pl.startCallSpan(ctx, params)
	c := pl.newCall(ctx, p, params)
	if span != nil {
		c.Event.TraceID = traceID(ctx) // the audit row names the call's trace
	}
	defer func() {
		if c.storeCancel != nil {
			c.storeCancel()
		}
	}()
	var err error
	for i, retries := 0, 0; i < len(callSteps); i++ {
		err = pl.runStep(ctx, i, callSteps[i], c)
		if errors.Is(err, errFlowChanged) && retries < maxFlowRetries {
			// Another call of the session read new labels after this
			// one's decision: decide again on the history as it is now.
			retries++
			i, err = flowRestart-1, nil
			continue
		}
		if errors.Is(err, errFlowChanged) {
			err = flowChanged(c)
		}
		if err != nil || c.Answered {
			break
		}
	}
	res, err := pl.finish(ctx, c, err)
	endCallSpan(span, c, res, err)
	return res, err
}

// newCall starts the state of a call: its audit row as far as the
// principal and the params tell, and its store deadline.
func (pl *Pipeline) newCall(ctx context.Context, p *gateway.Principal, params *gateway.CallRequest) *Call {
	start := pl.now()
	ev := &gateway.AuditEvent{
		Time:          start.UTC(),
		RequestID:     gateway.RequestIDFrom(ctx),
		WorkspaceID:   auditText(p.WorkspaceID),
		TaskID:        auditText(p.TaskID),
		ProfileID:     auditText(p.ProfileID),
		Actor:         auditText(p.Subject),
		PrincipalKind: p.Kind,
		TokenFP:       p.TokenFingerprint,
		Tool:          toolText(params.Name),
		ArgumentsHash: argumentsHash(params),
		Surface:       pl.surface(),
		Mode:          auditText(p.Mode),
	}
	if pl.AuditArguments {
		ev.Arguments = loggableArguments(params.Arguments, params.RawArguments)
	}
	return &Call{
		Principal: p, Params: params, Event: ev, Policy: pl.decider(), Catalog: pl.catalog(),
		Arguments: params.Arguments, RawArguments: params.RawArguments,
		start: start, storeDeadline: time.Now().Add(storeTimeout),
	}
}

// ListTools returns the catalog tools the principal's decision makes
// visible, in catalog order: the same Decider, on the same caller, as
// tools/call. A principal whose workspace the store does not know sees no
// tool (every call would be refused); tools/call says why.
func (pl *Pipeline) ListTools(ctx context.Context, p *gateway.Principal) ([]gateway.ListedTool, error) {
	if ctx, span := pl.listSpan(ctx); span != nil {
		defer span.End()
		return pl.listTools(ctx, p)
	}
	return pl.listTools(ctx, p)
}

// listTools is ListTools.
func (pl *Pipeline) listTools(ctx context.Context, p *gateway.Principal) ([]gateway.ListedTool, error) {
	cat := pl.catalog()
	if pl.ListEveryTool {
		out := make([]gateway.ListedTool, 0, cat.Len())
		for _, t := range cat.Tools() {
			out = append(out, mcpTool(t))
		}
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	caller, err := pl.caller(ctx, p)
	if gateway.ErrorCodeOf(err) == gateway.EForbidden {
		return []gateway.ListedTool{}, nil
	}
	if err != nil {
		return nil, err
	}
	visible, err := pl.decider().Visible(ctx, p, caller)
	if err != nil {
		return nil, err
	}
	out := make([]gateway.ListedTool, 0, len(visible))
	for _, t := range cat.Tools() {
		if visible[t.Name] {
			out = append(out, mcpTool(t))
		}
	}
	return out, nil
}

func mcpTool(t tools.Tool) gateway.ListedTool {
	if t.Upstream != "" && t.UpstreamAnnotations != nil {
		// A bridged tool keeps the upstream's own hints for the client;
		// policy never reads them as a grant.
		var ann map[string]any
		if json.Unmarshal(t.UpstreamAnnotations, &ann) == nil {
			return gateway.ListedTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Annotations: ann}
		}
	}
	ann := map[string]any{"readOnlyHint": t.ReadOnly}
	if t.Tier == gateway.TierDeploy {
		ann["destructiveHint"] = true
	}
	return gateway.ListedTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Annotations: ann}
}

// catalog is the surface's tools now: the Registry's, else Catalog.
func (pl *Pipeline) catalog() *tools.Catalog {
	if pl.Registry != nil {
		return pl.Registry.Catalog()
	}
	return pl.Catalog
}

// adapter is the adapter of tool t: Bridged for a bridged tool, else
// Adapter.
func (pl *Pipeline) adapter(t *tools.Tool) Adapter {
	if t.Upstream != "" && pl.Bridged != nil {
		return pl.Bridged
	}
	return pl.Adapter
}

// decider is the policy in force now: a Snapshot of a Snapshotter
// Decider, else the Decider itself.
func (pl *Pipeline) decider() Decider {
	if s, ok := pl.Decider.(Snapshotter); ok {
		return s.Snapshot()
	}
	return pl.Decider
}

// surface is pl.Surface, SupaCloud when unset.
func (pl *Pipeline) surface() string {
	if pl.Surface == "" {
		return gateway.SurfaceSupaCloud
	}
	return pl.Surface
}

func (pl *Pipeline) now() time.Time {
	if pl.Now != nil {
		return pl.Now()
	}
	return time.Now()
}

func (pl *Pipeline) log() *zap.Logger {
	if pl.Logger == nil {
		return zap.NewNop()
	}
	return pl.Logger
}

// observer is pl.Metrics, or one that observes nothing.
func (pl *Pipeline) observer() Observer {
	if pl.Metrics == nil {
		return noObserver{}
	}
	return pl.Metrics
}

type noObserver struct{}

func (noObserver) ObserveCall(*gateway.AuditEvent)         {}
func (noObserver) ObserveReservation(time.Duration, error) {}
