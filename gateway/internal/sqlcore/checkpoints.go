package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auditchain"
)

// sealedRows is the sealed rows after a seq (the first ?), in seq order,
// at most the second ?.
var sealedRows = `SELECT ` + auditColumns + ` FROM audit_seals s JOIN audit_events e ON e.id = s.id WHERE s.seq > ? ORDER BY s.seq LIMIT ?`

// AuditChainHead returns the chain head: the last sealed seq and its
// hash (store.AuditChain).
func (c *Core) AuditChainHead(ctx context.Context) (auditchain.Head, error) {
	var head auditchain.Head
	var hash string
	if err := c.R.QueryRowxContext(ctx, `SELECT seq, hash FROM audit_chain WHERE id = 1`).Scan(&head.Seq, &hash); err != nil {
		return head, c.DriverError(err)
	}
	h, err := auditchain.ParseHash(hash)
	if err != nil {
		return head, gateway.Wrap(gateway.EInternal, err, "the audit chain head is unreadable; run mcpgate audit verify")
	}
	head.Hash = h
	return head, nil
}

// SealedAuditRows returns at most limit sealed rows after seq after, in
// seq order, with their seq and hash (store.AuditChain).
func (c *Core) SealedAuditRows(ctx context.Context, after int64, limit int) ([]gateway.AuditEvent, error) {
	rows, err := c.R.QueryxContext(ctx, c.Q(sealedRows), after, limit)
	if err != nil {
		return nil, c.DriverError(err)
	}
	evs, err := scanEvents(rows, limit, true)
	return evs, c.DriverError(err)
}

// checkpointRow is an audit_checkpoints row.
type checkpointRow struct {
	Seq       int64  `db:"seq"`
	Hash      string `db:"hash"`
	Time      Time   `db:"time"`
	KeyID     string `db:"key_id"`
	Signature string `db:"signature"`
}

func (r *checkpointRow) checkpoint() (auditchain.Checkpoint, error) {
	cp := auditchain.Checkpoint{Seq: r.Seq, Time: r.Time.Time, KeyID: r.KeyID}
	h, err := auditchain.ParseHash(r.Hash)
	if err == nil {
		cp.Hash = h
		err = cp.ParseSignature(r.Signature)
	}
	if err != nil {
		return cp, gateway.Wrap(gateway.EInternal, err, "an audit checkpoint is unreadable; run mcpgate audit verify")
	}
	return cp, nil
}

const checkpointColumns = `seq, hash, time, key_id, signature`

// AddAuditCheckpoint stores cp unless a checkpoint of its seq exists; it
// reports whether it stored cp (store.AuditChain).
func (c *Core) AddAuditCheckpoint(ctx context.Context, cp auditchain.Checkpoint) (bool, error) {
	res, err := c.W.ExecContext(ctx, c.Q(`INSERT INTO audit_checkpoints (`+checkpointColumns+`) VALUES (?, ?, ?, ?, ?) ON CONFLICT (seq) DO NOTHING`),
		cp.Seq, cp.Hash.String(), c.Time(cp.Time), cp.KeyID, cp.SignatureText())
	if err != nil {
		return false, c.DriverError(err)
	}
	n, err := res.RowsAffected()
	return n == 1, c.DriverError(err)
}

// LatestAuditCheckpoint returns the checkpoint of the highest seq whose
// time is at or before before; false when there is none
// (store.AuditChain).
func (c *Core) LatestAuditCheckpoint(ctx context.Context, before time.Time) (auditchain.Checkpoint, bool, error) {
	var r checkpointRow
	err := c.R.QueryRowxContext(ctx, c.Q(`SELECT `+checkpointColumns+` FROM audit_checkpoints WHERE time <= ? ORDER BY seq DESC LIMIT 1`), c.Time(before)).StructScan(&r)
	if errors.Is(err, sql.ErrNoRows) {
		return auditchain.Checkpoint{}, false, nil
	}
	if err != nil {
		return auditchain.Checkpoint{}, false, c.DriverError(err)
	}
	cp, err := r.checkpoint()
	return cp, err == nil, err
}

// AuditCheckpoints returns the checkpoints of seq after < seq <= through,
// in seq order (store.AuditChain).
func (c *Core) AuditCheckpoints(ctx context.Context, after, through int64) ([]auditchain.Checkpoint, error) {
	var rows []checkpointRow
	if err := c.R.SelectContext(ctx, &rows, c.Q(`SELECT `+checkpointColumns+` FROM audit_checkpoints WHERE seq > ? AND seq <= ? ORDER BY seq`), after, through); err != nil {
		return nil, c.DriverError(err)
	}
	out := make([]auditchain.Checkpoint, len(rows))
	for i := range rows {
		cp, err := rows[i].checkpoint()
		if err != nil {
			return nil, err
		}
		out[i] = cp
	}
	return out, nil
}

// pruneBatch is how many sealed rows one transaction of PruneAudit
// deletes: a short hold of SQLite's one writer, a bounded statement on
// PostgreSQL.
const pruneBatch = 5000

// PruneAudit deletes the sealed audit rows up to the last checkpoint whose
// time is at or before before (whole ranges: every row up to that seq),
// with their seals and the checkpoints before it; the checkpoint itself
// stays, the anchor from which the rest verifies (store.AuditChain). It
// returns the anchor's seq (0 when no checkpoint is that old: nothing is
// deleted) and how many audit rows it deleted, in transactions of at most
// pruneBatch rows.
func (c *Core) PruneAudit(ctx context.Context, before time.Time) (anchor, deleted int64, err error) {
	cp, ok, err := c.LatestAuditCheckpoint(ctx, before)
	if err != nil || !ok {
		return 0, 0, err
	}
	for {
		var ids []int64
		var n int64
		err := c.InTx(ctx, func(tx *sqlx.Tx) error {
			if err := tx.SelectContext(ctx, &ids, c.Q(`SELECT id FROM audit_seals WHERE seq <= ? ORDER BY seq LIMIT ?`), cp.Seq, pruneBatch); err != nil || len(ids) == 0 {
				return c.DriverError(err)
			}
			for _, table := range []string{"audit_events", "audit_seals"} {
				q, args, err := sqlx.In(`DELETE FROM `+table+` WHERE id IN (?)`, ids)
				if err != nil {
					return gateway.Wrap(gateway.EInternal, err, "pruning the audit trail")
				}
				res, err := tx.ExecContext(ctx, c.Q(q), args...)
				if err != nil {
					return c.DriverError(err)
				}
				if table == "audit_events" {
					n, _ = res.RowsAffected()
				}
			}
			return nil
		})
		if err != nil {
			return cp.Seq, deleted, err
		}
		deleted += n
		if len(ids) < pruneBatch {
			break
		}
	}
	_, err = c.W.ExecContext(ctx, c.Q(`DELETE FROM audit_checkpoints WHERE seq < ?`), cp.Seq)
	return cp.Seq, deleted, c.DriverError(err)
}

// pruneAnchor is the checkpoint the sealed rows start after when the
// rows before them were pruned (PruneAudit): the checkpoint of the seq
// before the first sealed row, or, with no sealed row left, the last
// checkpoint. nil when the rows start at seq 1 (or no such checkpoint
// exists: a verifier then names the rows from seq 1 as deleted).
func (c *Core) pruneAnchor(ctx context.Context) (*auditchain.Checkpoint, error) {
	var first sql.NullInt64
	if err := c.R.QueryRowxContext(ctx, `SELECT min(seq) FROM audit_seals`).Scan(&first); err != nil {
		return nil, c.DriverError(err)
	}
	if first.Valid && first.Int64 <= 1 {
		return nil, nil
	}
	var cps []auditchain.Checkpoint
	var err error
	if first.Valid {
		cps, err = c.AuditCheckpoints(ctx, first.Int64-2, first.Int64-1)
	} else if cp, ok, e := c.LatestAuditCheckpoint(ctx, time.Now().Add(24*time.Hour)); ok {
		cps = []auditchain.Checkpoint{cp}
	} else {
		err = e
	}
	if err != nil || len(cps) == 0 {
		return nil, err
	}
	return &cps[0], nil
}

// verifyFrom is where VerifyAuditChain starts: after the anchoring
// checkpoint when rows were pruned (pruneAnchor), else from the first
// row; from is the anchor's seq (0 for the first row).
func (c *Core) verifyFrom(ctx context.Context) (v *auditchain.Verifier, from int64, err error) {
	cp, err := c.pruneAnchor(ctx)
	if err != nil || cp == nil {
		return auditchain.NewVerifier(), 0, err
	}
	return auditchain.NewVerifierAt(auditchain.Head{Seq: cp.Seq, Hash: cp.Hash}), cp.Seq, nil
}
