package postgres

import (
	"context"

	"github.com/mcpgate/mcpgate/gateway"
)

// ReserveBatch runs s's batch reservation statement (mcpgate_reserve_batch)
// directly, for tests: the group commit only reaches it when several
// reservations wait at once.
func ReserveBatch(ctx context.Context, s *Store, evs []*gateway.AuditEvent, slots [][]gateway.Slot) ([]gateway.ReservationResult, error) {
	audits := make([][]any, len(evs))
	for i, ev := range evs {
		audits[i] = s.AuditArgs(ev)
	}
	return s.reserveBatch(ctx, audits, slots, nil)
}

// ReserveBatchFlows is ReserveBatch for reservations that record in flow
// sessions (mcpgate_reserve_flow_batch): flows[i] is reservation i's
// record, nil for one without.
func ReserveBatchFlows(ctx context.Context, s *Store, evs []*gateway.AuditEvent, slots [][]gateway.Slot, flows []*gateway.FlowRecord) ([]gateway.ReservationResult, error) {
	audits := make([][]any, len(evs))
	fl := make([]batchFlow, len(evs))
	for i, ev := range evs {
		audits[i] = s.AuditArgs(ev)
		fl[i] = batchFlow{rec: flows[i], at: flowReadTime(ev)}
	}
	return s.reserveBatch(ctx, audits, slots, fl)
}

// FinishOneAudit is the statement that finishes a lone audit row, for
// tests that run it inside a transaction of their own.
const FinishOneAudit = finishOneAudit
