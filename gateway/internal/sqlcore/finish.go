package sqlcore

import (
	"context"
	"strconv"

	"github.com/mcpgate/mcpgate/gateway"
)

// MaxFinishBatch is the most audit rows one group commit of FinishAudit
// completes (a store's FinishBatch gets at most this many).
const MaxFinishBatch = 64

// finisher is the group commit of FinishAudit: the finishes that arrive
// while a commit is under way share the next commit, and each caller
// returns when the transaction holding its row has committed (or failed),
// so the final status is written before the call's reply.
type finisher = Group[*gateway.AuditEvent]

// FinishBatch is a store's own statement that completes audit rows: it
// writes the final status, error class, latency and reason codes
// (FinishArgs) of each of evs, at most MaxFinishBatch of them, by id, in
// one transaction, and reports for each whether its row exists. An error
// means none was written, or, for a commit whose outcome is unknown, that
// they may have been.
type FinishBatch func(ctx context.Context, evs []*gateway.AuditEvent) (found []bool, err error)

// NewFinisher returns the group commit of a store's FinishAudit over its
// batch statement. FinishAudit (Group.Do) completes the row ev.ID after
// dispatch: it sets the final Status, ErrorClass, ReasonCodes,
// LatencyMicros and PolicyRevision of ev (a call can end with a reason of
// its own, such as dispatch.abandoned), closes the row (not open) and
// leaves every other column as the reservation wrote it. It returns once
// the transaction that wrote them has committed: finishes that arrive
// while another is being committed share the next commit, and a lone
// finish is written at once. Errors: ENotFound when no row has ev.ID or
// the row is sealed (SealAudit), EUnavailable when the database cannot
// be reached or written, the store is closed, or ctx ended first (then
// the row may or may not be finished).
func (c *Core) NewFinisher(batch FinishBatch) *Group[*gateway.AuditEvent] {
	return newFinisher(func(ctx context.Context, evs []*gateway.AuditEvent) ([]error, error) {
		found, err := batch(ctx, evs)
		if err != nil {
			return nil, c.DriverError(err)
		}
		if len(found) != len(evs) {
			return nil, gateway.Errorf(gateway.EInternal, "audit store finished %d of %d audit events", len(found), len(evs))
		}
		errs := make([]error, len(evs))
		for i, ok := range found {
			if !ok {
				errs[i] = gateway.Errorf(gateway.ENotFound, "audit event %d not found, or sealed before its call finished (see docs/architecture.md, \"The audit chain\"); record a row with RecordAudit before finishing it", evs[i].ID)
			}
		}
		return errs, nil
	})
}

func newFinisher(flush func(ctx context.Context, evs []*gateway.AuditEvent) ([]error, error)) *finisher {
	return newGroup(MaxFinishBatch, flush,
		func(ev *gateway.AuditEvent) string { return strconv.FormatInt(ev.ID, 10) },
		groupMsgs{
			closed:   "audit store closed; audit event %s was not finished",
			queued:   "audit store busy: audit event %s was not finished before the deadline",
			inFlight: "audit store slow: the commit finishing audit event %s did not end before the deadline; it may still be written",
		})
}
