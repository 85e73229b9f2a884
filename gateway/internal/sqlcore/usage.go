package sqlcore

import (
	"context"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// usageRow is one group of ProfileToolUsage as either driver returns it.
type usageRow struct {
	Tool    string `db:"tool"`
	Tier    string `db:"tier"`
	Status  string `db:"status"`
	Bucket  string `db:"bucket"`
	Decided int64  `db:"decided"`
	Calls   int64  `db:"calls"`
	Last    Time   `db:"last"`
}

// ProfileToolUsage groups the audit rows of profile profileID in workspace
// workspaceID at or after since (zero: all) by tool, tier, status, bucket
// and whether the row carries a decision id, with the count and the
// newest time of each group, ordered by tool, status, bucket and decided.
// The profile is the one the row names: the requested profile, or the
// workspace default for a session without one. An unknown workspace or
// profile matches nothing. Errors: EUnavailable when the database cannot
// be read.
func (c *Core) ProfileToolUsage(ctx context.Context, workspaceID, profileID string, since time.Time) ([]gateway.ToolUsage, error) {
	const decided = `CASE WHEN decision_id <> '' THEN 1 ELSE 0 END`
	q := `SELECT tool, tier, status, bucket, ` + decided + ` AS decided, COUNT(*) AS calls, MAX(time) AS last
    FROM audit_events WHERE workspace_id = ? AND profile_id = ? AND time >= ?
    GROUP BY tool, tier, status, bucket, ` + decided + `
    ORDER BY tool, status, bucket, decided`
	var rows []usageRow
	if err := c.R.SelectContext(ctx, &rows, c.Q(q), workspaceID, profileID, c.Time(since.UTC())); err != nil {
		return nil, c.DriverError(err)
	}
	out := make([]gateway.ToolUsage, len(rows))
	for i, r := range rows {
		out[i] = gateway.ToolUsage{Tool: r.Tool, Tier: gateway.Tier(r.Tier), Status: r.Status, Bucket: r.Bucket,
			Decided: r.Decided == 1, Calls: r.Calls, Last: r.Last.Time}
	}
	return out, nil
}
