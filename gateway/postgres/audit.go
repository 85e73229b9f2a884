package postgres

import "github.com/mcpgate/mcpgate/gateway/internal/sqlcore"

// auditInsertValues are the audit row's parameters ($1…$18, in
// sqlcore.AuditInsertColumns order), typed so that they also stand in a
// SELECT list (reserveAndAudit).
const auditInsertValues = `$1::timestamptz, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text,
    $8::text, $9::text, $10::text, $11::text, $12::text, $13::text, $14::jsonb, $15::text,
    $16::bigint, $17::text, $18::jsonb`

// insertAudit writes one audit_events row and returns its id
// (sqlcore.Dialect.InsertAudit).
const insertAudit = `INSERT INTO audit_events (` + sqlcore.AuditInsertColumns + `) VALUES (` + auditInsertValues + `) RETURNING id`
