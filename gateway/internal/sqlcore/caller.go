package sqlcore

import (
	"context"
	"encoding/json"

	"github.com/mcpgate/mcpgate/gateway"
)

// callerRow is one row of Dialect.CallerQuery; the JSON columns are NULL
// when the part does not exist.
type callerRow struct {
	ID, Name, Slug, OrgPlan           string
	CreatedAt                         Time
	Member, Profile, DefaultProfile   []byte
	SeatType, Plan                    []byte
	UserOverrides, WorkspaceOverrides []byte
	Task                              []byte
	ProfileDeleted, FlowRules         bool
}

// LoadCaller loads, in one query (Dialect.CallerQuery, prepared once on
// R), what the policy needs about p: the workspace, p.Subject's
// membership and seat type, the requested profile (p.ProfileID), the
// workspace default profile, the org plan, both override sets and the
// task (p.TaskID), all scoped to p.WorkspaceID; the workspace carries
// its flow_rules switch. Parts that do not exist are nil. ProfileDeleted says that p.ProfileID names a profile deleted
// from the workspace (DeleteProfile) and not re-created. Errors: ENotFound when the workspace does not exist,
// EUnavailable when the database cannot be reached or read.
func (c *Core) LoadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error) {
	stmt, err := c.load.Get(ctx, c.R, c.DriverError)
	if err != nil {
		return nil, err
	}
	var r callerRow
	err = stmt.QueryRowContext(ctx, p.WorkspaceID, p.Subject, p.ProfileID, p.TaskID).Scan(
		&r.ID, &r.Name, &r.Slug, &r.OrgPlan, &r.CreatedAt, &r.Member, &r.Profile, &r.DefaultProfile,
		&r.SeatType, &r.Plan, &r.UserOverrides, &r.WorkspaceOverrides, &r.Task, &r.ProfileDeleted, &r.FlowRules)
	if err != nil {
		return nil, c.Translate(err, Msgs{NotFound: WorkspaceNotFound(p.WorkspaceID)})
	}
	caller := &gateway.Caller{
		Workspace: &gateway.Workspace{ID: r.ID, Name: r.Name, Slug: r.Slug, OrgPlan: r.OrgPlan, CreatedAt: r.CreatedAt.Time,
			FlowRules: r.FlowRules},
		ProfileRequested: p.ProfileID,
	}
	parts := []struct {
		raw  []byte
		into any
	}{
		{r.Member, &caller.Member}, {r.Profile, &caller.Profile}, {r.DefaultProfile, &caller.DefaultProfile},
		{r.SeatType, &caller.SeatType}, {r.Plan, &caller.OrgPlan}, {r.UserOverrides, &caller.UserOverrides},
		{r.WorkspaceOverrides, &caller.WorkspaceOverrides}, {r.Task, &caller.Task},
	}
	for _, part := range parts {
		if part.raw == nil {
			continue // NULL: the part does not exist; leave the field nil
		}
		if err := json.Unmarshal(part.raw, part.into); err != nil {
			return nil, gateway.Wrap(gateway.EInternal, err, "audit store returned an unreadable caller record")
		}
	}
	caller.ProfileDeleted = r.ProfileDeleted && caller.Profile == nil && p.ProfileID != ""
	return caller, nil
}
