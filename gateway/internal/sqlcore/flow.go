package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
)

// The session history of flow rules (store.Flows; docs/requirements.md#flow-rules): one
// flow_sessions row per flow key, its reads and tools as JSON text, so
// that both databases keep it with the same statements.

// FlowSession returns the history of key: an empty one (no reads, no
// tools) when nothing was recorded under it.
func (c *Core) FlowSession(ctx context.Context, key string) (*gateway.FlowSession, error) {
	stmt, err := c.flowRead.Get(ctx, c.R, c.DriverError)
	if err != nil {
		return nil, err
	}
	var reads, tools string
	err = stmt.QueryRowContext(ctx, key).Scan(&reads, &tools)
	s := &gateway.FlowSession{Key: key}
	if errors.Is(err, sql.ErrNoRows) {
		return s, nil
	}
	if err != nil {
		return nil, c.DriverError(err)
	}
	if err := decodeFlow(reads, tools, s); err != nil {
		return nil, err
	}
	return s, nil
}

func decodeFlow(reads, tools string, s *gateway.FlowSession) error {
	if err := json.Unmarshal([]byte(reads), &s.Reads); err != nil {
		return gateway.Wrap(gateway.EInternal, err, "the audit store holds a flow history whose reads are not JSON; delete the flow_sessions row of "+s.Key)
	}
	if err := json.Unmarshal([]byte(tools), &s.Tools); err != nil {
		return gateway.Wrap(gateway.EInternal, err, "the audit store holds a flow history whose tools are not JSON; delete the flow_sessions row of "+s.Key)
	}
	return nil
}

// selectFlow reads a session's history (FlowSession).
const selectFlow = `SELECT reads, tools FROM flow_sessions WHERE flow_key = ?`

// saveFlow writes a session's history back (recordFlow).
const saveFlow = `UPDATE flow_sessions SET reads = ?, tools = ? WHERE flow_key = ?`

// prepareFlow prepares lockFlow and saveFlow on W when r records in a
// session, before the reservation's transaction takes a connection: on
// SQLite W is one connection, which a prepare inside the transaction
// would wait for.
func (c *Core) prepareFlow(ctx context.Context, r gateway.Reservation) error {
	if r.Flow == nil {
		return nil
	}
	if _, err := c.flowLock.Get(ctx, c.W, c.DriverError); err != nil {
		return err
	}
	_, err := c.flowSave.Get(ctx, c.W, c.DriverError)
	return err
}

// lockFlow creates the row of key unless it exists and returns it as the
// transaction now holds it: the upsert takes the row's lock on
// PostgreSQL (a concurrent reservation of the same key waits for this
// transaction's end, then reads what it committed), and SQLite runs
// reservations one at a time on its write connection.
const lockFlow = `
INSERT INTO flow_sessions (flow_key, workspace_id, task_id, reads, tools, updated_at)
VALUES (?, ?, ?, '[]', '[]', ?)
ON CONFLICT (flow_key) DO UPDATE SET updated_at = excluded.updated_at
RETURNING reads, tools`

// lockFlowIn locks r.Flow's row in tx (lockFlow, prepared by prepareFlow) and reports whether its
// labels changed since the call was decided (FlowRecord.Seen); it
// returns the history as locked, for recordFlow.
func (c *Core) lockFlowIn(ctx context.Context, tx *sqlx.Tx, r gateway.Reservation) (*gateway.FlowSession, bool, error) {
	f := r.Flow
	stmt, err := c.flowLock.Get(ctx, c.W, c.DriverError)
	if err != nil {
		return nil, false, err
	}
	var reads, tools string
	err = tx.StmtContext(ctx, stmt).QueryRowContext(ctx, f.Key, f.WorkspaceID, f.TaskID, c.Time(r.Event.Time)).Scan(&reads, &tools)
	if err != nil {
		return nil, false, c.DriverError(err)
	}
	s := &gateway.FlowSession{Key: f.Key}
	if err := decodeFlow(reads, tools, s); err != nil {
		return nil, false, err
	}
	return s, len(s.Reads) != f.Seen, nil
}

// recordFlow adds to s, the history locked by lockFlowIn, the labels of
// r.Flow.Reads it does not hold yet, each with the call (its tool, audit
// row auditID and time), and the tool unless it is there or the list is
// full (gateway.MaxFlowTools); it writes the row only when that changed it.
func (c *Core) recordFlow(ctx context.Context, tx *sqlx.Tx, r gateway.Reservation, s *gateway.FlowSession, auditID int64) error {
	f := r.Flow
	changed := false
	for _, label := range f.Reads {
		i, found := slices.BinarySearchFunc(s.Reads, label, func(r gateway.FlowRead, l string) int {
			switch {
			case r.Label < l:
				return -1
			case r.Label > l:
				return 1
			}
			return 0
		})
		if found {
			continue
		}
		s.Reads = slices.Insert(s.Reads, i, gateway.FlowRead{Label: label, Tool: f.Tool, AuditID: auditID, Time: r.Event.Time.UTC().Truncate(time.Microsecond)})
		changed = true
	}
	if f.Tool != "" && len(s.Tools) < gateway.MaxFlowTools && !slices.Contains(s.Tools, f.Tool) {
		s.Tools = append(s.Tools, f.Tool)
		changed = true
	}
	if !changed {
		return nil
	}
	reads, err := json.Marshal(s.Reads)
	if err != nil {
		return gateway.Wrap(gateway.EInternal, err, "the flow history could not be encoded")
	}
	stmt, err := c.flowSave.Get(ctx, c.W, c.DriverError)
	if err != nil {
		return err
	}
	_, err = tx.StmtContext(ctx, stmt).ExecContext(ctx, string(reads), JSONList(s.Tools), f.Key)
	return c.DriverError(err)
}

// DeleteEndedFlows deletes the histories of tasks in a terminal state
// (completed, failed, cancelled) since at or before ended, and those not
// touched since at or before idle (an API token's, a conversation's), and
// returns how many it deleted.
func (c *Core) DeleteEndedFlows(ctx context.Context, ended, idle time.Time) (int64, error) {
	const q = `DELETE FROM flow_sessions WHERE updated_at <= ? OR (task_id <> '' AND EXISTS (
  SELECT 1 FROM tasks t
  WHERE t.workspace_id = flow_sessions.workspace_id AND t.id = flow_sessions.task_id
    AND t.status IN ('completed', 'failed', 'cancelled') AND t.updated_at <= ?))`
	return c.Delete(ctx, q, c.Time(idle), c.Time(ended))
}
