package server

import (
	"context"

	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
)

// surfacePolicies is the admin API's Policy over the live policy of every
// surface of this gateway (SupaCloud first, then cc_server when it is
// on). Status is the SupaCloud surface's (GET /admin/v1/policy); Reload
// reloads each surface's bundle from the policy folder, in that order, and
// answers with the SupaCloud surface's attempt (the others' outcomes are
// logged, counted and shown in /readyz).
type surfacePolicies struct {
	lives []*policy.Live // set while the App opens, read only afterwards
}

var _ admin.Policy = (*surfacePolicies)(nil)

// Status implements admin.Policy.
func (p *surfacePolicies) Status() policystatus.Status { return p.lives[0].Status() }

// Reload implements admin.Policy.
func (p *surfacePolicies) Reload(ctx context.Context, trigger string) (*policystatus.Attempt, error) {
	at, err := p.lives[0].Reload(ctx, trigger)
	if at == nil { // the embedded bundle: no surface reloads
		return at, err
	}
	for _, l := range p.lives[1:] {
		_, _ = l.Reload(ctx, trigger) // logged, counted and in Statuses
	}
	return at, err
}

// Statuses is the status of every surface, for /readyz.
func (p *surfacePolicies) Statuses() []policystatus.Status {
	out := make([]policystatus.Status, len(p.lives))
	for i, l := range p.lives {
		out[i] = l.Status()
	}
	return out
}
