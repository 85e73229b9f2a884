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
	// written; the caller must then refuse the call. The row is written
	// before an allowed call is dispatched (fail closed) and completed by
	// FinishAudit afterwards.
	RecordAudit(ctx context.Context, ev *gateway.AuditEvent) error
	// FinishAudit sets the final status, error class and latency of the row
	// ev.ID after dispatch (e.g. "error" with class "Unavailable" when the
	// upstream failed). ENotFound when no row has that id.
	FinishAudit(ctx context.Context, ev *gateway.AuditEvent) error
	// Ping reports whether the store can serve requests (for /readyz).
	Ping(ctx context.Context) error
}
