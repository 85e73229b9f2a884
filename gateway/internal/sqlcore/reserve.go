package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
)

// TakeSlots is a store's own reservation statement: in tx, take one call
// of each of slots in order and insert the audit row whose AuditArgs are
// audit, stopping at the first full slot. It returns the row's id, or the
// full slot (1-based) with its count before this call; ReserveTx and
// ReserveSavepoints roll the reservation back then. A store passes it to
// the core's reservation helpers from its own Reserve.
type TakeSlots func(ctx context.Context, tx *sqlx.Tx, audit []any, slots []gateway.Slot) (gateway.ReservationResult, error)

// InsertAudit inserts ev's row (the prepared Dialect.InsertAudit) and
// stores its id in *id (ev.ID for RecordAudit; a reservation's result for
// a reservation without slots or claim, which leaves ev.ID as it was).
func (c *Core) InsertAudit(ctx context.Context, ev *gateway.AuditEvent, id *int64) error {
	stmt, err := c.Audit.Get(ctx, c.W, c.DriverError)
	if err != nil {
		return err
	}
	return c.DriverError(stmt.QueryRowContext(ctx, c.AuditArgs(ev)...).Scan(id))
}

// ReserveTx carries out r in a transaction of its own on W: BEGIN, the
// claim when r.Claim is set, take (the store's reservation statement) or,
// without slots, the audit INSERT alone, and COMMIT; a key claimed before
// or a full slot rolls it back, so nothing of it is written. The store
// prepares take's statements before (preparing takes a connection from
// the pool, which inside the transaction could wait for ever for the one
// the transaction holds); ReserveTx prepares the audit INSERT. A commit
// whose outcome is unknown (connection lost during COMMIT) is reported
// as EUnavailable: the call is refused, and the slots may stay taken —
// the limiter errs on the side of fewer calls.
func (c *Core) ReserveTx(ctx context.Context, r gateway.Reservation, take TakeSlots) (gateway.ReservationResult, error) {
	audit, err := c.Audit.Get(ctx, c.W, c.DriverError)
	if err == nil {
		err = c.prepareFlow(ctx, r)
	}
	if err != nil {
		return gateway.ReservationResult{}, err
	}
	tx, err := c.W.BeginTxx(ctx, nil)
	if err != nil {
		return gateway.ReservationResult{}, c.DriverError(err)
	}
	res, err := c.reserveIn(ctx, tx, r, audit, take)
	if err != nil || res.AuditID == 0 {
		_ = tx.Rollback()
		return res, err
	}
	if err := tx.Commit(); err != nil {
		return gateway.ReservationResult{}, c.DriverError(err)
	}
	return res, nil
}

// MaxReserveBatch is the most reservations one group commit of a
// store's Reserve holds (NewReserver).
const MaxReserveBatch = 64

// ReserveItem is one Reserve call in a group commit: the caller's Ctx (a
// call whose request ended before its turn is not written), its
// reservation R and, once its batch has committed, its result Res.
type ReserveItem struct {
	Ctx context.Context
	R   gateway.Reservation
	Res gateway.ReservationResult
}

// NewReserver returns the group commit of a store's Reserve: flush
// writes a batch of at most MaxReserveBatch reservations
// (ReserveSavepoints, or a statement of the store's own) and returns each
// one's error, or the error of the whole batch.
func NewReserver(flush func(ctx context.Context, items []*ReserveItem) ([]error, error)) *Group[*ReserveItem] {
	g := newGroup(MaxReserveBatch, flush,
		func(it *ReserveItem) string { return it.R.Event.Tool },
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
// group commit (ReserveSavepoints).
const savepoint = "mcpgate_reservation"

// ReserveSavepoints writes a batch of a store's group commit of Reserve
// (NewReserver), for a database with a single writer (SQLite), where
// reservations queue for the write connection anyway and each commit
// costs a WAL write: one BEGIN (IMMEDIATE on SQLite) and one COMMIT for
// the whole batch, each reservation inside a savepoint of its own, so that a full slot, a key
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
func (c *Core) ReserveSavepoints(ctx context.Context, items []*ReserveItem, take TakeSlots) ([]error, error) {
	// Prepare before BEGIN: see ReserveTx.
	audit, err := c.Audit.Get(ctx, c.W, c.DriverError)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		if err := c.prepareFlow(ctx, it.R); err != nil {
			return nil, err
		}
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
		it.Res = gateway.ReservationResult{}
		if err := it.Ctx.Err(); err != nil {
			errs[i] = EndedBeforeTurn(err, it)
			continue
		}
		if !lone {
			if _, err := tx.ExecContext(sctx, "SAVEPOINT "+savepoint); err != nil {
				_ = tx.Rollback()
				return nil, c.DriverError(err)
			}
		}
		res, err := c.reserveIn(sctx, tx, it.R, audit, take)
		it.Res, errs[i] = res, err
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

// EndedBeforeTurn is the error of a reservation of a group commit whose
// request ended (err) before its turn: it is not written.
func EndedBeforeTurn(err error, it *ReserveItem) error {
	return gateway.Wrap(gateway.EUnavailable, err,
		"the request ended before the audit store reached its reservation; the call to "+it.R.Event.Tool+" was neither recorded nor counted")
}

// reserveIn is a reservation's work inside tx; audit is the prepared
// audit INSERT, take the store's reservation statement.
//
// With r.Flow it first locks the flow key's history (lockFlowIn, before
// any counter, so that reservations take their locks in one order) and
// stops with FlowChanged when the key read new labels since the call was
// decided; once the audit row is in, it records the call there
// (recordFlow). So of a read and an egress of one session, whichever
// locks the key second sees what the first recorded (docs/architecture.md,
// "Flow rules and their order").
func (c *Core) reserveIn(ctx context.Context, tx *sqlx.Tx, r gateway.Reservation, audit *sql.Stmt, take TakeSlots) (gateway.ReservationResult, error) {
	var flow *gateway.FlowSession
	if r.Flow != nil {
		s, changed, err := c.lockFlowIn(ctx, tx, r)
		if err != nil || changed {
			return gateway.ReservationResult{FlowChanged: changed}, err
		}
		flow = s
	}
	if r.Claim != nil {
		prior, err := c.claimKey(ctx, tx, r.Claim)
		if err != nil || prior != nil {
			return gateway.ReservationResult{Prior: prior}, err
		}
	}
	var res gateway.ReservationResult
	var err error
	if len(r.Slots) == 0 {
		err = c.DriverError(tx.StmtContext(ctx, audit).QueryRowContext(ctx, c.AuditArgs(r.Event)...).Scan(&res.AuditID))
	} else {
		res, err = take(ctx, tx, c.AuditArgs(r.Event), r.Slots)
	}
	if err != nil || res.AuditID == 0 || flow == nil {
		return res, err
	}
	return res, c.recordFlow(ctx, tx, r, flow, res.AuditID)
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
