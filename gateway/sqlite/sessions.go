package sqlite

import (
	"context"
	"time"
)

// sessionEnded is the lookup of SessionEnded (one row or none).
const sessionEnded = `SELECT count(*) FROM mcp_ended_sessions WHERE id = ? AND until > ?`

// SessionEnded reports whether EndSession recorded id with an until after
// now. It is the shared core's query, prepared once on the read pool: the
// transport asks it on every request of a session, and parsing the
// statement each time cost most of the lookup (on PostgreSQL the driver
// caches prepared statements itself).
func (s *Store) SessionEnded(ctx context.Context, id string, now time.Time) (bool, error) {
	stmt, err := s.ended.Get(ctx, s.r, driverError)
	if err != nil {
		return false, err
	}
	var n int
	err = stmt.QueryRowContext(ctx, id, fmtTime(now)).Scan(&n)
	return n > 0, driverError(err)
}
