package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// The rate-limit counters one statement at a time (the request path takes
// its slots in Reserve instead). A counter is identified by its key and
// the start of its window.

// addCount creates or bumps a counter in one statement and returns its
// count: ? key, window, delta, expiry (NULL for none), task workspace and
// task id (NULL for a windowed counter; a counter keeps the first task it
// was created with). The upsert takes the row's lock (PostgreSQL) or runs
// on the single write connection (SQLite), as the reservation's writes
// do, so no change is lost.
const addCount = `
INSERT INTO rate_limit_counters (bucket_key, window_start, count, expires_at, task_workspace_id, task_id)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (bucket_key, window_start) DO UPDATE SET count = rate_limit_counters.count + excluded.count,
    task_workspace_id = coalesce(rate_limit_counters.task_workspace_id, excluded.task_workspace_id),
    task_id = coalesce(rate_limit_counters.task_id, excluded.task_id)
RETURNING count`

// AddRateCount adds delta (may be negative) to the counter, creating it at
// delta, and returns the new count (addCount, prepared on W).
// expires is when the window ends and the row may be swept; the zero time
// means never.
func (c *Core) AddRateCount(ctx context.Context, key string, window, expires time.Time, delta int64) (int64, error) {
	stmt, err := c.Add.Get(ctx, c.W, c.DriverError)
	if err != nil {
		return 0, err
	}
	var n int64
	err = stmt.QueryRowContext(ctx, c.SlotArgs(gateway.Slot{Key: key, Window: window, Expires: expires}, delta)...).Scan(&n)
	return n, c.DriverError(err)
}

// SlotArgs are addCount's arguments for adding delta to slot's
// counter: a window that never ends, and the task of a windowed counter,
// as NULL.
func (c *Core) SlotArgs(slot gateway.Slot, delta int64) []any {
	var exp, workspace, task any
	if !slot.Expires.IsZero() {
		exp = c.Time(slot.Expires)
	}
	if slot.TaskID != "" {
		workspace, task = slot.WorkspaceID, slot.TaskID
	}
	return []any{slot.Key, c.Time(slot.Window), delta, exp, workspace, task}
}

// RateCount returns the counter's value, 0 when it does not exist.
func (c *Core) RateCount(ctx context.Context, key string, window time.Time) (int64, error) {
	const q = `SELECT count FROM rate_limit_counters WHERE bucket_key = ? AND window_start = ?`
	var n int64
	err := c.R.QueryRowContext(ctx, c.Q(q), key, c.Time(window)).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return n, c.DriverError(err)
}

// DeleteRateCount removes the counter; removing a missing one is no error.
func (c *Core) DeleteRateCount(ctx context.Context, key string, window time.Time) error {
	const q = `DELETE FROM rate_limit_counters WHERE bucket_key = ? AND window_start = ?`
	_, err := c.W.ExecContext(ctx, c.Q(q), key, c.Time(window))
	return c.DriverError(err)
}

// DeleteEndedTaskCounts removes the per-task counters (those reserved
// with a TaskID) whose task is in a terminal state (completed, failed or
// cancelled) last changed at or before before, and returns how many it
// removed (Dialect.DeleteEndedTaskCounts). Counters of a running or
// unknown task stay.
func (c *Core) DeleteEndedTaskCounts(ctx context.Context, before time.Time) (int64, error) {
	return c.Delete(ctx, c.D.DeleteEndedTaskCounts, c.Time(before))
}

// DeleteExpiredRateCounts removes the counters whose window ended at or
// before before (windows are half-open, [start, end)) and returns how many
// it removed (Dialect.DeleteExpiredCounts); per-task counters (no expiry)
// are never deleted.
func (c *Core) DeleteExpiredRateCounts(ctx context.Context, before time.Time) (int64, error) {
	return c.Delete(ctx, c.D.DeleteExpiredCounts, c.Time(before))
}
