package pipeline

import (
	"context"
	"time"

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
	// EnsureTask registers task taskID of workspaceID as running unless
	// the store has it, in one idempotent insert that concurrent calls may
	// race, and returns the task as stored. ENotFound when the workspace
	// does not exist. The request path calls it only for a task the caller
	// load did not find (RegisterTasks).
	EnsureTask(ctx context.Context, workspaceID, taskID string) (*gateway.Task, error)
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
	// Reserve carries out r in one write transaction: it claims r.Claim
	// (when non-nil) unless its workspace, task, tool and key are claimed
	// already, takes one call of each of r.Slots in order, all or nothing,
	// and inserts r.Event as RecordAudit does (normalising its Time the
	// same way). The result says which of three things happened (see
	// gateway.ReservationResult): committed, with the audit row's id; the
	// key was claimed before; or a slot was full, with its count. In the
	// last two cases nothing was written: no row, no claim, and no slot
	// (the refund of docs/requirements.md#rate-limits). Concurrent reservations of
	// one counter or key are serialised across processes (row locks on
	// PostgreSQL, the single write connection on SQLite), so a bucket of n
	// admits exactly n calls and a key has one owner. An error means
	// nothing was written, or, for a commit whose outcome is unknown, that
	// the slots may stay taken: EUnavailable when the database cannot be
	// reached, ENotFound when r.Claim's workspace does not exist, EInvalid
	// when r.Event.Arguments is not JSON.
	Reserve(ctx context.Context, r gateway.Reservation) (gateway.ReservationResult, error)
	// IdempotencyStore keeps the idempotency keys of confirmed deploy-tier
	// calls (docs/requirements.md#deploy-confirmation).
	IdempotencyStore
}

// IdempotencyStore is the mcp_idempotency_keys table (docs/requirements.md#idempotency-keys:
// keys "scoped to task_id + tool_name + key and
// cleaned up 24 hours after the parent task reaches a terminal state").
// A key is claimed by Store.Reserve (gateway.Reservation.Claim), in the
// transaction of the call's audit row and rate-limit slots. Keys are per
// workspace: a row of another workspace under the same task id is neither
// returned nor in the way. Each method commits on its own.
type IdempotencyStore interface {
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
