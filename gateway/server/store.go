package server

import (
	"context"

	"github.com/mcpgate/mcpgate/gateway"
)

// Store is what the request path needs from the audit store. The PostgreSQL
// and embedded stores implement it.
type Store interface {
	// LoadCaller loads, in one read, the workspace, membership, requested and
	// default profiles, seat type, org plan, overrides and task of p. It
	// returns an ENotFound *gateway.Error when p's workspace does not exist;
	// everything else that is missing is left nil.
	LoadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error)
	// RecordAudit inserts ev and sets ev.ID. An error means the row was not
	// written; the caller must then refuse the call.
	RecordAudit(ctx context.Context, ev *gateway.AuditEvent) error
	// Ping reports whether the store can serve requests (for /readyz).
	Ping(ctx context.Context) error
}
