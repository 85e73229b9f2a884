package sqlite

import (
	"context"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlcore"
)

// Reserve carries out r (store.Calls.Reserve). Every reservation goes
// through one group commit (reserveBatch): reservations queue for the one
// write connection anyway, and each commit costs a WAL write, so those
// that arrive while a commit is under way share the next transaction,
// each in a savepoint of its own (sqlcore.Core.ReserveSavepoints).
func (s *Store) Reserve(ctx context.Context, r gateway.Reservation) (gateway.ReservationResult, error) {
	if err := s.CheckReservation(r.Event); err != nil {
		return gateway.ReservationResult{}, err
	}
	it := &sqlcore.ReserveItem{Ctx: ctx, R: r}
	if err := s.res.Do(ctx, it); err != nil {
		return gateway.ReservationResult{}, err
	}
	return it.Res, nil
}

// reserveBatch is the flush of Reserve's group commit: the statements
// of takeSlots prepared before BEGIN (prepareReserve), then the batch in
// one transaction.
func (s *Store) reserveBatch(ctx context.Context, items []*sqlcore.ReserveItem) ([]error, error) {
	if err := s.prepareReserve(ctx); err != nil {
		return nil, err
	}
	return s.ReserveSavepoints(ctx, items, s.takeSlots)
}

// FinishAudit completes the row ev.ID after dispatch in a group commit
// (sqlcore.Core.NewFinisher over finishBatch).
func (s *Store) FinishAudit(ctx context.Context, ev *gateway.AuditEvent) error {
	return s.fin.Do(ctx, ev)
}
