package server

import (
	"context"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
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
	// FinishAudit sets the final status, error class, reason codes and
	// latency of the row ev.ID after dispatch (e.g. "error" with class "Unavailable" when the
	// upstream failed). ENotFound when no row has that id.
	FinishAudit(ctx context.Context, ev *gateway.AuditEvent) error
	// Ping reports whether the store can serve requests (for /readyz).
	Ping(ctx context.Context) error
	// ReserveAndRecord inserts ev as RecordAudit does and, in the same write
	// transaction, runs reserve with a ctx that carries the transaction, so
	// that the rate-limit counters reserve changes (ratelimit.Counters
	// called with that ctx) commit together with the audit row. When
	// reserve returns nil the transaction commits and ev.ID is set; when it
	// returns an error, or the commit fails, everything rolls back (no row,
	// no counter change: the refund of seed 001, "Rate limits"), ev.ID is 0
	// and the error is returned: reserve's own *gateway.Error unchanged
	// (e.g. ERateLimited), EUnavailable when the database cannot be reached.
	// Concurrent reservations of one counter are serialised across
	// processes (row locks on PostgreSQL, the single write connection on
	// SQLite), so a bucket of n admits exactly n calls.
	ReserveAndRecord(ctx context.Context, ev *gateway.AuditEvent, reserve func(ctx context.Context) error) error
	// Counters keeps the rate-limit counters the limiter store reads and
	// changes, in the same database as the audit rows.
	ratelimit.Counters
	// IdempotencyStore keeps the idempotency keys of confirmed deploy-tier
	// calls (seed 001, Deploy confirmation protocol).
	IdempotencyStore
}

// IdempotencyStore is the mcp_idempotency_keys table (seed 001, Deploy
// confirmation protocol: keys "scoped to task_id + tool_name + key and
// cleaned up 24 hours after the parent task reaches a terminal state").
// Every method runs in the reservation transaction when ctx carries one
// (ReserveAndRecord), so that a claim commits or rolls back together with
// the call's audit row and rate-limit slots.
type IdempotencyStore interface {
	// ClaimIdempotencyKey inserts rec (TaskID, Tool, Key, WorkspaceID,
	// InputHash; Result nil) when no row has its TaskID + Tool + Key, and
	// returns nil, nil: the caller now owns the key and dispatches. When a
	// row of the same workspace exists it is returned unchanged (its Result
	// nil while its call is still being dispatched) and nothing is written.
	// Keys are per workspace: a row of another workspace under the same
	// task id is neither returned nor in the way. Errors as the store's
	// (EUnavailable, EInternal).
	ClaimIdempotencyKey(ctx context.Context, rec *gateway.IdempotencyRecord) (*gateway.IdempotencyRecord, error)
	// SaveIdempotencyResult stores rec.Result on the claimed row of rec's
	// workspace, task, tool and key. ENotFound when no such row exists.
	SaveIdempotencyResult(ctx context.Context, rec *gateway.IdempotencyRecord) error
	// ReleaseIdempotencyKey deletes the claimed row of rec's workspace,
	// task, tool and key if it has no result yet (its dispatch failed), so
	// that a retry with the same key runs. A row with a result is kept; no
	// row is not an error.
	ReleaseIdempotencyKey(ctx context.Context, rec *gateway.IdempotencyRecord) error
	// DeleteEndedIdempotencyKeys deletes the keys of tasks that are in a
	// terminal state (completed, failed, cancelled) since at or before
	// before (the task row's updated_at), and returns how many it deleted.
	// Keys of tasks the store does not know are kept.
	DeleteEndedIdempotencyKeys(ctx context.Context, before time.Time) (int64, error)
}
