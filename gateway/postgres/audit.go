package postgres

import (
	"context"
	"database/sql/driver"

	"github.com/lib/pq"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlcore"
)

// auditInsertValues are the audit row's parameters ($1…$23, in
// sqlcore.AuditInsertColumns order), typed so that they also stand in a
// SELECT list (reserveAndAudit).
const auditInsertValues = `$1::timestamptz, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text,
    $8::text, $9::text, $10::text, $11::text, $12::text, $13::text, $14::jsonb, $15::text,
    $16::bigint, $17::text, $18::jsonb, $19::text, $20::text, $21::text, $22::text, $23::text`

// insertAudit writes one audit_events row, open (a reservation's), and
// returns its id (sqlcore.Dialect.InsertAudit); recordAudit writes a
// finished one of kind $24 (sqlcore.Dialect.RecordAudit).
const (
	insertAudit = `INSERT INTO audit_events (` + sqlcore.AuditInsertColumns + `) VALUES (` + auditInsertValues + `) RETURNING id`
	recordAudit = `INSERT INTO audit_events (` + sqlcore.AuditInsertColumns + `, kind, open) VALUES (` + auditInsertValues + `, $24::text, false) RETURNING id`
)

// sealLease is sqlcore.Dialect.SealLease: the transaction-scoped advisory
// lock of the sealer, tried (another replica sealing now keeps it; this
// one skips the round), and a bound of 10 s on the transaction's idle
// time, after which PostgreSQL ends the session of a sealer that hangs
// mid-round, and with it the lock: another replica seals the next round.
// A replica that dies ends its session, and the lock, at once. The lock
// is named after the schema: advisory locks are the database's, and each
// schema (each gateway's store, each test's) has a chain of its own.
const sealLease = `SELECT pg_try_advisory_xact_lock(hashtext('mcpgate audit chain ' || current_schema()))
    AND set_config('idle_in_transaction_session_timeout', '10000', true) IS NOT NULL`

// sealRows is sqlcore.Dialect.SealRows: one INSERT for a round's seals,
// from three arrays (unnest reads them about a third faster than
// jsonb_array_elements read one JSON array of triples).
const sealRows = `INSERT INTO audit_seals (seq, id, hash)
SELECT * FROM unnest(?::bigint[], ?::bigint[], ?::text[])`

// sealVacuum is sqlcore.Dialect.SealVacuum. SKIP_LOCKED: while another
// vacuum (autovacuum's) holds the queue, this one is skipped rather than
// waited for. TRUNCATE false: giving the table's empty tail pages back
// takes a lock that the reservations' inserts into the queue would wait
// for; the pages are reused instead. sealVacuumAllowed is
// Dialect.SealVacuumAllowed: the table's owner (a member of its owning
// role) and a superuser may vacuum it. (PostgreSQL 17's MAINTAIN
// privilege is not asked for: such a role is told it may not, and the
// queue is left to autovacuum.)
const (
	sealVacuum        = `VACUUM (SKIP_LOCKED, TRUNCATE false) audit_unsealed`
	sealVacuumAllowed = `SELECT pg_has_role(relowner, 'USAGE') FROM pg_class WHERE oid = 'audit_unsealed'::regclass`
)

// finishAudits completes a batch of audit rows in one statement, which in
// autocommit is its own transaction: one round trip and one commit for
// the whole batch. It calls mcpgate_finish_audits (migration 00015) with
// parallel arrays (id, status, error class, latency, reason codes as JSON
// text, policy revision), so one prepared statement serves every batch
// size, and gets back the ids it found. The function updates one row at a
// time by primary key with a plan PL/pgSQL keeps; the UPDATE … FROM
// unnest(…) it replaces was planned again on every batch.
//
// The statement commits asynchronously: the function turns
// synchronous_commit off for its own transaction only (set_config(...,
// true)), so PostgreSQL answers once the rows are written (and visible to
// every session), without waiting for the WAL to reach the disk. The WAL
// writer flushes it within wal_writer_delay (200 ms by default; at most
// three times that), and the next synchronous commit of any session
// flushes it too. What a server crash in that window can lose is the
// final status and latency of the rows finished in it: those rows stay as
// the reservation wrote them, synchronously, before dispatch (status
// "allowed", latency 0). Every other write of the store, the reservation
// and RecordAudit's refused rows included, commits synchronously.
const finishAudits = `SELECT mcpgate_finish_audits($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[])`

// finishOneAudit is finishAudits for a batch of one row, the batch of
// every call that finishes while no other does (all of them at c=1): a
// primary-key UPDATE in plain SQL ($1 id, then status, error class,
// latency, reason codes as JSON text, policy revision; it closes the row,
// and never changes a sealed or claimed one, as the function does: it
// holds a KEY SHARE lock on the row's audit_unsealed entry, migration
// 00021), without the
// function's executor starts and array arguments. The materialised CTE
// turns synchronous_commit off for the statement's transaction, as
// mcpgate_finish_audits does: it runs before the UPDATE's row is
// returned, so before the commit, which is then asynchronous exactly as
// the batch's.
const finishOneAudit = `
WITH o AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true)),
u AS MATERIALIZED (SELECT id FROM audit_unsealed WHERE id = $1::bigint FOR KEY SHARE)
UPDATE audit_events a SET status = $2::text, error_class = $3::text, latency_us = $4::bigint,
    reason_codes = $5::jsonb, policy_revision = $6::text, open = false
FROM o, u WHERE a.id = u.id
RETURNING a.id`

// finishBatch is the store's sqlcore.FinishBatch (finishAudits; a lone row
// finishOne).
func (s *Store) finishBatch(ctx context.Context, evs []*gateway.AuditEvent) ([]bool, error) {
	if len(evs) == 1 {
		found, err := s.finishOne(ctx, evs[0])
		return []bool{found}, err
	}
	stmt, err := s.finish.Get(ctx, s.db, driverError)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(evs))
	statuses := make([]string, len(evs))
	classes := make([]string, len(evs))
	latencies := make([]int64, len(evs))
	reasons := make([]string, len(evs))
	revisions := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
		statuses[i], classes[i], latencies[i], reasons[i], revisions[i] = sqlcore.FinishArgs(ev)
	}
	var got pq.Int64Array
	err = stmt.QueryRowContext(ctx, pq.Array(ids), pq.Array(statuses), pq.Array(classes),
		pq.Array(latencies), pq.Array(reasons), pq.Array(revisions)).Scan(&got)
	if err != nil {
		return nil, driverError(err)
	}
	done := make(map[int64]bool, len(got))
	for _, id := range got {
		done[id] = true
	}
	found := make([]bool, len(evs))
	for i, ev := range evs {
		found[i] = done[ev.ID]
	}
	return found, nil
}

// finishOne runs finishOneAudit for ev (with queryRow) and reports
// whether its row exists.
func (s *Store) finishOne(ctx context.Context, ev *gateway.AuditEvent) (bool, error) {
	status, class, latency, reasons, revision := sqlcore.FinishArgs(ev)
	found, err := s.queryRow(ctx, finishOneAudit, []any{ev.ID, status, class, latency, reasons, revision}, make([]driver.Value, 1))
	return found, driverError(err)
}
