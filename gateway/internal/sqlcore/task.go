package sqlcore

import (
	"context"

	"github.com/mcpgate/mcpgate/gateway"
)

// EnsureTask registers task taskID of workspaceID as running unless the
// store has it already, and returns the task as stored: the new row, or
// the existing one unchanged (a task an operator ended stays ended). It
// is one idempotent insert (ON CONFLICT DO NOTHING), safe when several
// calls, replicas included, register the same task at once, then a read
// of the row on W, which sees the insert. Errors: ENotFound when the
// workspace does not exist, EUnavailable when the database cannot be
// reached.
func (c *Core) EnsureTask(ctx context.Context, workspaceID, taskID string) (*gateway.Task, error) {
	const insert = `
INSERT INTO tasks (workspace_id, id, status, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT (workspace_id, id) DO NOTHING`
	notFound := Msgs{NotFound: WorkspaceNotFound(workspaceID)}
	if _, err := c.W.ExecContext(ctx, c.Q(insert), workspaceID, taskID, gateway.TaskRunning, c.Time(Now())); err != nil {
		return nil, c.Translate(err, notFound)
	}
	const read = `SELECT status, updated_at FROM tasks WHERE workspace_id = ? AND id = ?`
	t := &gateway.Task{WorkspaceID: workspaceID, ID: taskID}
	var at Time
	if err := c.W.QueryRowContext(ctx, c.Q(read), workspaceID, taskID).Scan(&t.Status, &at); err != nil {
		// No row: the workspace, and its tasks with it, was deleted since.
		return nil, c.Translate(err, notFound)
	}
	t.UpdatedAt = at.Time
	return t, nil
}
