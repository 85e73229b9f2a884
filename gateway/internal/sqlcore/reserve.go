package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
)

// Reserve carries out r (pipeline.Store.Reserve). With
// Dialect.GroupReserve, concurrent reservations share one transaction
// (reserveBatch), each in a savepoint; with Dialect.ReserveBatch,
// concurrent reservations with slots and without a claim share one
// statement (reserveGroup). Otherwise: without slots or claim,
// RecordAudit's one INSERT; without a claim on a dialect whose
// reservation statement is atomic alone (Dialect.AtomicTakeSlots), that
// statement in autocommit; else BEGIN (on W), the claim when r.Claim is
// set, the dialect's reservation statement (Dialect.TakeSlots) or,
// without slots, the audit INSERT alone, and COMMIT. A key claimed before
// or a full slot rolls the reservation back, so nothing of it is written.
// A commit whose outcome is unknown (connection lost during COMMIT) is
// reported as EUnavailable: the call is refused, and the slots may stay
// taken — the limiter errs on the side of fewer calls.
func (c *Core) Reserve(ctx context.Context, r gateway.Reservation) (gateway.ReservationResult, error) {
	var res gateway.ReservationResult
	if err := c.checkEvent(r.Event); err != nil {
		return res, err
	}
	if c.res != nil && (c.D.GroupReserve || (r.Claim == nil && len(r.Slots) > 0)) {
		it := &reserveItem{ctx: ctx, r: r}
		if err := c.res.do(ctx, it); err != nil {
			return res, err
		}
		return it.res, nil
	}
	audit, err := c.Audit.Get(ctx, c.W, c.DriverError)
	if err != nil {
		return res, err
	}
	if len(r.Slots) == 0 && r.Claim == nil {
		err = audit.QueryRowContext(ctx, c.AuditArgs(r.Event)...).Scan(&res.AuditID)
		return res, c.DriverError(err)
	}
	// Prepare before BEGIN: see Dialect.PrepareReserve.
	if err := c.D.PrepareReserve(ctx); err != nil {
		return res, err
	}
	if r.Claim == nil && c.D.AtomicTakeSlots {
		return c.D.TakeSlots(ctx, nil, c.AuditArgs(r.Event), r.Slots)
	}
	for attempt := 1; ; attempt++ {
		res, err = c.reserveTx(ctx, r, audit)
		if attempt == maxDeadlockAttempts || c.D.Deadlocked == nil || !c.D.Deadlocked(err) {
			return res, err
		}
	}
}

// maxDeadlockAttempts is how many times a reservation runs when the
// database breaks a deadlock by aborting it (Dialect.Deadlocked): a
// reservation aborted that way wrote nothing, so it runs again.
const maxDeadlockAttempts = 3

// reserveTx is Reserve in a transaction of its own: BEGIN, reserveIn,
// COMMIT (or ROLLBACK when nothing is to be written).
func (c *Core) reserveTx(ctx context.Context, r gateway.Reservation, audit *sql.Stmt) (gateway.ReservationResult, error) {
	tx, err := c.W.BeginTxx(ctx, nil)
	if err != nil {
		return gateway.ReservationResult{}, c.DriverError(err)
	}
	res, err := c.reserveIn(ctx, tx, r, audit)
	if err != nil || res.AuditID == 0 {
		_ = tx.Rollback()
		return res, err
	}
	if err := tx.Commit(); err != nil {
		return gateway.ReservationResult{}, c.DriverError(err)
	}
	return res, nil
}

// MaxReserveBatch is the most reservations one group commit of Reserve
// holds (Dialect.GroupReserve).
const MaxReserveBatch = 64

// reserveItem is one Reserve call in a group commit: the caller's ctx (a
// call whose request ended before its turn is not written), its
// reservation and, once its batch has committed, its result.
type reserveItem struct {
	ctx context.Context
	r   gateway.Reservation
	res gateway.ReservationResult
}

func newReserver(flush func(ctx context.Context, items []*reserveItem) ([]error, error)) *group[*reserveItem] {
	g := newGroup(MaxReserveBatch, flush,
		func(it *reserveItem) string { return it.r.Event.Tool },
		groupMsgs{
			closed:   "audit store closed; the call to %s was neither recorded nor counted",
			queued:   "audit store busy: the call to %s was not recorded before the deadline",
			inFlight: "audit store slow: the commit recording the call to %s did not end before the deadline",
		})
	// A reservation taken into a batch learns its outcome: a row that
	// commits is then finished by its caller (dispatched or abandoned)
	// instead of being left "allowed" by a caller that gave up.
	g.waitTaken = true
	return g
}

// savepoint is the name of the savepoint that holds one reservation of a
// group commit (reserveBatch).
const savepoint = "mcpgate_reservation"

// reserveBatch is the group commit of Reserve (Dialect.GroupReserve): one
// BEGIN (IMMEDIATE on SQLite) and one COMMIT for the whole batch, each
// reservation inside a savepoint of its own, so that a full slot, a key
// claimed before or an error of one reservation rolls back that
// reservation only, exactly as its own transaction would have. The
// reservations run one after another on the one write connection, so the
// limits stay exact. A lone reservation takes no savepoint: its
// transaction is rolled back instead. A reservation whose request has
// ended when its turn comes is not written (EUnavailable). An error of
// the whole batch (BEGIN, a failed ROLLBACK TO, COMMIT) reaches every
// caller; nothing of the batch is written then, or, for a COMMIT whose
// outcome is unknown, all of it may be (the slots may stay taken, as with
// Reserve's own transactions).
func (c *Core) reserveBatch(ctx context.Context, items []*reserveItem) ([]error, error) {
	audit, err := c.Audit.Get(ctx, c.W, c.DriverError)
	if err != nil {
		return nil, err
	}
	// Prepare before BEGIN: see Dialect.PrepareReserve.
	if err := c.D.PrepareReserve(ctx); err != nil {
		return nil, err
	}
	tx, err := c.W.BeginTxx(ctx, nil)
	if err != nil {
		return nil, c.DriverError(err)
	}
	// The statements inside the transaction run under sctx, which carries
	// ctx's values but no deadline: with a cancellable context the driver
	// starts a goroutine per statement to interrupt it, and these
	// statements never wait for another process (BEGIN IMMEDIATE took the
	// write lock, and a WAL commit waits for no reader). The deadline
	// still bounds the wait for the lock (BEGIN) and the COMMIT, and it is
	// checked before each reservation.
	sctx := context.WithoutCancel(ctx)
	errs := make([]error, len(items))
	lone, written := len(items) == 1, 0
	for i, it := range items {
		if err := ctx.Err(); err != nil {
			_ = tx.Rollback()
			return nil, c.DriverError(err)
		}
		it.res = gateway.ReservationResult{}
		if err := it.ctx.Err(); err != nil {
			errs[i] = endedBeforeTurn(err, it)
			continue
		}
		if !lone {
			if _, err := tx.ExecContext(sctx, "SAVEPOINT "+savepoint); err != nil {
				_ = tx.Rollback()
				return nil, c.DriverError(err)
			}
		}
		res, err := c.reserveIn(sctx, tx, it.r, audit)
		it.res, errs[i] = res, err
		end := "RELEASE " + savepoint
		if err != nil || res.AuditID == 0 {
			end = "ROLLBACK TO " + savepoint + "; RELEASE " + savepoint
		} else {
			written++
		}
		if lone {
			break
		}
		if _, err := tx.ExecContext(sctx, end); err != nil {
			_ = tx.Rollback()
			return nil, c.DriverError(err)
		}
	}
	if written == 0 {
		_ = tx.Rollback()
		return errs, nil
	}
	if err := tx.Commit(); err != nil {
		return nil, c.DriverError(err)
	}
	return errs, nil
}

// endedBeforeTurn is the error of a reservation of a group commit whose
// request ended (err) before its turn: it is not written.
func endedBeforeTurn(err error, it *reserveItem) error {
	return gateway.Wrap(gateway.EUnavailable, err,
		"the request ended before the audit store reached its reservation; the call to "+it.r.Event.Tool+" was neither recorded nor counted")
}

// reserveGroup is the group commit of Reserve with Dialect.ReserveBatch:
// the reservations (each with slots, none with a claim) whose requests
// are still live go to the database in one statement, one commit. A lone
// one takes the dialect's own statement (Dialect.TakeSlots in
// autocommit), so a call that waits for no other costs nothing more. A
// reservation whose request has ended when its turn comes is not written
// (EUnavailable); the batch stops when no caller waits for it any more.
// When the batch statement fails, nothing of it is written, and the group
// tries each reservation again on its own (group.apply) unless the
// database is unreachable.
func (c *Core) reserveGroup(ctx context.Context, items []*reserveItem) ([]error, error) {
	errs := make([]error, len(items))
	live := make([]int, 0, len(items))
	for i, it := range items {
		it.res = gateway.ReservationResult{}
		if err := it.ctx.Err(); err != nil {
			errs[i] = endedBeforeTurn(err, it)
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
		stop := context.AfterFunc(items[i].ctx, func() {
			if waiting.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	if err := c.D.PrepareReserve(ctx); err != nil {
		return nil, err
	}
	if len(live) == 1 {
		it := items[live[0]]
		it.res, errs[live[0]] = c.D.TakeSlots(ctx, nil, c.AuditArgs(it.r.Event), it.r.Slots)
		return errs, nil
	}
	audits := make([][]any, len(live))
	slots := make([][]gateway.Slot, len(live))
	for j, i := range live {
		audits[j], slots[j] = c.AuditArgs(items[i].r.Event), items[i].r.Slots
	}
	res, err := c.D.ReserveBatch(ctx, audits, slots)
	if err != nil {
		return nil, err
	}
	if len(res) != len(live) {
		return nil, gateway.Errorf(gateway.EInternal, "audit store answered %d of a batch of %d reservations", len(res), len(live))
	}
	for j, i := range live {
		items[i].res = res[j]
	}
	return errs, nil
}

// reserveIn is Reserve's work inside tx; audit is the prepared audit
// INSERT.
func (c *Core) reserveIn(ctx context.Context, tx *sqlx.Tx, r gateway.Reservation, audit *sql.Stmt) (gateway.ReservationResult, error) {
	if r.Claim != nil {
		prior, err := c.claimKey(ctx, tx, r.Claim)
		if err != nil || prior != nil {
			return gateway.ReservationResult{Prior: prior}, err
		}
	}
	if len(r.Slots) == 0 {
		var res gateway.ReservationResult
		err := tx.StmtContext(ctx, audit).QueryRowContext(ctx, c.AuditArgs(r.Event)...).Scan(&res.AuditID)
		return res, c.DriverError(err)
	}
	return c.D.TakeSlots(ctx, tx, c.AuditArgs(r.Event), r.Slots)
}

// insertKey inserts a key unless its workspace + task + tool + key exists.
// On PostgreSQL the unique index makes a concurrent claim of the same key
// wait for the first transaction and then do nothing; on SQLite claims run
// on the single write connection and never interleave. Either way exactly
// one caller owns a key.
const insertKey = `
INSERT INTO mcp_idempotency_keys (workspace_id, task_id, tool_name, key, input_hash, created_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (workspace_id, task_id, tool_name, key) DO NOTHING`

const selectKey = `
SELECT input_hash, result, created_at FROM mcp_idempotency_keys
WHERE workspace_id = ? AND task_id = ? AND tool_name = ? AND key = ?`

// claimKey claims rec in tx: nil when this call now owns the key, else the
// row claimed before, unchanged. ENotFound when rec's workspace does not
// exist.
func (c *Core) claimKey(ctx context.Context, tx *sqlx.Tx, rec *gateway.IdempotencyRecord) (*gateway.IdempotencyRecord, error) {
	res, err := tx.ExecContext(ctx, c.Q(insertKey), rec.WorkspaceID, rec.TaskID, rec.Tool, rec.Key, rec.InputHash, c.Time(Now()))
	if err != nil {
		return nil, c.Translate(err, Msgs{NotFound: WorkspaceNotFound(rec.WorkspaceID)})
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return nil, c.DriverError(err)
	}
	got := *rec
	var result sql.NullString
	var created Time
	err = tx.QueryRowxContext(ctx, c.Q(selectKey), rec.WorkspaceID, rec.TaskID, rec.Tool, rec.Key).
		Scan(&got.InputHash, &result, &created)
	if errors.Is(err, sql.ErrNoRows) { // released between the insert and the read
		return nil, gateway.Errorf(gateway.EConflict, "idempotency_key %q of %s changed while this call claimed it; retry", rec.Key, rec.Tool)
	}
	if err != nil {
		return nil, c.DriverError(err)
	}
	if result.Valid {
		got.Result = []byte(result.String)
	}
	got.CreatedAt = created.Time
	return &got, nil
}

// SaveIdempotencyResult implements pipeline.IdempotencyStore.
func (c *Core) SaveIdempotencyResult(ctx context.Context, rec *gateway.IdempotencyRecord) error {
	q := c.Q(`UPDATE mcp_idempotency_keys SET result = ?
WHERE workspace_id = ? AND task_id = ? AND tool_name = ? AND key = ?`)
	res, err := c.W.ExecContext(ctx, q, string(rec.Result), rec.WorkspaceID, rec.TaskID, rec.Tool, rec.Key)
	return c.ExpectOne(res, err, "idempotency_key "+rec.Key+" of "+rec.Tool+" is not claimed")
}

// ReleaseIdempotencyKey implements pipeline.IdempotencyStore.
func (c *Core) ReleaseIdempotencyKey(ctx context.Context, rec *gateway.IdempotencyRecord) error {
	q := c.Q(`DELETE FROM mcp_idempotency_keys
WHERE workspace_id = ? AND task_id = ? AND tool_name = ? AND key = ? AND result IS NULL`)
	_, err := c.W.ExecContext(ctx, q, rec.WorkspaceID, rec.TaskID, rec.Tool, rec.Key)
	return c.DriverError(err)
}

// DeleteEndedIdempotencyKeys implements pipeline.IdempotencyStore.
func (c *Core) DeleteEndedIdempotencyKeys(ctx context.Context, before time.Time) (int64, error) {
	const q = `DELETE FROM mcp_idempotency_keys WHERE EXISTS (
  SELECT 1 FROM tasks t
  WHERE t.workspace_id = mcp_idempotency_keys.workspace_id AND t.id = mcp_idempotency_keys.task_id
    AND t.status IN ('completed', 'failed', 'cancelled') AND t.updated_at <= ?)`
	return c.Delete(ctx, q, c.Time(before))
}
