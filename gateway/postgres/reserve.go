package postgres

import (
	"context"
	"database/sql/driver"
	"sync/atomic"
	"time"

	"github.com/lib/pq"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlcore"
)

// Reserve carries out r (store.Calls.Reserve). Without a claim or a flow
// record and with slots, concurrent reservations share one statement and
// one commit (reserveGroup); without slots, claim or flow record it is the
// audit INSERT alone; with a flow record and no claim it is one statement
// in autocommit (reserveFlow); with a claim it is a transaction of its own
// (sqlcore.Core.ReserveTx: BEGIN, the flow key's lock, the claim,
// takeSlots, the flow record, COMMIT). Each is run again when PostgreSQL
// aborts it to break a deadlock (at most maxDeadlockAttempts times in all;
// the aborted reservation wrote nothing). The store's own reservations
// lock a flow row before any counter row and their counter rows in one
// global order, so they cannot deadlock each other; the retry is the
// backstop for a transaction outside that order.
func (s *Store) Reserve(ctx context.Context, r gateway.Reservation) (gateway.ReservationResult, error) {
	if err := s.CheckReservation(r.Event); err != nil {
		return gateway.ReservationResult{}, err
	}
	if r.Claim == nil && r.Flow == nil && len(r.Slots) > 0 {
		it := &sqlcore.ReserveItem{Ctx: ctx, R: r}
		if err := s.res.Do(ctx, it); err != nil {
			return gateway.ReservationResult{}, err
		}
		return it.Res, nil
	}
	if r.Claim == nil && r.Flow != nil {
		return s.reserveFlow(ctx, r)
	}
	if r.Claim == nil {
		var res gateway.ReservationResult
		err := s.InsertAudit(ctx, r.Event, &res.AuditID)
		return res, err
	}
	// Prepare before BEGIN: see sqlcore.Core.ReserveTx.
	if err := s.prepareReserve(ctx); err != nil {
		return gateway.ReservationResult{}, err
	}
	for attempt := 1; ; attempt++ {
		res, err := s.ReserveTx(ctx, r, s.takeSlots)
		if attempt == maxDeadlockAttempts || !deadlocked(err) {
			return res, err
		}
	}
}

// reserveFlow carries out r, which records in a flow session (r.Flow) and
// claims no key, as one statement in autocommit (reserveFlowAndAudit):
// one round trip, where a transaction takes five. Its result is
// ReserveTx's: FlowChanged when the flow row holds more labels than the
// call was decided on, the full slot, or the audit row's id; nothing is
// written unless the id is returned.
func (s *Store) reserveFlow(ctx context.Context, r gateway.Reservation) (gateway.ReservationResult, error) {
	f := r.Flow
	// The read's time as recordFlow keeps it, written as encoding/json
	// writes a time.Time, so that decodeFlow reads either alike.
	at := r.Event.Time.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
	args := append(append(s.AuditArgs(r.Event), slotArgs(r.Slots)...), s.commitDeadline(ctx),
		f.Key, f.WorkspaceID, f.TaskID, int64(f.Seen), pq.Array(f.Reads), f.Tool, at, int64(gateway.MaxFlowTools))
	row := make([]driver.Value, 1)
	found, err := s.queryRow(ctx, reserveFlowAndAudit, args, row)
	// In autocommit the statement is its whole transaction: one aborted
	// to break a deadlock wrote nothing and runs again.
	for attempt := 1; deadlocked(err) && attempt < maxDeadlockAttempts; attempt++ {
		found, err = s.queryRow(ctx, reserveFlowAndAudit, args, row)
	}
	var res gateway.ReservationResult
	if pe := pq.As(err); pe != nil {
		switch pe.Code {
		case flowChangedCode:
			res.FlowChanged = true
			return res, nil
		case fullSlotCode:
			return fullSlot(pe, len(r.Slots))
		}
	}
	if err != nil {
		return res, driverError(err)
	}
	id, ok := row[0].(int64)
	if !found || !ok || id == 0 {
		return res, gateway.Errorf(gateway.EInternal, "the flow reservation of %s returned no audit id (%v)", r.Event.Tool, row[0])
	}
	res.AuditID = id
	return res, nil
}

// FinishAudit completes the row ev.ID after dispatch in a group commit
// (sqlcore.Core.NewFinisher over finishBatch).
func (s *Store) FinishAudit(ctx context.Context, ev *gateway.AuditEvent) error {
	return s.fin.Do(ctx, ev)
}

// reserveGroup is the flush of Reserve's group commit: the reservations
// (each with slots, none with a claim) whose requests are still live go
// to the database in one statement (reserveBatch), one commit. A lone
// one takes its own statement (takeSlots in autocommit), so a call that
// waits for no other costs nothing more. A
// reservation whose request has ended when its turn comes is not written
// (EUnavailable); the batch stops when no caller waits for it any more.
// When the batch statement fails, nothing of it is written, and the group
// tries each reservation again on its own (group.apply) unless the
// database is unreachable.
func (s *Store) reserveGroup(ctx context.Context, items []*sqlcore.ReserveItem) ([]error, error) {
	errs := make([]error, len(items))
	live := make([]int, 0, len(items))
	for i, it := range items {
		it.Res = gateway.ReservationResult{}
		if err := it.Ctx.Err(); err != nil {
			errs[i] = sqlcore.EndedBeforeTurn(err, it)
			continue
		}
		live = append(live, i)
	}
	if len(live) == 0 {
		return errs, nil
	}
	// The batch stops once no caller waits for it any more (each was
	// cancelled or passed its deadline), as a reservation of its own would.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var waiting atomic.Int32
	waiting.Store(int32(len(live)))
	for _, i := range live {
		stop := context.AfterFunc(items[i].Ctx, func() {
			if waiting.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	if err := s.prepareReserve(ctx); err != nil {
		return nil, err
	}
	if len(live) == 1 {
		it := items[live[0]]
		it.Res, errs[live[0]] = s.takeSlots(ctx, nil, s.AuditArgs(it.R.Event), it.R.Slots)
		return errs, nil
	}
	audits := make([][]any, len(live))
	slots := make([][]gateway.Slot, len(live))
	for j, i := range live {
		audits[j], slots[j] = s.AuditArgs(items[i].R.Event), items[i].R.Slots
	}
	res, err := s.reserveBatch(ctx, audits, slots)
	if err != nil {
		return nil, err
	}
	if len(res) != len(live) {
		return nil, gateway.Errorf(gateway.EInternal, "audit store answered %d of a batch of %d reservations", len(res), len(live))
	}
	for j, i := range live {
		items[i].Res = res[j]
	}
	return errs, nil
}
