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
// It returns the limiter's ERateLimited error for a full bucket (nothing
// recorded yet: finish inserts the rate_limited row), and an
// EUnavailable/EInternal error (-32603) when the store cannot reserve or
// record: the call is then not dispatched (fail closed).
func (pl *Pipeline) reserveAndRecord(ctx context.Context, tool *tools.Tool, ev *gateway.AuditEvent) error {
	return pl.reserveRecordAndClaim(ctx, tool, ev, nil)
}

// reserveRecordAndClaim is reserveAndRecord with claim (when non-nil) run
// first in the same transaction: a confirmed deploy-tier call claims its
// idempotency key there, so the key, the audit row and the slots commit
// or roll back together. An EConflict from claim passes through unchanged,
// like ERateLimited, with nothing recorded.
func (pl *Pipeline) reserveRecordAndClaim(ctx context.Context, tool *tools.Tool, ev *gateway.AuditEvent, claim func(ctx context.Context) error) error {
	ev.Status = gateway.AuditAllowed
	ctx, cancel := storeContext(ctx)
	defer cancel()
	steps := make([]func(ctx context.Context) error, 0, 2)
	if claim != nil {
		steps = append(steps, claim)
	}
	if pl.Limiter != nil {
		sub := ratelimit.Subject{WorkspaceID: ev.WorkspaceID, TaskID: ev.TaskID, ProfileID: ev.ProfileID,
			Tool: tool.Name, Tier: tool.Tier, LimitKind: tool.LimitKind}
		steps = append(steps, func(ctx context.Context) error { return pl.Limiter.Reserve(ctx, sub) })
	}
	var err error
	start := time.Now()
	defer func() { pl.Metrics.observeReservation(time.Since(start), err) }()
	if len(steps) == 0 {
		err = pl.Store.RecordAudit(ctx, ev)
	} else {
		err = pl.Store.ReserveAndRecord(ctx, ev, func(ctx context.Context) error {
			for _, step := range steps {
				if err := step(ctx); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err == nil {
		return nil
	}
	ev.ID = 0
	switch code := gateway.ErrorCodeOf(err); code {
	case gateway.ERateLimited, gateway.EConflict:
		return err
	case gateway.EUnavailable:
		return gateway.Wrap(code, err, "the audit store is unavailable, so this call could not be counted against its rate limits or recorded, and was not dispatched; retry when the store is back")
	default:
		return gateway.Wrap(gateway.EInternal, err, "the audit store could not reserve a rate-limit slot or record this call, so it was not dispatched; retry when the store is back")
	}
}
