package postgres

import (
	"context"

	"github.com/lib/pq"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlcore"
)

// auditInsertValues are the audit row's parameters ($1…$22, in
// sqlcore.AuditInsertColumns order), typed so that they also stand in a
// SELECT list (reserveAndAudit).
const auditInsertValues = `$1::timestamptz, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text,
    $8::text, $9::text, $10::text, $11::text, $12::text, $13::text, $14::jsonb, $15::text,
    $16::bigint, $17::text, $18::jsonb, $19::text, $20::text, $21::text, $22::text`

// insertAudit writes one audit_events row and returns its id
// (sqlcore.Dialect.InsertAudit).
const insertAudit = `INSERT INTO audit_events (` + sqlcore.AuditInsertColumns + `) VALUES (` + auditInsertValues + `) RETURNING id`

// finishAudits completes a batch of audit rows in one statement, which in
// autocommit is its own transaction: one round trip and one commit for
// the whole batch. Its parameters are parallel arrays (id, status, error
// class, latency, reason codes as JSON text, policy revision), so one prepared statement
// serves every batch size.
//
// The statement commits asynchronously: set_config(..., true) turns
// synchronous_commit off for its own transaction only, so PostgreSQL
// answers once the rows are written (and visible to every session), without
// waiting for the WAL to reach the disk. The WAL writer flushes it within
// wal_writer_delay (200 ms by default; at most three times that), and the
// next synchronous commit of any session flushes it too. What a server
// crash in that window can lose is the final status and latency of the
// rows finished in it: those rows stay as the reservation wrote them,
// synchronously, before dispatch (status "allowed", latency 0). Every
// other write of the store, the reservation and RecordAudit's refused
// rows included, commits synchronously.
const finishAudits = `
WITH s AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true) AS sync)
UPDATE audit_events a SET status = v.status, error_class = v.error_class, latency_us = v.latency_us,
    reason_codes = v.reason_codes::jsonb, policy_revision = v.policy_revision
FROM s, unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[])
    AS v(id, status, error_class, latency_us, reason_codes, policy_revision)
WHERE a.id = v.id
RETURNING a.id`

// finishBatch is sqlcore.Dialect.FinishBatch (finishAudits).
func (s *Store) finishBatch(ctx context.Context, evs []*gateway.AuditEvent) ([]bool, error) {
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
	rows, err := stmt.QueryContext(ctx, pq.Array(ids), pq.Array(statuses), pq.Array(classes),
		pq.Array(latencies), pq.Array(reasons), pq.Array(revisions))
	if err != nil {
		return nil, translate(err, msgs{})
	}
	defer rows.Close()
	done := make(map[int64]bool, len(evs))
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, translate(err, msgs{})
		}
		done[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, msgs{})
	}
	found := make([]bool, len(evs))
	for i, ev := range evs {
		found[i] = done[ev.ID]
	}
	return found, nil
}
