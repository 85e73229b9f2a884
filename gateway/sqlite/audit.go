package sqlite

import "github.com/mcpgate/mcpgate/gateway/internal/sqlcore"

// insertAudit writes one audit_events row and returns its id
// (sqlcore.Dialect.InsertAudit).
const insertAudit = `INSERT INTO audit_events (` + sqlcore.AuditInsertColumns + `)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
RETURNING id`
