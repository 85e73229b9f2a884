package server

import (
	"context"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
	"github.com/mcpgate/mcpgate/tools"
)

// storeTimeout bounds the store work of one call before its dispatch
// (loading the caller, then the reservation transaction), so that a
// database that stops answering refuses calls within seconds instead of
// holding them (and their pool connections) until the client gives up;
// it also bounds each write after dispatch (finishing the audit row, the
// idempotency key).
const storeTimeout = 5 * time.Second

// reasonAbandoned is the audit reason code of an allowed call that was
// recorded but not dispatched because its request had ended.
const reasonAbandoned = "dispatch.abandoned"

// storeDeadlineKey carries, in a call's context, the deadline of its store
// work before dispatch (CallTool sets it; storeContext reads it).
type storeDeadlineKey struct{}

// withStoreDeadline returns ctx carrying deadline as the store deadline.
func withStoreDeadline(ctx context.Context, deadline time.Time) context.Context {
	return context.WithValue(ctx, storeDeadlineKey{}, deadline)
}

// storeContext returns ctx bounded by the call's store deadline, or by
// storeTimeout from now outside a call (tools/list).
func storeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Value(storeDeadlineKey{}).(time.Time); ok {
		return context.WithDeadline(ctx, d)
	}
	return context.WithTimeout(ctx, storeTimeout)
}

// reserveAndRecord is the step between an allow decision and dispatch
// (DESIGN.md §1): it records ev with status "allowed" and, in the same
// store transaction, reserves the call's rate-limit slots (per task, then
// workspace/day, then profile/hour; seed 001, Rate limits). Calls denied
// by policy or refused as invalid never get here, so they consume no slot.
// It returns the ERateLimited refusal of seed 001 for a full bucket
// (nothing recorded yet: finish inserts the rate_limited row), and an
// EUnavailable/EInternal error (-32603) when the store cannot reserve or
// record: the call is then not dispatched (fail closed).
func (pl *Pipeline) reserveAndRecord(ctx context.Context, tool *tools.Tool, ev *gateway.AuditEvent) error {
	_, err := pl.reserve(ctx, tool, ev, nil)
	return err
}

// reserve is reserveAndRecord with the idempotency key claim (when
// non-nil) claimed in the same transaction: a confirmed deploy-tier call
// claims its key there, so the key, the audit row and the slots commit or
// roll back together. When the key was claimed before, it returns that
// record and errKeySeen, with nothing recorded and no slot taken.
func (pl *Pipeline) reserve(ctx context.Context, tool *tools.Tool, ev *gateway.AuditEvent, claim *gateway.IdempotencyRecord) (*gateway.IdempotencyRecord, error) {
	ev.Status = gateway.AuditAllowed
	ev.ID = 0
	ctx, cancel := storeContext(ctx)
	defer cancel()
	var err error
	start := time.Now()
	defer func() { pl.Metrics.observeReservation(time.Since(start), err) }()
	var plan ratelimit.Plan
	if pl.RateLimits != nil {
		sub := ratelimit.Subject{WorkspaceID: ev.WorkspaceID, TaskID: ev.TaskID, ProfileID: ev.ProfileID,
			Tool: tool.Name, Tier: tool.Tier, LimitKind: tool.LimitKind}
		plan, err = pl.RateLimits.Plan(sub, pl.now())
	}
	var res gateway.ReservationResult
	if err == nil {
		res, err = pl.Store.Reserve(ctx, gateway.Reservation{Event: ev, Slots: plan.Counters(), Claim: claim})
	}
	switch {
	case err != nil:
	case res.Prior != nil:
		err = errKeySeen
		return res.Prior, err
	case res.Full > 0:
		err = plan.Refusal(res)
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
