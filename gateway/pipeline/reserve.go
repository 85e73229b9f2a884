package pipeline

import (
	"context"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
	"github.com/mcpgate/mcpgate/gateway/store"
)

// storeTimeout bounds the store work of one call before its dispatch
// (loading the caller, then the reservation transaction: one budget for
// both, Call.storeDeadline), so that a database that stops answering
// refuses calls within seconds instead of holding them (and their pool
// connections) until the client gives up; it also bounds each write after
// dispatch (finishing the audit row, the idempotency key).
const storeTimeout = 5 * time.Second

// reasonAbandoned is the audit reason code of an allowed call that was
// recorded but not dispatched because its request had ended.
const reasonAbandoned = "dispatch.abandoned"

// reserve is the step between an allow decision and dispatch: it records
// the audit row with status "allowed" and, in the same store transaction,
// reserves the call's rate-limit slots (per task, then workspace/day, then
// profile/hour; docs/requirements.md#rate-limits) and claims c.Claim when set (a
// confirmed deploy-tier call), so that the key, the row and the slots
// commit or roll back together. Calls denied by policy or refused as
// invalid never get here, so they consume no slot.
//
// It returns the ERateLimited refusal of docs/requirements.md#limit-messages for a full bucket
// (nothing recorded: finish inserts the rate_limited row); the earlier
// record and errKeySeen when the key was claimed before (nothing recorded,
// no slot taken); and an EUnavailable/EInternal error (-32603) when the
// store cannot reserve or record: the call is then not dispatched (fail
// closed).
func (pl *Pipeline) reserve(ctx context.Context, c *Call) (*gateway.IdempotencyRecord, error) {
	ev, tool := c.Event, c.Tool
	ev.Status = gateway.AuditAllowed
	ev.ID = 0
	ctx = c.storeContext(ctx)
	var err error
	start := time.Now()
	defer func() { pl.observer().ObserveReservation(time.Since(start), err) }()
	var plan ratelimit.Plan
	if pl.RateLimits != nil {
		sub := ratelimit.Subject{WorkspaceID: ev.WorkspaceID, TaskID: ev.TaskID, ProfileID: ev.ProfileID,
			Tool: tool.Name, Tier: tool.Tier, LimitKind: tool.LimitKind, Surface: pl.surface(), Actor: c.Principal.Subject}
		if pl.WorkspaceFromPolicy {
			sub.WorkspaceID = c.Principal.WorkspaceID // per principal: its pinned workspace, not the call's
		}
		if c.Principal.Kind == gateway.PrincipalCoordinator {
			sub.Token = c.Principal.TokenFingerprint
			sub.External, err = pl.externalLimits(ctx, c.Principal.WorkspaceID)
		}
		if err == nil {
			plan, err = pl.RateLimits.Plan(sub, pl.now())
		}
	}
	var res gateway.ReservationResult
	flow := flowRecord(c)
	if err == nil {
		res, err = pl.Store.Reserve(ctx, gateway.Reservation{Event: ev, Slots: plan.Counters(), Claim: c.Claim, Flow: flow})
	}
	if flow != nil && (res.FlowChanged || res.AuditID != 0 && changes(c.Session, flow)) {
		pl.flows.drop(flow.Key)
		c.flowStale = c.flowStale || res.FlowChanged
	}
	switch {
	case err != nil:
	case res.FlowChanged:
		err = errFlowChanged
		return nil, err
	case res.Prior != nil:
		err = errKeySeen
		return res.Prior, err
	case res.Full > 0:
		err = withDecision(plan.Refusal(res), c.Decision)
		return nil, err
	case res.AuditID == 0:
		err = gateway.Errorf(gateway.EInternal, "the audit store reported a reservation without an audit row")
	default:
		ev.ID = res.AuditID
		return nil, nil
	}
	switch code := gateway.ErrorCodeOf(err); code {
	case gateway.EUnavailable:
		return nil, gateway.Wrap(code, err, "the audit store is unavailable, so this call could not be counted against its rate limits or recorded, and was not dispatched; retry when the store is back")
	default:
		return nil, gateway.Wrap(gateway.EInternal, err, "the audit store could not reserve a rate-limit slot or record this call, so it was not dispatched; retry when the store is back")
	}
}

// ExternalLimitsStore is an optional interface of the Store (the
// contract's ExternalLimits part): the workspace's per-token hourly
// limits of external coordinators (docs/requirements.md#external-limits),
// read on every coordinator call. Both stores implement it; a Store
// without it leaves the defaults.
type ExternalLimitsStore = store.ExternalLimits

// externalLimits reads the workspace's external limits, nil when the store
// cannot tell (no ExternalLimitsStore).
func (pl *Pipeline) externalLimits(ctx context.Context, workspaceID string) (*gateway.ExternalLimits, error) {
	s, ok := pl.Store.(ExternalLimitsStore)
	if !ok {
		return nil, nil
	}
	l, err := s.ExternalLimits(ctx, workspaceID)
	if err != nil {
		return nil, err
	}
	return &l, nil
}
