package sqlcore

import (
	"context"

	"github.com/mcpgate/mcpgate/gateway"
)

// UserWorkspaces returns the ids of the workspaces user is a member of
// (the members table), sorted; none is an empty list, not an error. The
// cc_server surface reads it for a caller not pinned to one workspace
// (docs/requirements.md#cc-workspace-id: without a workspace_id of its own the caller may use the
// workspaces its user is a member of). Errors: EUnavailable when the
// database cannot be reached or read.
func (c *Core) UserWorkspaces(ctx context.Context, user string) ([]string, error) {
	ids := []string{}
	const q = `SELECT workspace_id FROM members WHERE user_id = ? ORDER BY workspace_id`
	if err := c.R.SelectContext(ctx, &ids, c.Q(q), user); err != nil {
		return nil, c.DriverError(err)
	}
	return ids, nil
}

// LoadMemberships is the caller of a cc_server principal (gateway.Caller
// with Memberships and FlowRulesIn only): p.Subject's workspaces, or none
// for an agent pinned to one (p.WorkspaceID set), whose workspace is its
// credential's; and which of these workspaces switched the flow rule set
// on (FlowRulesIn). Errors as UserWorkspaces.
func (c *Core) LoadMemberships(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error) {
	caller := &gateway.Caller{}
	on := []string{}
	if p.WorkspaceID != "" {
		const q = `SELECT id FROM workspaces WHERE id = ? AND flow_rules = ?`
		if err := c.R.SelectContext(ctx, &on, c.Q(q), p.WorkspaceID, true); err != nil {
			return nil, c.DriverError(err)
		}
	} else {
		ids, err := c.UserWorkspaces(ctx, p.Subject)
		if err != nil {
			return nil, err
		}
		caller.Memberships = ids
		const q = `SELECT m.workspace_id FROM members m JOIN workspaces w ON w.id = m.workspace_id
 WHERE m.user_id = ? AND w.flow_rules = ? ORDER BY m.workspace_id`
		if err := c.R.SelectContext(ctx, &on, c.Q(q), p.Subject, true); err != nil {
			return nil, c.DriverError(err)
		}
	}
	if len(on) > 0 {
		caller.FlowRulesIn = on
	}
	return caller, nil
}
