package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
)

// rateStatements are the hot-path statements of the rate-limit counters,
// all on the write connection.
type rateStatements struct {
	// addN[n-2] is addCounts(n): the n slots of one reservation in one
	// statement, for 2 ≤ n ≤ maxSlotsAtOnce.
	addN [maxSlotsAtOnce - 1]prepared
}

func newRateStatements() *rateStatements {
	r := &rateStatements{}
	for i := range r.addN {
		r.addN[i].Query = addCounts(i + 2)
	}
	return r
}

func (r *rateStatements) close() error {
	var errs []error
	for i := range r.addN {
		errs = append(errs, r.addN[i].Close())
	}
	return errors.Join(errs...)
}

// maxSlotsAtOnce is the most slots takeSlots takes in one statement
// (addCounts); a reservation has at most four (token, task, workspace,
// profile), and more are taken one statement each.
const maxSlotsAtOnce = 6

// addCounts is sqlcore's addCount for n counters at once: one VALUES row per slot,
// RETURNING each counter's key with its new count (RETURNING rows come in
// no set order, so they are matched by key).
func addCounts(n int) string {
	rows := strings.Repeat(", (?, ?, ?, ?, ?, ?)", n)[2:]
	return `
INSERT INTO rate_limit_counters (bucket_key, window_start, count, expires_at, task_workspace_id, task_id)
VALUES ` + rows + `
ON CONFLICT (bucket_key, window_start) DO UPDATE SET count = count + excluded.count,
    task_workspace_id = coalesce(task_workspace_id, excluded.task_workspace_id),
    task_id = coalesce(task_id, excluded.task_id)
RETURNING bucket_key, count`
}

// prepareReserve prepares addCount (Core.Add) and addCounts on the write connection before the transaction takes it
// (once; later calls find them prepared).
func (s *Store) prepareReserve(ctx context.Context) error {
	if _, err := s.Add.Get(ctx, s.w, driverError); err != nil {
		return err
	}
	for i := range s.rate.addN {
		if _, err := s.rate.addN[i].Get(ctx, s.w, driverError); err != nil {
			return err
		}
	}
	return nil
}

// takeSlots is the store's sqlcore.TakeSlots: the audit row, then one
// addCount per slot, in order, stopping at the first full one. Reserve
// runs it in BEGIN IMMEDIATE on the single write connection (in a
// savepoint when reservations share the transaction), so reservations
// never interleave, and rolls back after a full slot, which gives back
// the slots taken before it.
func (s *Store) takeSlots(ctx context.Context, tx *sqlx.Tx, audit []any, slots []gateway.Slot) (gateway.ReservationResult, error) {
	ins, err := s.Audit.Get(ctx, s.w, driverError)
	if err != nil {
		return gateway.ReservationResult{}, err
	}
	add, err := s.Add.Get(ctx, s.w, driverError)
	if err != nil {
		return gateway.ReservationResult{}, err
	}
	var id int64
	if err := tx.StmtContext(ctx, ins).QueryRowContext(ctx, audit...).Scan(&id); err != nil {
		return gateway.ReservationResult{}, driverError(err)
	}
	if len(slots) > 1 && len(slots) <= maxSlotsAtOnce && distinctKeys(slots) {
		return s.takeSlotsAtOnce(ctx, tx, id, slots)
	}
	add = tx.StmtContext(ctx, add)
	for i, slot := range slots {
		n, err := s.addSlot(ctx, add, slot, 1)
		if err != nil {
			return gateway.ReservationResult{}, err
		}
		if n > slot.Limit {
			return gateway.ReservationResult{Full: i + 1, Used: n - 1}, nil
		}
	}
	return gateway.ReservationResult{AuditID: id}, nil
}

// takeSlotsAtOnce takes one call of each of slots (2 to maxSlotsAtOnce,
// keys distinct) in one addCounts statement, then reports the first full
// slot in order, as the one-by-one loop would: its count before this call
// is its new count less one, since each key was added to once. Taking the
// slots after a full one as well changes nothing: Reserve rolls the
// reservation back when a slot is full.
func (s *Store) takeSlotsAtOnce(ctx context.Context, tx *sqlx.Tx, auditID int64, slots []gateway.Slot) (gateway.ReservationResult, error) {
	stmt, err := s.rate.addN[len(slots)-2].Get(ctx, s.w, driverError)
	if err != nil {
		return gateway.ReservationResult{}, err
	}
	args := make([]any, 0, 6*len(slots))
	for _, slot := range slots {
		args = append(args, s.SlotArgs(slot, 1)...)
	}
	rows, err := tx.StmtContext(ctx, stmt).QueryContext(ctx, args...)
	if err != nil {
		return gateway.ReservationResult{}, driverError(err)
	}
	defer rows.Close()
	counts := make([]int64, len(slots))
	got := 0
	for rows.Next() {
		var key string
		var n int64
		if err := rows.Scan(&key, &n); err != nil {
			return gateway.ReservationResult{}, driverError(err)
		}
		for i := range slots {
			if slots[i].Key == key {
				counts[i] = n
				got++
				break
			}
		}
	}
	if err := rows.Err(); err != nil {
		return gateway.ReservationResult{}, driverError(err)
	}
	if got != len(slots) {
		return gateway.ReservationResult{}, gateway.Errorf(gateway.EInternal,
			"audit store returned %d of %d rate-limit counters; the call was neither recorded nor counted", got, len(slots))
	}
	for i, n := range counts {
		if n > slots[i].Limit {
			return gateway.ReservationResult{Full: i + 1, Used: n - 1}, nil
		}
	}
	return gateway.ReservationResult{AuditID: auditID}, nil
}

// distinctKeys reports whether no two of slots share a counter key.
func distinctKeys(slots []gateway.Slot) bool {
	for i := range slots {
		for j := range i {
			if slots[i].Key == slots[j].Key {
				return false
			}
		}
	}
	return true
}

// addSlot adds delta to slot's counter with the addCount statement stmt,
// creating it (with slot's task, if any) at delta.
func (s *Store) addSlot(ctx context.Context, stmt *sql.Stmt, slot gateway.Slot, delta int64) (int64, error) {
	var n int64
	err := stmt.QueryRowContext(ctx, s.SlotArgs(slot, delta)...).Scan(&n)
	return n, driverError(err)
}
