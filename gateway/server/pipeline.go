package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/canon"
	"github.com/mcpgate/mcpgate/gateway/confirm"
	"github.com/mcpgate/mcpgate/gateway/mcp"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
	"github.com/mcpgate/mcpgate/tools"
)

// Decider decides tool calls; *policy.Engine implements it.
type Decider interface {
	Decide(ctx context.Context, p *gateway.Principal, c *gateway.Caller, tool policy.ToolRef, args map[string]any) (*gateway.Decision, error)
	Visible(ctx context.Context, p *gateway.Principal, c *gateway.Caller) (map[string]bool, error)
}

// Adapter executes allowed tool calls (adapters/demo, adapters/mcpupstream).
type Adapter interface {
	CallTool(ctx context.Context, call gateway.ToolCall) (*gateway.ToolResult, error)
}

// CallerLoader loads what the policy needs about a principal (the
// workspace, member, profiles, seat type, org plan, overrides and task);
// Store and *callercache.Cache implement it. The returned Caller may be
// shared between calls: it must not be modified.
type CallerLoader interface {
	LoadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error)
}

// Pipeline is the request path of DESIGN.md §1 behind the MCP transport:
// resolve the caller, decide, audit, dispatch, apply obligations. It
// implements mcp.Handler.
type Pipeline struct {
	Store Store
	// Callers, when set, loads each call's caller instead of
	// Store.LoadCaller: App sets the caller cache (gateway/callercache)
	// here, which the admin API's changes invalidate through
	// Server.WorkspaceChanged. nil reads the store on every call.
	Callers        CallerLoader
	Decider        Decider
	Catalog        *tools.Catalog
	Adapter        Adapter
	Logger         *zap.Logger
	Metrics        *Metrics
	AuditArguments bool
	Now            func() time.Time
	// RateLimits plans the rate-limit slots of an allowed call (seed 001,
	// Rate limits), at Now, which the store takes in the transaction that
	// records its audit row; nil turns rate limiting off (App always sets
	// it).
	RateLimits *ratelimit.Rules
	// Refusals bounds, per principal, how many calls refused before
	// dispatch get an audit row (MCPGATE_REFUSED_CALLS_PER_SECOND); over
	// it a refused call is answered as rate limited (bucket
	// principal.refusals) without a row. nil audits every refusal.
	Refusals *RefusalLimiter
	// Confirmer signs and verifies the deploy confirmation tokens (seed
	// 001, Deploy confirmation protocol) with
	// SUPACLOUD_MCP_CONFIRMATION_SECRET; nil (the secret unset) makes
	// every call that needs the confirmation fail closed with -32603.
	Confirmer *confirm.Signer
}

var _ mcp.Handler = (*Pipeline)(nil)

// ListTools returns the catalog tools the principal's decision makes
// visible, in catalog order.
func (pl *Pipeline) ListTools(ctx context.Context, p *gateway.Principal) ([]mcp.Tool, error) {
	caller, err := pl.loadCaller(ctx, p)
	if err != nil {
		return nil, err
	}
	visible, err := pl.Decider.Visible(ctx, p, caller)
	if err != nil {
		return nil, err
	}
	out := make([]mcp.Tool, 0, len(visible))
	for _, t := range pl.Catalog.Tools() {
		if visible[t.Name] {
			out = append(out, mcpTool(t))
		}
	}
	return out, nil
}

func mcpTool(t tools.Tool) mcp.Tool {
	ann := map[string]any{"readOnlyHint": t.ReadOnly}
	if t.Tier == gateway.TierDeploy {
		ann["destructiveHint"] = true
	}
	return mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Annotations: ann}
}

// CallTool runs one tools/call through the request path and writes exactly
// one audit row for it, whatever the outcome, before it returns.
func (pl *Pipeline) CallTool(ctx context.Context, p *gateway.Principal, call *mcp.CallToolParams) (*gateway.ToolResult, error) {
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
		Tool:          toolText(call.Name),
		ArgumentsHash: argumentsHash(call),
	}
	if pl.AuditArguments {
		ev.Arguments = loggableArguments(call.Arguments, call.RawArguments)
	}
	ctx = withStoreDeadline(ctx, time.Now().Add(storeTimeout))
	res, err := pl.decideAndDispatch(ctx, p, call, ev)
	if err != nil && ev.ID == 0 && !pl.refusalAudited(p, ev, start) {
		return nil, refusalLimited(err)
	}
	pl.finish(ctx, ev, start, err)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// refusalAudited takes a token of p's refusal bucket for a call refused
// before it had an audit row. Without one the call gets no row (the store
// write is what the bucket bounds): it is counted in the metrics as
// rate_limited in bucket principal.refusals, and a warning at most every
// 10 s per principal says how many refusals went unaudited.
func (pl *Pipeline) refusalAudited(p *gateway.Principal, ev *gateway.AuditEvent, start time.Time) bool {
	if pl.Refusals == nil {
		return true
	}
	key := p.WorkspaceID + "\x00" + p.TaskID + "\x00" + p.Subject + "\x00" + p.TokenFingerprint
	ok, warn := pl.Refusals.take(key, pl.now())
	if ok {
		return true
	}
	ev.Status, ev.ErrorClass, ev.Bucket = gateway.AuditRateLimited, string(gateway.ERateLimited), RefusalBucket
	ev.LatencyMicros = pl.now().Sub(start).Microseconds()
	pl.Metrics.observe(ev)
	if warn > 0 {
		pl.Logger.Warn("refused calls of one principal not audited: over MCPGATE_REFUSED_CALLS_PER_SECOND",
			zap.String("workspace_id", ev.WorkspaceID), zap.String("task_id", ev.TaskID), zap.String("actor", ev.Actor),
			zap.Int64("unaudited", warn), zap.String("last_tool", ev.Tool))
	}
	return false
}

// refusalLimited is the reply to a refused call over its principal's
// refusal bucket: a rate limit (-32003, bucket principal.refusals) that
// still says why the call itself was refused.
func refusalLimited(err error) error {
	return &gateway.Error{Code: gateway.ERateLimited, Bucket: RefusalBucket, Err: err,
		Message: "Rate limit exceeded for refused calls of this session; slow down and fix the refused calls (this one: " +
			gateway.ErrorMessageOf(err) + ")"}
}

// decideAndDispatch returns the result or the error for the caller; it fills
// ev and records it before an allowed call is dispatched.
func (pl *Pipeline) decideAndDispatch(ctx context.Context, p *gateway.Principal, call *mcp.CallToolParams, ev *gateway.AuditEvent) (*gateway.ToolResult, error) {
	tool, ok := pl.Catalog.Lookup(call.Name)
	if ok {
		ev.Tier = tool.Tier
	}
	if call.ArgumentsErr != nil {
		return nil, call.ArgumentsErr
	}
	if !ok && len(call.Name) > maxToolName {
		return nil, gateway.Errorf(gateway.EInvalid, "tool name %q is %d bytes long, longer than any MCP tool name (at most %d characters); tools/list shows the tools this session may call",
			clip(call.Name, 32), len(call.Name), maxToolName)
	}
	if !ok {
		return nil, gateway.Errorf(gateway.EInvalid, "unknown tool %q; tools/list shows the tools this session may call", call.Name)
	}
	if err := checkWorkspaceArgument(p, call); err != nil {
		return nil, err
	}
	caller, err := pl.loadCaller(ctx, p)
	if err != nil {
		return nil, err
	}
	if caller.Profile != nil {
		ev.ProfileID = caller.Profile.ID
	} else if p.ProfileID == "" && caller.DefaultProfile != nil {
		ev.ProfileID = caller.DefaultProfile.ID
	}
	// The policy sees the arguments before they are validated (below), but
	// never one larger than the tool's schema allows: PolicyArguments
	// leaves those out, silently, so the decision (and its cache) stays
	// small and a caller the policy denies learns nothing of the schema.
	// A call allowed without them still fails validation.
	policyArgs := pl.Catalog.PolicyArguments(tool.Name, call.Arguments)
	d, err := pl.Decider.Decide(ctx, p, caller, policy.ToolRef{Name: tool.Name, Tier: tool.Tier, CarveOut: tool.CarveOut}, policyArgs)
	if err != nil {
		return nil, err
	}
	ev.DecisionID = d.ID
	ev.ReasonCodes = reasonCodes(d.Reasons)
	if !d.Allow {
		return nil, denial(tool.Name, d)
	}
	// Arguments are checked against the schema only once the policy allows
	// the tool: a principal that may not call it gets the denial, not the
	// schema of a tool tools/list does not show it (DESIGN.md §1, listed ⇔
	// callable), and its audit row says denied.
	if err := pl.Catalog.Validate(call.Name, call.Arguments); err != nil {
		return nil, err
	}
	if needsConfirmation(tool, d) {
		return pl.confirmThenDispatch(ctx, p, tool, call, d, ev)
	}
	if err := pl.reserveAndRecord(ctx, tool, ev); err != nil {
		return nil, err
	}
	return pl.dispatch(ctx, p, tool, call.Arguments, call.RawArguments, d, ev)
}

// dispatch hands a recorded call to the adapter, args decoded and raw as
// the client sent them (gateway.ToolCall), and applies the decision's
// obligations to its result. A call whose client has gone, or whose
// deadline passed, by the time its reservation committed (a store that
// answered late, say) is not dispatched: nobody would get the result, and
// the client may already be retrying. Its audit row says so (status
// error, reason dispatch.abandoned); the slots it took stay taken.
func (pl *Pipeline) dispatch(ctx context.Context, p *gateway.Principal, tool *tools.Tool, args map[string]any, raw json.RawMessage, d *gateway.Decision, ev *gateway.AuditEvent) (*gateway.ToolResult, error) {
	if err := ctx.Err(); err != nil {
		ev.ReasonCodes = append(ev.ReasonCodes, reasonAbandoned)
		return nil, &gateway.Error{Code: gateway.EUnavailable, Err: gateway.NotDispatched(err),
			Message: fmt.Sprintf("%s was not dispatched: the client gave up or the call's deadline passed before the gateway could run it; call again if it is still needed", tool.Name),
			Reasons: []gateway.Reason{{Code: reasonAbandoned, Message: "the request ended before dispatch"}}}
	}
	res, err := pl.Adapter.CallTool(ctx, gateway.ToolCall{
		WorkspaceID: p.WorkspaceID, TaskID: p.TaskID, Actor: p.Subject,
		Tool: tool.Name, Arguments: args, RawArguments: raw,
	})
	if err != nil {
		return nil, err
	}
	applyObligations(res, d.Obligations)
	if res.IsError {
		ev.ErrorClass = "ToolError"
	}
	return res, nil
}

// checkWorkspaceArgument refuses a client-supplied workspace_id that differs
// from the credential's (DESIGN.md §1, Workspace isolation).
func checkWorkspaceArgument(p *gateway.Principal, call *mcp.CallToolParams) error {
	ws, present := call.Arguments["workspace_id"]
	if !present || ws == p.WorkspaceID {
		return nil
	}
	return &gateway.Error{
		Code:    gateway.EForbidden,
		Message: fmt.Sprintf("tool %s was called with workspace_id %v, but this session belongs to workspace %s; omit workspace_id or use your own", call.Name, ws, p.WorkspaceID),
		Reasons: []gateway.Reason{{Code: "workspace.mismatch", Message: "client-supplied workspace_id differs from the credential's workspace"}},
	}
}

func (pl *Pipeline) loadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error) {
	ctx, cancel := storeContext(ctx)
	defer cancel()
	var from CallerLoader = pl.Store
	if pl.Callers != nil {
		from = pl.Callers
	}
	c, err := from.LoadCaller(ctx, p)
	if err == nil {
		return c, nil
	}
	if gateway.ErrorCodeOf(err) == gateway.ENotFound {
		return nil, &gateway.Error{
			Code:    gateway.EForbidden,
			Message: fmt.Sprintf("workspace %s of this session is not known to the gateway; ask an operator to register it", p.WorkspaceID),
			Reasons: []gateway.Reason{{Code: "workspace.unknown", Message: "the credential's workspace is not registered"}},
			Err:     err,
		}
	}
	return nil, gateway.Wrap(gateway.EInternal, err, "the audit store could not load this session's workspace; the call was refused")
}

// denial turns a deny decision into the -32003 error of DESIGN.md §5; the
// message leads with the first reason so clients show something useful.
func denial(tool string, d *gateway.Decision) error {
	msg := fmt.Sprintf("tool %s denied by policy", tool)
	if len(d.Reasons) > 0 {
		msg = d.Reasons[0].Message
	}
	return &gateway.Error{Code: gateway.EForbidden, Message: msg, DecisionID: d.ID, Reasons: d.Reasons}
}

// finish completes the audit row: for calls refused before dispatch it is
// inserted now; for dispatched calls the row written before dispatch gets its
// final status and latency. A failure here is logged; the reply stands.
func (pl *Pipeline) finish(ctx context.Context, ev *gateway.AuditEvent, start time.Time, err error) {
	ev.LatencyMicros = pl.now().Sub(start).Microseconds()
	if err != nil {
		ev.Status, ev.ErrorClass = statusOf(err)
		var ge *gateway.Error
		if errors.As(err, &ge) && len(ev.ReasonCodes) == 0 {
			ev.ReasonCodes = reasonCodes(ge.Reasons)
		}
		if errors.As(err, &ge) && ge.Bucket != "" {
			ev.Bucket = ge.Bucket
		}
	}
	// The row is written even when the client has gone, and within a
	// deadline: a store that does not answer must not hold the reply. A
	// call refused before dispatch has what is left of its store deadline
	// (so a refusal because the store did not answer comes within
	// storeTimeout, not twice that); a recorded call gets a new one.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	if ev.ID == 0 {
		cancel()
		wctx, cancel = storeContext(context.WithoutCancel(ctx))
	}
	defer cancel()
	var werr error
	if ev.ID != 0 {
		werr = pl.Store.FinishAudit(wctx, ev)
	} else {
		werr = pl.Store.RecordAudit(wctx, ev)
	}
	if werr != nil {
		pl.Logger.Error("audit row not written", zap.String("tool", ev.Tool), zap.String("status", ev.Status), zap.Error(werr))
	}
	pl.Metrics.observe(ev)
}

func statusOf(err error) (status, class string) {
	code := gateway.ErrorCodeOf(err)
	switch code {
	case gateway.EForbidden:
		return gateway.AuditDenied, code.Class()
	case gateway.ERateLimited:
		return gateway.AuditRateLimited, string(code)
	default:
		return gateway.AuditError, string(code)
	}
}

func reasonCodes(rs []gateway.Reason) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Code)
	}
	return out
}

// argumentsHash is the audit row's arguments_hash: canon.Hash of the
// arguments the row logs (all but the confirmation token), the one hash
// that also binds a confirmation token and an idempotency key
// (confirm.InputHash, which also leaves out idempotency_key). Arguments
// that could not be decoded (call.ArgumentsErr) have no canonical form;
// the row of such a call, always refused, hashes the bytes as sent.
func argumentsHash(call *mcp.CallToolParams) string {
	if call.ArgumentsErr == nil {
		if h, err := canon.Hash(withoutToken(call.Arguments)); err == nil {
			return h
		}
	}
	sum := sha256.Sum256(call.RawArguments)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// withoutToken returns args without the confirmation token, args itself
// when it has none.
func withoutToken(args map[string]any) map[string]any {
	if _, ok := args[confirm.ArgToken]; !ok {
		return args
	}
	out := make(map[string]any, len(args)-1)
	for k, v := range args {
		if k != confirm.ArgToken {
			out[k] = v
		}
	}
	return out
}

func (pl *Pipeline) now() time.Time {
	if pl.Now != nil {
		return pl.Now()
	}
	return time.Now()
}

// maxToolName is the longest tool name the gateway repeats: the MCP
// specification (2025-11-25, Tools, "Tool names") says names SHOULD be 1 to
// 128 characters. A longer name cannot be in the catalog; it is refused,
// and the audit row, the log and the error quote only its start, so that a
// client cannot fill the audit store with one huge name per call.
const maxToolName = 128

// clip returns s cut to at most n bytes at a rune boundary, marked with
// "…" when it was cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// auditText is a client- or token-supplied string (tool name, workspace,
// task, profile, actor) as the audit row, the log and the metrics carry it.
// Printable Unicode, which every catalog name and every sane id is, is kept
// as it is. Anything else (newlines, ANSI escapes, NUL, invalid UTF-8) is
// quoted with Go's escapes (strconv.QuoteToGraphic), so that the value
// cannot forge log lines or recolour a terminal that shows a raw dump,
// PostgreSQL (which refuses NUL in text) can store it, and two different
// values never end as the same text (a printable value that starts with a
// double quote is quoted too, so it cannot pass for a quoted one).
func auditText(s string) string {
	if utf8.ValidString(s) && !strings.HasPrefix(s, `"`) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) }) {
		return s
	}
	return strconv.QuoteToGraphic(s)
}

// toolText is auditText of the tool name clipped to maxToolName.
func toolText(name string) string { return auditText(clip(name, maxToolName)) }

// loggableArguments returns the arguments to store when argument logging is
// on: never the deploy confirmation token (a credential, DESIGN.md §1: no
// tokens in audit rows), and nothing when the JSON holds a NUL character,
// which PostgreSQL's jsonb refuses (the hash still identifies the call).
func loggableArguments(args map[string]any, raw json.RawMessage) json.RawMessage {
	if bytes.Contains(raw, []byte(`\u0000`)) {
		return nil
	}
	if _, ok := args[confirm.ArgToken]; !ok {
		return raw
	}
	out, err := canon.WithoutMembers(raw, confirm.ArgToken)
	if err != nil {
		return nil
	}
	return out
}
