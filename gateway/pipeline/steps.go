package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// resolveTool looks the tool up in the catalog and puts its tier into the
// audit row. Params the transport could not parse, a name longer than any
// MCP tool name and an unknown name are refused (EInvalid).
func (pl *Pipeline) resolveTool(_ context.Context, c *Call) error {
	tool, ok := c.Catalog.Lookup(c.Params.Name)
	if ok {
		c.Tool, c.Event.Tier = tool, tool.Tier
	}
	if c.Params.ArgumentsErr != nil {
		return c.Params.ArgumentsErr
	}
	if !ok && hidesUnlisted(c.Principal) {
		return unknownTool(c.Params.Name)
	}
	if why, q := pl.quarantined(c.Params.Name); !ok && q {
		return &gateway.Error{Code: gateway.EForbidden,
			Message: fmt.Sprintf("tool %s is quarantined: %s; an operator must review and approve it (admin API /admin/v1/upstreams) before it can be called", c.Params.Name, why),
			Reasons: []gateway.Reason{{Code: reasonQuarantined, Message: why}}}
	}
	if !ok && len(c.Params.Name) > maxToolName {
		return gateway.Errorf(gateway.EInvalid, "tool name %q is %d bytes long, longer than any MCP tool name (at most %d characters); tools/list shows the tools this session may call",
			clip(c.Params.Name, 32), len(c.Params.Name), maxToolName)
	}
	if !ok {
		return gateway.Errorf(gateway.EInvalid, "unknown tool %q; tools/list shows the tools this session may call", c.Params.Name)
	}
	return nil
}

// reasonQuarantined is the reason code of a call of a bridged tool held
// back for review (docs/requirements.md#pinned-tools).
const reasonQuarantined = "tool.quarantined"

// quarantined reports whether name is a bridged tool held back for
// review, and what changed.
func (pl *Pipeline) quarantined(name string) (string, bool) {
	if pl.Registry == nil {
		return "", false
	}
	return pl.Registry.Quarantined(name)
}

// hidesUnlisted reports whether p's endpoint answers every tool p cannot
// call exactly as a name that does not exist, so that hidden tools cannot
// be enumerated: external coordinators (docs/requirements.md#external-tools-list: everything
// outside the token's scopes "antwortet mit einem JSON-RPC-method-not-found",
// the deploy level included).
func hidesUnlisted(p *gateway.Principal) bool { return p.Kind == gateway.PrincipalCoordinator }

// errHidden marks unknownTool's refusal of a tool that exists but is hidden
// from the caller, for the audit row (status denied); the reply does not
// show it.
var errHidden = errors.New("the tool is hidden from this principal")

// unknownTool is the one reply of an endpoint that hides unlisted tools,
// for a name that does not exist and for a tool the caller cannot reach
// alike: -32601 with the same message and data, no decision id, no reasons.
// cause is nil for a name that does not exist.
func unknownTool(name string, cause ...error) error {
	e := &gateway.Error{Code: gateway.EMethodNotFound,
		Message: fmt.Sprintf("tool %q not found; tools/list shows the tools this API token may call", clip(name, maxToolName))}
	if len(cause) > 0 {
		e.Err = cause[0]
	}
	return e
}

// resolveResource looks up, for a tool whose catalog entry declares a
// resource, the attributes of the record the call names (its id from the
// declared argument) through the adapter, when it can tell
// (ResourceResolver). The policy reads them as input.resource: kind and id
// always, the adapter's attributes when it found the record. Nothing of it
// comes from the caller but the id, so the caller cannot claim, say, a
// gate class (docs/requirements.md#external-human-gates). An adapter that fails refuses the call.
func (pl *Pipeline) resolveResource(ctx context.Context, c *Call) error {
	ref := c.Tool.Resource
	if ref == nil {
		return nil
	}
	c.Resource = map[string]string{"kind": ref.Kind}
	id, _ := c.Params.Arguments[ref.IDArgument].(string)
	if id == "" || len(id) > maxResourceID {
		return nil // the schema refuses it once the policy has decided
	}
	c.Resource["id"] = id
	r, ok := pl.Adapter.(ResourceResolver)
	if !ok {
		return nil
	}
	attrs, found, err := r.ResolveResource(ctx, c.Principal.WorkspaceID, ref.Kind, id)
	if err != nil {
		return gateway.Wrap(gateway.EUnavailable, err, fmt.Sprintf("the backend could not look up %s %s, so %s was not run; retry shortly", ref.Kind, clip(id, 32), c.Tool.Name))
	}
	if found {
		for k, v := range attrs {
			if k != "kind" && k != "id" {
				c.Resource[k] = v
			}
		}
	}
	return nil
}

// maxResourceID bounds the id resolveResource passes to the adapter.
const maxResourceID = 256

// checkWorkspace refuses a client-supplied workspace_id that differs from
// the credential's (workspace isolation: the workspace comes from the
// credential, never from the client). It runs after the decision, so that
// on an endpoint that hides unlisted tools a hidden tool is answered as
// unknown whatever its arguments. The refusal carries the id of the
// decision that allowed the tool, so that the denial on the wire names it,
// as a schema or rate-limit refusal after an allow does.
func (pl *Pipeline) checkWorkspace(_ context.Context, c *Call) error {
	ws, present := c.Params.Arguments["workspace_id"]
	if pl.WorkspaceFromPolicy || !present || ws == c.Principal.WorkspaceID {
		return nil
	}
	return withDecision(&gateway.Error{
		Code:    gateway.EForbidden,
		Message: fmt.Sprintf("tool %s was called with workspace_id %v, but this session belongs to workspace %s; omit workspace_id or use your own", c.Params.Name, ws, c.Principal.WorkspaceID),
		Reasons: []gateway.Reason{{Code: "workspace.mismatch", Message: "client-supplied workspace_id differs from the credential's workspace"}},
	}, c.Decision)
}

// loadCaller loads what the policy needs of the principal, within the
// call's store deadline, and records in the audit row the profile that
// applies (the requested one, or the workspace default when none was
// requested).
func (pl *Pipeline) loadCaller(ctx context.Context, c *Call) error {
	caller, err := pl.caller(c.storeContext(ctx), c.Principal)
	if err != nil {
		return err
	}
	c.Caller = caller
	if caller.Profile != nil {
		c.Event.ProfileID = caller.Profile.ID
	} else if c.Principal.ProfileID == "" && caller.DefaultProfile != nil {
		c.Event.ProfileID = caller.DefaultProfile.ID
	}
	return nil
}

// caller loads p's caller from the cache (or, registering a new task, the
// store: RegisterTasks) within ctx, which bounds it with a store deadline.
// An unknown workspace is EForbidden; any other failure EInternal.
func (pl *Pipeline) caller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error) {
	from := pl.Callers
	if from == nil {
		from = RegisterTasks(pl.Store)
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

// decide asks the policy, and tells the decision log (DecisionLog) its
// answer. It sees the arguments before they are validated
// (validateArguments), but never one larger than the tool's schema allows:
// PolicyArguments leaves those out, silently, so the decision (and its
// cache) stays small and a caller the policy denies learns nothing of the
// schema. A call allowed without them still fails validation. A denial is
// the EForbidden refusal, led by the decision's first reason.
func (pl *Pipeline) decide(ctx context.Context, c *Call) error {
	t := c.Tool
	args := c.Catalog.PolicyArguments(t.Name, c.Params.Arguments)
	var start time.Time
	if pl.DecisionLog != nil {
		start = time.Now()
	}
	d, err := c.Policy.Decide(ctx, c.Principal, c.Caller, c.ToolRef(), args)
	if err != nil {
		return err
	}
	if d.Mode != "" {
		c.Event.Mode = d.Mode // the mode the policy applied (chat for a credential without one)
	}
	if pl.WorkspaceFromPolicy && c.Event.WorkspaceID == "" {
		c.Event.WorkspaceID = auditText(d.WorkspaceID)
	}
	if pl.DecisionLog != nil {
		pl.DecisionLog.LogDecision(ctx, d, d.Input, t.Name, d.Revision, time.Since(start))
	}
	c.Decision = d
	if t.Upstream != "" && d.Tier != "" && d.Tier != t.Tier {
		// Policy data overrode a bridged tool's tier: its rate-limit
		// bucket and audit row follow the policy, not the upstreams file.
		over := *t
		over.Tier = d.Tier
		c.Tool, c.Event.Tier = &over, d.Tier
	}
	c.Event.DecisionID, c.Event.PolicyRevision = d.ID, d.Revision
	c.Event.ReasonCodes = reasonCodes(d.Reasons)
	if !d.Allow && !d.Visible && hidesUnlisted(c.Principal) {
		return unknownTool(t.Name, errHidden)
	}
	if !d.Allow {
		return denial(t.Name, d)
	}
	return checkActionMode(c)
}

// denial turns a deny decision into the EForbidden error, which the
// transport answers with a tool execution error; the message leads with
// the first reason, which says what is missing and what to do.
func denial(tool string, d *gateway.Decision) error {
	msg := fmt.Sprintf("tool %s denied by policy", tool)
	if len(d.Reasons) > 0 {
		msg = d.Reasons[0].Message
	}
	return &gateway.Error{Code: gateway.EForbidden, Message: msg, DecisionID: d.ID, Reasons: d.Reasons}
}

// checkParamHeaders checks a 2026-07-28 call's Mcp-Param-* headers against
// its arguments under the x-mcp-header annotations of the tool's schema
// (wire.CheckParamHeaders), once the policy allowed the tool, as
// validateArguments does, and before it: a header that does not match the
// body is the transport's refusal (HTTP 400, HeaderMismatch), whatever the
// arguments are. A call of the session-based versions has no such headers,
// and malformed params are refused by resolveTool.
func (pl *Pipeline) checkParamHeaders(_ context.Context, c *Call) error {
	return withDecision(wire.CheckParamHeaders(c.Params, c.Tool.InputSchema), c.Decision)
}

// validateArguments checks the arguments against the tool's schema, once
// the policy allowed the tool: a principal that may not call it gets the
// denial, not the schema of a tool tools/list does not show it (listed ⇔
// callable), and its audit row says denied.
// The refusal names the decision that allowed the tool (ToolInput
// marks it as an input validation error, answered by protocol version).
func (pl *Pipeline) validateArguments(_ context.Context, c *Call) error {
	err := c.Catalog.Validate(c.Params.Name, c.Params.Arguments)
	return withDecision(err, c.Decision)
}

// withDecision sets d's id on err, a refusal after d allowed the call,
// when err is an *Error of its own (not one it wraps); it returns err.
func withDecision(err error, d *gateway.Decision) error {
	if ge, ok := err.(*gateway.Error); ok && d != nil && ge.DecisionID == "" {
		ge.DecisionID = d.ID
	}
	return err
}

// confirmOrReserve takes the call's rate-limit slots and writes its audit
// row (status allowed) in one store transaction. A call that needs the
// deploy confirmation goes through it first (confirm): step 1 is answered
// here, a confirmed call claims its idempotency key in the same
// transaction.
func (pl *Pipeline) confirmOrReserve(ctx context.Context, c *Call) error {
	if needsConfirmation(c) {
		return pl.confirm(ctx, c)
	}
	_, err := pl.reserve(ctx, c)
	return err
}

// dispatch hands a reserved call to the adapter, its arguments decoded and
// raw as the client sent them (gateway.ToolCall), and the transport's relay
// of the call, if any, as the decision's relay obligation allows it
// (policyRelay), whose relayed kinds join the audit row's reason codes. A call whose client has
// gone, or whose deadline passed, by the time its reservation committed (a
// store that answered late, say) is not dispatched: nobody would get the
// result, and the client may already be retrying. Its audit row says so
// (status error, reason dispatch.abandoned); the slots it took stay taken.
// A confirmed call's failure is settled under its idempotency key.
func (pl *Pipeline) dispatch(ctx context.Context, c *Call) error {
	res, err := pl.callAdapter(ctx, c)
	if err != nil {
		if c.Claim != nil {
			return pl.settleFailedKey(ctx, c.Claim, err)
		}
		return err
	}
	c.Result = res
	return nil
}

func (pl *Pipeline) callAdapter(ctx context.Context, c *Call) (*gateway.ToolResult, error) {
	if err := ctx.Err(); err != nil {
		c.Event.ReasonCodes = append(c.Event.ReasonCodes, reasonAbandoned)
		return nil, &gateway.Error{Code: gateway.EUnavailable, Err: gateway.NotDispatched(err),
			Message: fmt.Sprintf("%s was not dispatched: the client gave up or the call's deadline passed before the gateway could run it; call again if it is still needed", c.Tool.Name),
			Reasons: []gateway.Reason{{Code: reasonAbandoned, Message: "the request ended before dispatch"}}}
	}
	p := c.Principal
	var relay *policyRelay
	if next := wire.RelayFrom(ctx); next != nil {
		relay = newPolicyRelay(next, c.Decision.Obligations.Relay)
		ctx = wire.WithRelay(ctx, relay)
	}
	res, err := pl.adapter(c.Tool).CallTool(ctx, gateway.ToolCall{
		WorkspaceID: p.WorkspaceID, TaskID: p.TaskID, Actor: p.Subject,
		Tool: c.Tool.Name, Arguments: c.Arguments, RawArguments: c.RawArguments, Principal: p,
	})
	if relay != nil {
		c.Event.ReasonCodes = append(c.Event.ReasonCodes, relay.codes()...)
	}
	return res, err
}

// applyObligations carries out the decision's obligations on the result
// (the function applyObligations) and marks a tool's own error in the
// audit row.
func (pl *Pipeline) applyObligations(_ context.Context, c *Call) error {
	applyObligations(c.Result, c.Decision.Obligations)
	if c.Result.IsError {
		c.Event.ErrorClass = "ToolError"
	}
	return nil
}
