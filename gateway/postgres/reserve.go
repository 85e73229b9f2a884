package postgres

import (
	"context"
	"database/sql/driver"
	"sync/atomic"

	"github.com/lib/pq"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlcore"
)

// Reserve carries out r (store.Calls.Reserve). Without a claim and with
// slots, concurrent reservations share one statement and one commit
// (reserveGroup), with a flow record or without; without slots or claim
// it is the audit INSERT alone, or with a flow record one statement in
// autocommit (reserveFlow); with a claim it is a transaction of its own
// (sqlcore.Core.ReserveTx: BEGIN, the flow key's lock, the claim,
// takeSlots, the flow record, COMMIT). A lone statement or transaction
// that PostgreSQL aborts to break a deadlock runs again (at most
// maxDeadlockAttempts times in all; the aborted reservation wrote
// nothing), and a batch's reservations are then tried again each alone
// (the group commit's retry). The store's own reservations lock their
// flow rows (in key order) before any counter row and their counter rows
// in one global order, so they cannot deadlock each other; the retry is
// the backstop for a transaction outside that order.
func (s *Store) Reserve(ctx context.Context, r gateway.Reservation) (gateway.ReservationResult, error) {
	if err := s.CheckReservation(r.Event); err != nil {
		return gateway.ReservationResult{}, err
	}
	if r.Claim == nil && len(r.Slots) > 0 {
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
	args := append(append(s.AuditArgs(r.Event), slotArgs(r.Slots)...), s.commitDeadline(ctx),
		f.Key, f.WorkspaceID, f.TaskID, int64(f.Seen), pq.Array(f.Reads), f.Tool, flowReadTime(r.Event), int64(gateway.MaxFlowTools))
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
// to the database in one statement (reserveBatch; reserveFlowBatch when
// some record in flow sessions), one commit. A lone one takes its own
// statement (takeSlots or reserveFlow in autocommit), so a call that
// waits for no other costs nothing more. Of reservations that record
// under one flow key, the first joins the batch and the others run after
// it, each alone (reserveFlow), so that each is decided on the history
// the one before recorded. A
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
	// A reservation whose flow key an earlier one of the batch records in
	// waits for the batch (each key once per batch), then runs alone.
	var flows []batchFlow
	var later []int
	seen := map[string]bool{}
	for j := 0; j < len(live); j++ {
		r := items[live[j]].R
		if r.Flow == nil {
			continue
		}
		if seen[r.Flow.Key] {
			later = append(later, live[j])
			live = append(live[:j], live[j+1:]...)
			j--
			continue
		}
		seen[r.Flow.Key] = true
		if flows == nil {
			flows = make([]batchFlow, len(items))
		}
		flows[live[j]] = batchFlow{rec: r.Flow, at: flowReadTime(r.Event)}
	}
	if err := s.reserveLive(ctx, items, live, flows, errs); err != nil {
		return nil, err
	}
	for _, i := range later {
		if err := items[i].Ctx.Err(); err != nil {
			errs[i] = sqlcore.EndedBeforeTurn(err, items[i])
			continue
		}
		items[i].Res, errs[i] = s.reserveFlow(ctx, items[i].R)
	}
	return errs, nil
}

// reserveLive writes the reservations items[live] of a group commit,
// whose flow keys (flows[i], by index of items; nil without any) differ:
// a lone one in a statement of its own (reserveFlow or takeSlots), several
// in one (reserveBatch). It sets each one's result and error (errs[i]),
// or returns the error of the whole statement.
func (s *Store) reserveLive(ctx context.Context, items []*sqlcore.ReserveItem, live []int, flows []batchFlow, errs []error) error {
	if len(live) == 1 {
		it := items[live[0]]
		if it.R.Flow != nil {
			it.Res, errs[live[0]] = s.reserveFlow(ctx, it.R)
		} else {
			it.Res, errs[live[0]] = s.takeSlots(ctx, nil, s.AuditArgs(it.R.Event), it.R.Slots)
		}
		return nil
	}
	audits := make([][]any, len(live))
	slots := make([][]gateway.Slot, len(live))
	var fl []batchFlow
	if flows != nil {
		fl = make([]batchFlow, len(live))
	}
	for j, i := range live {
		audits[j], slots[j] = s.AuditArgs(items[i].R.Event), items[i].R.Slots
		if flows != nil {
			fl[j] = flows[i]
		}
	}
	res, err := s.reserveBatch(ctx, audits, slots, fl)
	if err != nil {
		return err
	}
	if len(res) != len(live) {
		return gateway.Errorf(gateway.EInternal, "audit store answered %d of a batch of %d reservations", len(res), len(live))
	}
	for j, i := range live {
		items[i].Res = res[j]
	}
	return nil
}
