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
	_, err := c.W.ExecContext(ctx, c.Q(q), id, c.Time(until))
	return c.DriverError(err)
}

// selectSessionEnded is SessionEnded's primary-key lookup. It is
// prepared: each request of a session that is not answered from memory
// (the server's SessionEndCache) reads it, and an unprepared statement
// costs PostgreSQL a parse, a plan and a transaction more each time.
const selectSessionEnded = `SELECT count(*) FROM mcp_ended_sessions WHERE id = ? AND until > ?`

// SessionEnded reports whether EndSession recorded id with an until after
// now.
func (c *Core) SessionEnded(ctx context.Context, id string, now time.Time) (bool, error) {
	stmt, err := c.ended.Get(ctx, c.R, c.DriverError)
	if err != nil {
		return false, err
	}
	var n int
	err = stmt.QueryRowContext(ctx, id, c.Time(now)).Scan(&n)
	return n > 0, c.DriverError(err)
}

// DeleteEndedSessions deletes the records whose until is at or before
// before, and returns how many it deleted: those ids no longer verify, so
// the record is no longer needed.
func (c *Core) DeleteEndedSessions(ctx context.Context, before time.Time) (int64, error) {
	return c.Delete(ctx, `DELETE FROM mcp_ended_sessions WHERE until <= ?`, c.Time(before))
}
