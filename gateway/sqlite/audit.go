package sqlite

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlcore"
)

// insertAudit writes one audit_events row, open (a reservation's), and
// returns its id (sqlcore.Dialect.InsertAudit); recordAudit writes a
// finished one of the kind of its last parameter
// (sqlcore.Dialect.RecordAudit).
const (
	insertAudit = `INSERT INTO audit_events (` + sqlcore.AuditInsertColumns + `)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
RETURNING id`
	recordAudit = `INSERT INTO audit_events (` + sqlcore.AuditInsertColumns + `, kind, open)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)
RETURNING id`
)

// finishAudit completes one audit row and closes it, unless it is sealed
// (its audit_unsealed entry is gone: a row sealed open keeps what was
// sealed); prepared once on the write
// connection, finishBatch runs it once per row.
const finishAudit = `UPDATE audit_events SET status = ?, error_class = ?, latency_us = ?, reason_codes = ?, policy_revision = ?, open = 0
WHERE id = ? AND EXISTS (SELECT 1 FROM audit_unsealed u WHERE u.id = audit_events.id)`

// finishBatch is the store's sqlcore.FinishBatch: one finishAudit per row, in
// one transaction on the write connection when there are several (one
// WAL commit for the batch), on its own otherwise.
func (s *Store) finishBatch(ctx context.Context, evs []*gateway.AuditEvent) (found []bool, err error) {
	stmt, err := s.finish.Get(ctx, s.w, driverError)
	if err != nil {
		return nil, err
	}
	var tx *sqlx.Tx
	if len(evs) > 1 {
		if tx, err = s.w.BeginTxx(ctx, nil); err != nil {
			return nil, driverError(err)
		}
		defer func() {
			if err != nil {
				_ = tx.Rollback()
			}
		}()
		stmt = tx.StmtContext(ctx, stmt)
		// Inside the transaction the UPDATEs wait for nobody (BEGIN
		// IMMEDIATE holds the write lock): without a deadline on them the
		// driver starts no goroutine per statement to interrupt it
		// (Core.reserveBatch does the same); BEGIN and COMMIT keep ctx.
		ctx = context.WithoutCancel(ctx)
	}
	found = make([]bool, len(evs))
	for i, ev := range evs {
		status, class, latency, reasons, revision := sqlcore.FinishArgs(ev)
		res, err := stmt.ExecContext(ctx, status, class, latency, reasons, revision, ev.ID)
		if err != nil {
			return nil, driverError(err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, driverError(err)
		}
		found[i] = n > 0
	}
	if tx != nil {
		if err = tx.Commit(); err != nil {
			return nil, driverError(err)
		}
	}
	return found, nil
}
