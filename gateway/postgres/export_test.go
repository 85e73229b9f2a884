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
	return s.reserveBatch(ctx, audits, slots)
}

// FinishOneAudit is the statement that finishes a lone audit row, for
// tests that run it inside a transaction of their own.
const FinishOneAudit = finishOneAudit
