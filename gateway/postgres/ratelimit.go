package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlcore"
)

// rateStatements are the hot-path statements of the rate-limit counters.
type rateStatements struct {
	reserveAudit prepared // reserveAndAudit
	reserveOne   prepared // reserveOneAndAudit
	reserveBatch prepared // reserveBatch
	// reserveFlowBatch is reserveFlowBatch.
	reserveFlowBatch prepared
}

func newRateStatements() *rateStatements {
	return &rateStatements{reserveAudit: prepared{Query: reserveAndAudit}, reserveOne: prepared{Query: reserveOneAndAudit},
		reserveBatch: prepared{Query: reserveBatch}, reserveFlowBatch: prepared{Query: reserveFlowBatch}}
}

func (r *rateStatements) close() error {
	return errors.Join(r.reserveAudit.Close(), r.reserveOne.Close(), r.reserveBatch.Close(), r.reserveFlowBatch.Close())
}

// reserveAndAudit takes a call's slots, all or nothing, with the function
// of migration 00006 (mcpgate_take_slots; since 00016 it locks the call's
// counter rows in the one global order first, and holds them until the
// transaction ends: a concurrent reservation of the same bucket, in this
// process or another replica, waits and then sees the committed count),
// and inserts the audit row ($1…$23), returning its id. At a full
// counter the function raises (fullSlotCode), and the whole statement
// rolls back: no slot, no counter row, no audit row. So the statement is
// atomic alone and runs in autocommit when there is no idempotency claim
// (Reserve). The CTE is materialised so the
// function runs exactly once, before the insert that depends on it.
const reserveAndAudit = `
WITH r AS MATERIALIZED (
    SELECT ` + takeSlotsCall + ` AS taken
)
` + insertAuditAfterSlots

// takeSlotsCall is reserveAndAudit's call of mcpgate_take_slots: the
// slots as slotArgs's arrays, $24…$29.
const takeSlotsCall = `mcpgate_take_slots($24::text[], $25::timestamptz[], $26::timestamptz[], $27::bigint[], $28::text[], $29::text[])`

// insertAuditAfterSlots inserts the audit row ($1…$23) once for each row
// of r (the slots taken), when the reservation is still within its
// deadline ($30, mcpgate_before), and returns its id.
const insertAuditAfterSlots = `INSERT INTO audit_events (` + sqlcore.AuditInsertColumns + `)
SELECT ` + auditInsertValues + ` FROM r WHERE mcpgate_before($30::timestamptz)
RETURNING id`

// reserveFlowAndAudit is reserveAndAudit for a reservation that records
// in a flow session (gateway.Reservation.Flow) and claims no key: one
// statement, in autocommit its own transaction, in the order of
// docs/architecture.md "Flow rules and their order" (migration 00026).
// mcpgate_lock_flow upserts the flow row ($31 key, $32 workspace, $33
// task; updated at $1, the call's time), which locks it before any
// counter, and raises flowChangedCode when the row holds another number
// of labels than $34 (FlowRecord.Seen); then the slots and the audit row
// as reserveAndAudit; then mcpgate_record_flow adds the labels $35 the
// row lacks, each with the tool $36, the audit id and the time $37 (as
// encoding/json writes it), and the tool unless listed or the list holds
// $38 (gateway.MaxFlowTools), and writes the row only when that changed
// it. A raise anywhere (flow changed, a full slot, the deadline) rolls
// the whole statement back: nothing written. Each CTE reads the one
// before it, so they run in this order.
const reserveFlowAndAudit = `
WITH f AS MATERIALIZED (
    SELECT mcpgate_lock_flow($31::text, $32::text, $33::text, $1::timestamptz, $34::integer) AS locked
), r AS MATERIALIZED (
    SELECT ` + takeSlotsCall + ` AS taken FROM f WHERE f.locked
), a AS (
` + insertAuditAfterSlots + `
)
SELECT mcpgate_record_flow($31::text, a.id, $35::text[], $36::text, $37::text, $38::integer) FROM a`

// flowChangedCode is the SQLSTATE mcpgate_lock_flow raises when the flow
// row holds another number of labels than the call was decided on
// (migration 00026): the reservation wrote nothing (FlowChanged).
const flowChangedCode = "MGFL1"

// reserveOneAndAudit is reserveAndAudit for a call of one slot, in plain
// SQL: no PL/pgSQL function runs, so PostgreSQL spends no executor start
// per statement inside one, and the arguments are scalars rather than
// arrays to parse ($24 key, $25 window, $26 expiry or NULL, $27 limit, $28
// and $29 the task's workspace and id or NULL). The upsert takes the
// counter's row lock (one row: no order to keep) and bumps the count only
// when it is below the limit ($27 >= 1, else reserveAndAudit runs); the
// audit row is inserted only when it did. So a full counter leaves the
// statement without a row and with nothing written (a counter it would
// create starts at 1, within the limit), and takeSlots then runs
// reserveAndAudit for the full counter's count (fullSlotCode), or, if
// the counter has room again by then, for the reservation. The counter
// columns are written as mcpgate_take_slots writes them.
const reserveOneAndAudit = `
WITH s AS (
    INSERT INTO rate_limit_counters AS c (bucket_key, window_start, count, expires_at, task_workspace_id, task_id)
    VALUES ($24::text, $25::timestamptz, 1, $26::timestamptz, $28::text, $29::text)
    ON CONFLICT (bucket_key, window_start) DO UPDATE SET count = c.count + 1,
        task_workspace_id = coalesce(c.task_workspace_id, excluded.task_workspace_id),
        task_id = coalesce(c.task_id, excluded.task_id)
    WHERE c.count < $27::bigint
    RETURNING 1
)
INSERT INTO audit_events (` + sqlcore.AuditInsertColumns + `)
SELECT ` + auditInsertValues + ` FROM s WHERE mcpgate_before($30::timestamptz)
RETURNING id`

// reserveBatch takes several calls' reservations in one statement, in
// autocommit its own transaction (mcpgate_reserve_batch, migration 00015;
// since 00016 it locks the union of the calls' counters in the global
// order before it decides any call, so two batches cannot deadlock; since
// 00025 it takes the trace ids too): $1…$23 are the audit columns of the
// calls as arrays, $24 each call's
// number of slots, $25…$30 the slots of all calls in mcpgate_take_slots's
// arrays. One row per call, in order: the audit id, or NULL with the full
// slot and its count before the call.
const reserveBatch = `
SELECT audit_id, full_slot, used, false FROM mcpgate_reserve_batch(` + batchArgs + `)
WHERE mcpgate_before($31::timestamptz)`

// batchArgs are the arguments of reserveBatch and reserveFlowBatch
// before their flows: the calls' audit columns and slots, $1…$30.
const batchArgs = `$1::timestamptz[], $2::text[], $3::text[],
    $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[],
    $12::text[], $13::text[], $14::text[], $15::text[], $16::bigint[], $17::text[], $18::text[],
    $19::text[], $20::text[], $21::text[], $22::text[], $23::text[],
    $24::integer[], $25::text[], $26::timestamptz[], $27::timestamptz[], $28::bigint[], $29::text[], $30::text[]`

// reserveFlowBatch is reserveBatch for a batch in which some calls
// record in a flow session, each of another flow key
// (mcpgate_reserve_flow_batch, migration 00026): after reserveBatch's
// arguments, each call's flow key ($31, NULL for a call without a flow
// record), workspace and task ($32, $33), the number of labels it was
// decided on ($34), its number of labels read ($35), the labels of all
// calls one call after another ($36), its tool and the time of its reads
// as encoding/json writes it ($37, $38), and gateway.MaxFlowTools ($39).
// The function locks the calls' flow rows in key order before any
// counter, passes the calls whose row holds the labels they were decided
// on to mcpgate_reserve_batch, and records each written call in its row,
// as reserveFlowAndAudit does for one. One row per call, in order:
// reserveBatch's, and whether the call's flow changed (nothing written).
const reserveFlowBatch = `
SELECT audit_id, full_slot, used, flow_changed FROM mcpgate_reserve_flow_batch(` + batchArgs + `,
    $31::text[], $32::text[], $33::text[], $34::integer[], $35::integer[], $36::text[], $37::text[], $38::text[],
    $39::integer)
WHERE mcpgate_before($40::timestamptz)`

// auditColumnCount is the number of audit columns (sqlcore.AuditArgs).
const auditColumnCount = sqlcore.AuditColumnCount

// lateCode is the SQLSTATE mcpgate_before raises (migration 00018): the
// reservation reached PostgreSQL past its deadline and wrote nothing
// (translate: EUnavailable).
const lateCode = "MGDL1"

// commitMargin is how long before the context's deadline a reservation
// must have run in PostgreSQL (mcpgate_before): the reply's way back, so
// that one that ran in time is not refused by the client meanwhile. The
// clocks of the gateway and PostgreSQL are compared: keep them in sync.
const commitMargin = 50 * time.Millisecond

// commitDeadline is the time past which a reservation of ctx must not
// commit (mcpgate_before): ctx's deadline less commitMargin, or, without
// one, the operation timeout after which the connection gives up.
func (s *Store) commitDeadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d.Add(-commitMargin).UTC()
	}
	return time.Now().Add(s.opTimeout - commitMargin).UTC()
}

// fullSlotCode is the SQLSTATE mcpgate_take_slots raises at a full
// counter; its DETAIL is "<1-based index> <count before this call>".
const fullSlotCode = "MGRL1"

// prepareReserve prepares reserveAndAudit and reserveOneAndAudit on the
// pool, before a reservation's transaction begins (sqlcore.Core.ReserveTx).
func (s *Store) prepareReserve(ctx context.Context) error {
	if _, err := s.rate.reserveAudit.Get(ctx, s.db, driverError); err != nil {
		return err
	}
	_, err := s.rate.reserveOne.Get(ctx, s.db, driverError)
	return err
}

// takeSlots is the store's sqlcore.TakeSlots: one statement
// (reserveAndAudit; for a call of one slot reserveOneAndAudit, and
// reserveAndAudit only when that slot was full) takes every slot and
// inserts the audit row. Without a claim tx is nil and the statement is
// its own transaction, so an allowed call costs one round trip however
// many buckets it has; with a claim it runs in the claim's transaction.
func (s *Store) takeSlots(ctx context.Context, tx *sqlx.Tx, audit []any, slots []gateway.Slot) (gateway.ReservationResult, error) {
	if len(slots) == 1 && slots[0].Limit >= 1 {
		res, err := s.takeOneSlot(ctx, tx, audit, slots[0])
		if err != nil || res.AuditID != 0 {
			return res, err
		}
	}
	stmt, err := s.rate.reserveAudit.Get(ctx, s.db, driverError)
	if err != nil {
		return gateway.ReservationResult{}, err
	}
	if tx != nil {
		stmt = tx.StmtContext(ctx, stmt)
	}
	var res gateway.ReservationResult
	args := append(append(audit[:len(audit):len(audit)], slotArgs(slots)...), s.commitDeadline(ctx))
	err = stmt.QueryRowContext(ctx, args...).Scan(&res.AuditID)
	// In autocommit the statement is all its transaction: one aborted to
	// break a deadlock wrote nothing and runs again (maxDeadlockAttempts).
	for attempt := 1; tx == nil && deadlocked(err) && attempt < maxDeadlockAttempts; attempt++ {
		err = stmt.QueryRowContext(ctx, args...).Scan(&res.AuditID)
	}
	if pe := pq.As(err); pe != nil && pe.Code == fullSlotCode {
		return fullSlot(pe, len(slots))
	}

	if err != nil {
		return gateway.ReservationResult{}, driverError(err)
	}
	return res, nil
}

// takeOneSlot runs reserveOneAndAudit for a call of one slot (q.Limit >=
// 1): the audit row's id, or a zero result when the counter was full and
// nothing was written. Without a claim (tx nil) the statement is its own
// transaction, sent with queryRow.
func (s *Store) takeOneSlot(ctx context.Context, tx *sqlx.Tx, audit []any, q gateway.Slot) (gateway.ReservationResult, error) {
	var expires any
	if !q.Expires.IsZero() {
		expires = q.Expires.UTC()
	}
	var ws, task any
	if q.TaskID != "" {
		ws, task = q.WorkspaceID, q.TaskID
	}
	args := append(audit[:len(audit):len(audit)], q.Key, q.Window.UTC(), expires, q.Limit, ws, task, s.commitDeadline(ctx))
	var res gateway.ReservationResult
	if tx != nil {
		stmt, err := s.rate.reserveOne.Get(ctx, s.db, driverError)
		if err != nil {
			return res, err
		}
		err = tx.StmtContext(ctx, stmt).QueryRowContext(ctx, args...).Scan(&res.AuditID)
		if isNoRows(err) {
			return res, nil
		}
		return res, driverError(err)
	}
	row := make([]driver.Value, 1)
	found, err := s.queryRow(ctx, reserveOneAndAudit, args, row)
	// Alone in autocommit the statement is its whole transaction: one
	// aborted to break a deadlock wrote nothing and runs again.
	for attempt := 1; deadlocked(err) && attempt < maxDeadlockAttempts; attempt++ {
		found, err = s.queryRow(ctx, reserveOneAndAudit, args, row)
	}
	if err != nil || !found {
		return res, driverError(err)
	}
	id, ok := row[0].(int64)
	if !ok {
		return res, gateway.Errorf(gateway.EInternal, "the reservation returned an audit id of type %T", row[0])
	}
	res.AuditID = id
	return res, nil
}

// batchFlow is a flow record of a reservation of a batch (reserveBatch)
// and the time of the reads it adds (flowReadTime).
type batchFlow struct {
	rec *gateway.FlowRecord
	at  string
}

// reserveBatch runs the reserveBatch statement for the reservations of
// one group commit (reserveGroup): audits[i] are the AuditArgs of
// reservation i, slots[i] its slots (at least one). With flows (one per
// reservation, each of another key where rec is set) it runs
// reserveFlowBatch instead. Each reservation is all or nothing on its
// own, and a later one sees the slots of the earlier ones; one result
// per reservation, in order. The audit arguments of the calls go column
// by column as arrays, and their slots one call after another.
func (s *Store) reserveBatch(ctx context.Context, audits [][]any, slots [][]gateway.Slot, flows []batchFlow) ([]gateway.ReservationResult, error) {
	prep := &s.rate.reserveBatch
	if flows != nil {
		prep = &s.rate.reserveFlowBatch
	}
	stmt, err := prep.Get(ctx, s.db, driverError)
	if err != nil {
		return nil, err
	}
	args := make([]any, 0, auditColumnCount+17)
	for col := range auditColumnCount {
		vals := make([]any, len(audits))
		for i, a := range audits {
			if len(a) != auditColumnCount {
				return nil, gateway.Errorf(gateway.EInternal, "audit row of %d columns, want %d", len(a), auditColumnCount)
			}
			vals[i] = a[col]
		}
		args = append(args, pq.GenericArray{A: vals})
	}
	counts := make([]int64, len(slots))
	var all []gateway.Slot
	for i, sl := range slots {
		counts[i] = int64(len(sl))
		all = append(all, sl...)
	}
	args = append(append(args, pq.Array(counts)), slotArgs(all)...)
	if flows != nil {
		args = append(args, flowArgs(flows)...)
	}
	args = append(args, s.commitDeadline(ctx))
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, driverError(err)
	}
	defer rows.Close()
	out := make([]gateway.ReservationResult, 0, len(audits))
	for rows.Next() {
		var id sql.NullInt64
		var res gateway.ReservationResult
		if err := rows.Scan(&id, &res.Full, &res.Used, &res.FlowChanged); err != nil {
			return nil, driverError(err)
		}
		i := len(out)
		switch {
		case id.Valid:
			res = gateway.ReservationResult{AuditID: id.Int64}
		case res.FlowChanged:
			res = gateway.ReservationResult{FlowChanged: true}
		case i >= len(slots) || res.Full < 1 || res.Full > len(slots[i]):
			return nil, gateway.Errorf(gateway.EInternal,
				"mcpgate_reserve_batch reported call %d of %d full at slot %d", i+1, len(slots), res.Full)
		}
		out = append(out, res)
	}
	if err := rows.Err(); err != nil {
		return nil, driverError(err)
	}
	return out, nil
}

// flowArgs are reserveFlowBatch's arrays of flows ($31…$39): a call
// without a flow record has a NULL key, and neither labels nor tool.
func flowArgs(flows []batchFlow) []any {
	keys := make([]sql.NullString, len(flows))
	workspaces := make([]sql.NullString, len(flows))
	tasks := make([]sql.NullString, len(flows))
	seens := make([]int64, len(flows))
	counts := make([]int64, len(flows))
	var labels []string
	tools := make([]sql.NullString, len(flows))
	times := make([]sql.NullString, len(flows))
	for i, f := range flows {
		if f.rec == nil {
			continue
		}
		keys[i] = sql.NullString{String: f.rec.Key, Valid: true}
		workspaces[i] = sql.NullString{String: f.rec.WorkspaceID, Valid: true}
		tasks[i] = sql.NullString{String: f.rec.TaskID, Valid: true}
		seens[i], counts[i] = int64(f.rec.Seen), int64(len(f.rec.Reads))
		labels = append(labels, f.rec.Reads...)
		tools[i] = sql.NullString{String: f.rec.Tool, Valid: true}
		times[i] = sql.NullString{String: f.at, Valid: true}
	}
	return []any{pq.GenericArray{A: keys}, pq.GenericArray{A: workspaces}, pq.GenericArray{A: tasks},
		pq.Array(seens), pq.Array(counts), pq.StringArray(labels), pq.GenericArray{A: tools},
		pq.GenericArray{A: times}, int64(gateway.MaxFlowTools)}
}

// flowReadTime is the time of the reads a reservation of ev adds to its
// flow row (gateway.FlowRead.Time), as sqlcore's recordFlow keeps it (UTC,
// to the microsecond) and written as encoding/json writes a time.Time,
// so that decodeFlow reads the rows of either alike.
func flowReadTime(ev *gateway.AuditEvent) string {
	return ev.Time.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
}

// maxDeadlockAttempts is how many times takeSlots runs its statement in
// autocommit when PostgreSQL aborts it to break a deadlock. Since
// migration 00016 the gateway's own transactions cannot deadlock on
// counter rows (each locks them in one global order); the retry stays as a
// backstop for a transaction outside that order that locks counter rows
// (an operator's SQL, or a replica of a release older than 00006 still
// calling mcpgate_reserve_counts during a rolling upgrade).
const maxDeadlockAttempts = 3

// deadlocked reports whether err is PostgreSQL aborting a transaction to
// break a deadlock (SQLSTATE 40P01): Reserve and takeSlots run it again.
func deadlocked(err error) bool {
	pe := pq.As(err)
	return pe != nil && pe.Code == pqerror.TRDeadlockDetected
}

// fullSlot reads the full counter's index and count from the DETAIL of
// mcpgate_take_slots's error.
func fullSlot(pe *pq.Error, slots int) (gateway.ReservationResult, error) {
	var res gateway.ReservationResult
	if _, err := fmt.Sscanf(pe.Detail, "%d %d", &res.Full, &res.Used); err != nil || res.Full < 1 || res.Full > slots {
		return gateway.ReservationResult{}, gateway.Errorf(gateway.EInternal,
			"mcpgate_take_slots reported a full counter as %q for %d slots", pe.Detail, slots)
	}
	return res, nil
}

// slotArgs are the six parallel arrays of mcpgate_reserve_counts; times
// travel as RFC 3339 text (lib/pq has no timestamptz array type), a window
// that never ends and the task of a windowed counter as NULL.
func slotArgs(slots []gateway.Slot) []any {
	keys := make([]string, len(slots))
	windows := make([]string, len(slots))
	expires := make([]sql.NullString, len(slots))
	limits := make([]int64, len(slots))
	workspaces := make([]sql.NullString, len(slots))
	tasks := make([]sql.NullString, len(slots))
	for i, q := range slots {
		keys[i], limits[i] = q.Key, q.Limit
		windows[i] = q.Window.UTC().Format(time.RFC3339Nano)
		if !q.Expires.IsZero() {
			expires[i] = sql.NullString{String: q.Expires.UTC().Format(time.RFC3339Nano), Valid: true}
		}
		if q.TaskID != "" {
			workspaces[i] = sql.NullString{String: q.WorkspaceID, Valid: true}
			tasks[i] = sql.NullString{String: q.TaskID, Valid: true}
		}
	}
	return []any{pq.Array(keys), pq.Array(windows), pq.GenericArray{A: expires}, pq.Array(limits),
		pq.GenericArray{A: workspaces}, pq.GenericArray{A: tasks}}
}

// deleteEndedTaskCounts is sqlcore.Dialect.DeleteEndedTaskCounts. Like
// every statement that locks several counter rows, it locks them in the
// global order of migration 00016 (lockedCounters).
const deleteEndedTaskCounts = `DELETE FROM rate_limit_counters c USING (
    SELECT c.bucket_key, c.window_start FROM rate_limit_counters c JOIN tasks t
        ON t.workspace_id = c.task_workspace_id AND t.id = c.task_id
    WHERE c.task_id IS NOT NULL AND t.status IN ('completed', 'failed', 'cancelled') AND t.updated_at <= ?
    ` + lockedCounters + `) d
WHERE c.bucket_key = d.bucket_key AND c.window_start = d.window_start`

// deleteExpiredCounts is sqlcore.Dialect.DeleteExpiredCounts; it locks the
// rows in the global order of migration 00016 (lockedCounters).
const deleteExpiredCounts = `DELETE FROM rate_limit_counters c USING (
    SELECT c.bucket_key, c.window_start FROM rate_limit_counters c WHERE c.expires_at <= ?
    ` + lockedCounters + `) d
WHERE c.bucket_key = d.bucket_key AND c.window_start = d.window_start`

// lockedCounters ends a SELECT of counter rows (alias c) that a DELETE
// then removes: it locks them in the one order every transaction that
// locks several counters follows (migration 00016: bucket_key in byte
// order, then window_start), so the sweep cannot deadlock with a
// reservation that is taking rows it deletes. PostgreSQL sorts before it
// locks (LockRows runs above the Sort).
const lockedCounters = `ORDER BY c.bucket_key COLLATE "C", c.window_start FOR UPDATE OF c`
