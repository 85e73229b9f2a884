package sqlcore

import (
	"context"
	"time"
)

// EndSession records that the MCP session id has ended, until until (the
// moment its id stops verifying anyway); recording it again keeps the
// later until. It backs the transport's SessionEnds on every replica
// (mcp_ended_sessions).
func (c *Core) EndSession(ctx context.Context, id string, until time.Time) error {
	const q = `INSERT INTO mcp_ended_sessions (id, until) VALUES (?, ?)
ON CONFLICT (id) DO UPDATE SET until = CASE WHEN excluded.until > mcp_ended_sessions.until THEN excluded.until ELSE mcp_ended_sessions.until END`
	_, err := c.W.ExecContext(ctx, c.Q(q), id, c.D.Time(until))
	return c.DriverError(err)
}

// SessionEnded reports whether EndSession recorded id with an until after
// now.
func (c *Core) SessionEnded(ctx context.Context, id string, now time.Time) (bool, error) {
	var n int
	err := c.R.GetContext(ctx, &n, c.Q(`SELECT count(*) FROM mcp_ended_sessions WHERE id = ? AND until > ?`), id, c.D.Time(now))
	return n > 0, c.DriverError(err)
}

// DeleteEndedSessions deletes the records whose until is at or before
// before, and returns how many it deleted: those ids no longer verify, so
// the record is no longer needed.
func (c *Core) DeleteEndedSessions(ctx context.Context, before time.Time) (int64, error) {
	return c.Delete(ctx, `DELETE FROM mcp_ended_sessions WHERE until <= ?`, c.D.Time(before))
}
