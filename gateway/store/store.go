// Package store declares, once, what mcpgate asks of its audit store: one
// contract (Store) made of named parts, so that a consumer that needs a
// part names it (the request path Calls, the admin API Admin, the token
// check Tokens, …) instead of re-declaring its methods. The PostgreSQL
// and embedded stores (gateway/postgres, gateway/sqlite) implement all of
// it, and gateway/storetest tests all of it on both. Every method returns
// a *gateway.Error or nil: ENotFound (naming what to create) for an
// unknown record or parent, EConflict for a taken key, EInvalid for a
// value the schema refuses, EUnavailable when the database cannot serve
// now; a failed write changes nothing. It imports only the domain package.
package store

import (
	"context"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
	"github.com/mcpgate/mcpgate/gateway/auditchain"
	"github.com/mcpgate/mcpgate/gateway/console/consolesession"
)

// Store is the whole contract of an audit store.
type Store interface {
	Calls
	Admin
	Tokens
	Counters
	Sessions
	ConsoleSessions
	Approvals
	Memberships
	Usage
	AuditChain
	Flows
	Pins
	AuditLog
	// Close waits for the writes under way, then releases the store's
	// statements and connections.
	Close() error
}

// Callers loads the caller of a request.
type Callers interface {
	// LoadCaller loads, in one read, the workspace, membership, requested and
	// default profiles, seat type, org plan, overrides and task of p. It
	// returns an ENotFound *gateway.Error when p's workspace does not exist;
	// everything else that is missing is left nil.
	LoadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error)
}

// Tasks registers the tasks the request path meets.
type Tasks interface {
	// EnsureTask registers task taskID of workspaceID as running unless
	// the store has it, in one idempotent insert that concurrent calls may
	// race, and returns the task as stored (an existing one unchanged).
	// ENotFound when the workspace does not exist.
	EnsureTask(ctx context.Context, workspaceID, taskID string) (*gateway.Task, error)
}

// Calls is what the request path (gateway/pipeline) needs: the caller,
// its task, the audit row of every call and the reservation of its
// rate-limit slots.
type Calls interface {
	Callers
	Tasks
	// RecordAudit inserts ev, finished (not open), and sets ev.ID; Kind
	// "" is AuditKindToolCall, another of gateway.AuditKinds is kept,
	// anything else is EInvalid. An error means the row was not
	// written; the caller must then refuse the call. The row is written
	// before an allowed call is dispatched (fail closed) and completed by
	// FinishAudit afterwards.
	RecordAudit(ctx context.Context, ev *gateway.AuditEvent) error
	// FinishAudit sets the final status, error class, reason codes and
	// latency of the row ev.ID after dispatch (e.g. "error" with class "Unavailable" when the
	// upstream failed), and closes it (AuditEvent.Open). ENotFound when no
	// row has that id, or when the row was sealed into the audit chain
	// before its call finished (AuditChain.SealAudit): a sealed row never
	// changes.
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
	// Idempotency keeps the idempotency keys of confirmed deploy-tier
	// calls (docs/requirements.md#deploy-confirmation).
	Idempotency
}

// Idempotency is the mcp_idempotency_keys table (docs/requirements.md#idempotency-keys:
// keys "scoped to task_id + tool_name + key and
// cleaned up 24 hours after the parent task reaches a terminal state").
// A key is claimed by Calls.Reserve (gateway.Reservation.Claim), in the
// transaction of the call's audit row and rate-limit slots. Keys are per
// workspace: a row of another workspace under the same task id is neither
// returned nor in the way. Each method commits on its own.
type Idempotency interface {
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

// ExternalLimits is read on every call of an external coordinator
// (docs/requirements.md#external-limits), so that a change made through
// any replica applies to the next call everywhere.
type ExternalLimits interface {
	// ExternalLimits returns the workspace's limits, nil fields for the
	// defaults (also when none were ever set); ENotFound for an unknown
	// workspace.
	ExternalLimits(ctx context.Context, workspaceID string) (gateway.ExternalLimits, error)
}

// Admin is what the admin API (gateway/admin) needs. Every Put creates
// or replaces; every read returns what the Puts stored; lists are sorted by
// id (or name). Methods return an ENotFound *gateway.Error when the record or
// a parent record (workspace, profile, member) does not exist, whose message
// says what to create, EInvalid for values the schema rejects, and change
// nothing on error.
type Admin interface {
	PutWorkspace(ctx context.Context, w *gateway.Workspace) error
	PutMember(ctx context.Context, m *gateway.Member) error
	// PutProfile keeps the profile's default flag as it was.
	PutProfile(ctx context.Context, p *gateway.Profile) error
	// SetDefaultProfile makes profileID the workspace default (clearing the
	// previous one) or, with nil, clears the default.
	SetDefaultProfile(ctx context.Context, workspaceID string, profileID *string) error
	PutWorkspaceOverrides(ctx context.Context, workspaceID string, p gateway.Permissions) error
	PutMemberOverrides(ctx context.Context, workspaceID, userID string, p gateway.Permissions) error
	PutSeatType(ctx context.Context, s *gateway.SeatType) error
	PutOrgPlan(ctx context.Context, o *gateway.OrgPlan) error
	PutTask(ctx context.Context, t *gateway.Task) error
	// CreateAPIToken stores t (hash and fingerprint already set).
	CreateAPIToken(ctx context.Context, t *gateway.APIToken) error
	ListAPITokens(ctx context.Context, workspaceID string) ([]gateway.APIToken, error)
	// APIToken returns the token with this fingerprint, without its
	// hash; ENotFound if unknown.
	APIToken(ctx context.Context, fingerprint string) (*gateway.APIToken, error)
	// RevokeAPIToken marks the token revoked; ENotFound if unknown.
	RevokeAPIToken(ctx context.Context, fingerprint string) error
	PutExternalLimits(ctx context.Context, workspaceID string, l gateway.ExternalLimits) error
	// SetWorkspaceFlowRules switches the shipped flow rule set on or off
	// for the workspace (gateway.Workspace.FlowRules, which Workspace,
	// ListWorkspaces and LoadCaller return); ENotFound for an unknown
	// workspace.
	SetWorkspaceFlowRules(ctx context.Context, workspaceID string, on bool) error
	// Workspace returns one workspace; ListWorkspaces at most limit
	// workspaces with ids after after ("" from the start).
	Workspace(ctx context.Context, id string) (*gateway.Workspace, error)
	ListWorkspaces(ctx context.Context, after string, limit int) ([]gateway.Workspace, error)
	ListMembers(ctx context.Context, workspaceID string) ([]gateway.Member, error)
	Member(ctx context.Context, workspaceID, userID string) (*gateway.Member, error)
	// DeleteMember removes the member and its permission overrides.
	DeleteMember(ctx context.Context, workspaceID, userID string) error
	ListProfiles(ctx context.Context, workspaceID string) ([]gateway.Profile, error)
	Profile(ctx context.Context, workspaceID, profileID string) (*gateway.Profile, error)
	// DefaultProfile returns the default profile's id, nil when none is set.
	DefaultProfile(ctx context.Context, workspaceID string) (*string, error)
	// DeleteProfile removes the profile; wasDefault reports that it was the
	// workspace default (now unset); tasks names at most a few of the total
	// running tasks whose audited calls ran under it (total -1: unknown).
	DeleteProfile(ctx context.Context, workspaceID, profileID string) (wasDefault bool, tasks []string, total int, err error)
	// WorkspaceOverrides and MemberOverrides return {} when none are set.
	WorkspaceOverrides(ctx context.Context, workspaceID string) (gateway.Permissions, error)
	MemberOverrides(ctx context.Context, workspaceID, userID string) (gateway.Permissions, error)
	// DeleteWorkspaceOverride and DeleteMemberOverride remove one key;
	// ENotFound when it is not set.
	DeleteWorkspaceOverride(ctx context.Context, workspaceID, key string) error
	DeleteMemberOverride(ctx context.Context, workspaceID, userID, key string) error
	ListSeatTypes(ctx context.Context) ([]gateway.SeatType, error)
	SeatType(ctx context.Context, name string) (*gateway.SeatType, error)
	// DeleteSeatType returns EConflict naming the members that hold it.
	DeleteSeatType(ctx context.Context, name string) error
	ListOrgPlans(ctx context.Context) ([]gateway.OrgPlan, error)
	OrgPlan(ctx context.Context, name string) (*gateway.OrgPlan, error)
	// DeleteOrgPlan returns EConflict naming the workspaces on it.
	DeleteOrgPlan(ctx context.Context, name string) error
	Task(ctx context.Context, workspaceID, taskID string) (*gateway.Task, error)
	// ListTasks returns at most limit tasks with ids after after, only
	// those in status unless it is "".
	ListTasks(ctx context.Context, workspaceID, status, after string, limit int) ([]gateway.Task, error)
	ExternalLimits
	// ListAuditEvents returns events newest first, at most f.Limit (default
	// 100, max 1000).
	ListAuditEvents(ctx context.Context, f gateway.AuditFilter) ([]gateway.AuditEvent, error)
}

// Tokens is what the management-read token check (gateway/auth) needs.
type Tokens interface {
	// APITokenByHash returns the token whose SHA-256 hash is hash,
	// whatever its status; ENotFound when none has it.
	APITokenByHash(ctx context.Context, hash string) (*gateway.APIToken, error)
	// TouchAPIToken records that the token was used at at (never moving
	// last_used_at backwards); ENotFound if unknown.
	TouchAPIToken(ctx context.Context, fingerprint string, at time.Time) error
}

// Counters are the rate-limit counters one at a time, each statement
// committing on its own. A counter is identified by its key and the start
// of its window. The request path takes its slots in Calls.Reserve
// instead; these read, change and sweep them (gateway/ratelimit.Sweep).
type Counters interface {
	// AddRateCount adds delta (may be negative) to the counter, creating it
	// at delta, and returns the new count. expires is when the window ends
	// and the row may be swept; the zero time means never. Concurrent adds
	// to one counter, and reservations that take it, are serialised (row
	// lock on PostgreSQL, the single write connection on SQLite); none is
	// lost.
	AddRateCount(ctx context.Context, key string, window, expires time.Time, delta int64) (int64, error)
	// RateCount returns the counter's value, 0 when it does not exist.
	RateCount(ctx context.Context, key string, window time.Time) (int64, error)
	// DeleteRateCount removes the counter; removing a missing one is no error.
	DeleteRateCount(ctx context.Context, key string, window time.Time) error
	// DeleteEndedTaskCounts removes the per-task counters (those reserved
	// with a TaskID) whose task is in a terminal state (completed, failed
	// or cancelled) last changed at or before before, and returns how many
	// it removed. Counters of a running or unknown task stay.
	DeleteEndedTaskCounts(ctx context.Context, before time.Time) (int64, error)
	// DeleteExpiredRateCounts removes the counters whose window ended at
	// or before before (windows are half-open, [start, end)) and returns
	// how many it removed.
	DeleteExpiredRateCounts(ctx context.Context, before time.Time) (int64, error)
}

// Sessions is the table of ended MCP sessions every replica reads, so
// that a DELETE on one replica holds on all.
type Sessions interface {
	// EndSession records the end of session id until until (the moment
	// its id stops verifying anyway); recording it again keeps the later
	// until.
	EndSession(ctx context.Context, id string, until time.Time) error
	// SessionEnded reports whether id was ended with an until after now.
	SessionEnded(ctx context.Context, id string, now time.Time) (bool, error)
	// DeleteEndedSessions deletes the records whose until is at or
	// before before, and returns how many it deleted.
	DeleteEndedSessions(ctx context.Context, before time.Time) (int64, error)
}

// ConsoleSessions keeps the console's signed-in sessions, so every
// replica on one database serves a signed-in visitor and a restart keeps
// them.
type ConsoleSessions interface {
	// CreateConsoleSession stores s; EConflict when its IDHash is taken.
	CreateConsoleSession(ctx context.Context, s *consolesession.Session) error
	// ConsoleSession returns the session if it expires after now;
	// ENotFound otherwise.
	ConsoleSession(ctx context.Context, idHash string, now time.Time) (*consolesession.Session, error)
	// SetConsoleFlash replaces the session's flash; ENotFound if unknown.
	SetConsoleFlash(ctx context.Context, idHash string, flash []byte) error
	// TakeConsoleFlash returns and clears the flash (nil when none): of
	// concurrent takes at most one gets it.
	TakeConsoleFlash(ctx context.Context, idHash string) ([]byte, error)
	// DeleteConsoleSession removes the session (no error if unknown).
	DeleteConsoleSession(ctx context.Context, idHash string) error
	// DeleteExpiredConsoleSessions deletes sessions expired at or before
	// before, and returns how many it deleted.
	DeleteExpiredConsoleSessions(ctx context.Context, before time.Time) (int64, error)
}

// Approvals are the approvals a person decides, as their owner
// gateway/approvals declares them (approvals.Store); each method's full
// contract is in gateway/internal/sqlcore/approvals.go.
type Approvals = approvals.Store

// Memberships loads the callers of the cc_server surface, who act across
// their workspaces.
type Memberships interface {
	// UserWorkspaces returns the ids of the workspaces user is a member of.
	UserWorkspaces(ctx context.Context, user string) ([]string, error)
	// LoadMemberships loads a cc_server caller: the user's workspaces,
	// and which of its workspaces switched flow rules on (FlowRulesIn).
	LoadMemberships(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error)
}

// Usage reads the audit trail grouped by tool (mcpgate policy suggest).
type Usage interface {
	// ProfileToolUsage groups the audited calls of a profile since since
	// by tool.
	ProfileToolUsage(ctx context.Context, workspaceID, profileID string, since time.Time) ([]gateway.ToolUsage, error)
}

// AuditLog records the audit events that are not tool calls (docs/operations.md,
// "Audit trail"; docs/architecture.md, "Audit events besides tool calls"): refused
// credentials, methods refused before policy, admin and console writes,
// API tokens, approval, upstream and policy decisions. They go into the
// same trail as the calls (one listing, filtered by kind and actor) and
// are sealed into the same chain.
type AuditLog interface {
	// RecordEvents inserts evs, finished, in one transaction (all or
	// none) and sets their IDs; each is normalised as RecordAudit does.
	// EInvalid, and nothing written, when one has kind tool_call (those
	// go through Reserve and RecordAudit) or an unknown kind, or
	// Arguments that are not JSON.
	RecordEvents(ctx context.Context, evs []*gateway.AuditEvent) error
}

// AuditChain is the tamper-evident chain over the audit trail
// (docs/architecture.md, "The audit chain"; the row's canonical form and
// the verifier are gateway/auditchain's).
type AuditChain interface {
	// SealAudit is one sealing round: the rows not sealed yet that are
	// finished (and those open longer than the store's bound), in id
	// order, get the next seq and their hash, and the chain head moves,
	// in one transaction per batch. Only the holder of the sealing lease
	// seals (PostgreSQL: one replica at a time; another's round returns 0
	// at once). It returns how many rows it sealed; on error, the batch
	// under way wrote nothing.
	SealAudit(ctx context.Context) (int, error)
	// VerifyAuditChain recomputes the chain from its first row to the
	// head and reports the first row changed, deleted, inserted or
	// reordered (Report.Problem), how many verified, and how many are
	// not sealed yet. An error means the store could not be read, not
	// that the chain is broken.
	VerifyAuditChain(ctx context.Context) (auditchain.Report, error)
	// AuditChainHead returns the last sealed seq and its hash (0 and
	// auditchain.Genesis before the first seal).
	AuditChainHead(ctx context.Context) (auditchain.Head, error)
	// SealedAuditRows returns at most limit sealed rows after seq after,
	// in seq order, each with its Seq and Hash: what an export streams.
	SealedAuditRows(ctx context.Context, after int64, limit int) ([]gateway.AuditEvent, error)
	// AddAuditCheckpoint stores cp (audit_checkpoints) unless a
	// checkpoint of its seq exists, and reports whether it stored it.
	AddAuditCheckpoint(ctx context.Context, cp auditchain.Checkpoint) (bool, error)
	// LatestAuditCheckpoint returns the checkpoint of the highest seq
	// whose Time is at or before before; false when there is none.
	LatestAuditCheckpoint(ctx context.Context, before time.Time) (auditchain.Checkpoint, bool, error)
	// AuditCheckpoints returns the checkpoints with after < Seq <=
	// through, in seq order.
	AuditCheckpoints(ctx context.Context, after, through int64) ([]auditchain.Checkpoint, error)
	// PruneAudit deletes whole old ranges of the trail: every sealed row
	// up to the last checkpoint whose Time is at or before before, with
	// its seal, and the checkpoints before that one, which stays as the
	// anchor the rest verifies from. It returns the anchor's seq (0:
	// nothing was old enough) and how many audit rows it deleted.
	PruneAudit(ctx context.Context, before time.Time) (anchor, deleted int64, err error)
}

// Flows is the session history of flow rules (docs/requirements.md#flow-rules,
// docs/policy.md "Flow rules"): per flow key (gateway.FlowKey) the labels
// allowed calls read, each with the first call that read it, and the
// tools they called. A call is recorded by its reservation
// (gateway.Reservation.Flow, in Calls.Reserve), in the transaction of its
// audit row, under a lock on its key; these read and end the histories.
type Flows interface {
	// FlowSession returns the history of key, an empty one (no reads, no
	// tools) when none was recorded; it sees every reservation committed
	// before it began, through any replica.
	FlowSession(ctx context.Context, key string) (*gateway.FlowSession, error)
	// DeleteEndedFlows deletes the histories of tasks in a terminal state
	// (completed, failed, cancelled) since at or before ended, and those
	// no reservation touched since at or before idle, and returns how
	// many it deleted.
	DeleteEndedFlows(ctx context.Context, ended, idle time.Time) (int64, error)
}

// Pins are the pinned definitions of bridged tools
// (docs/requirements.md#pinned-tools), one row per surface, upstream and
// tool, shared by every replica; the gateway caches them and reloads them
// on the change feed (table upstream_tool_pins), so no call reads them.
// Each method commits on its own.
type Pins interface {
	// ToolPins returns every pin, by surface, upstream and tool.
	ToolPins(ctx context.Context) ([]gateway.ToolPin, error)
	// AddToolPin inserts p (first sight) unless a pin of its surface,
	// upstream and tool exists, and reports whether it inserted: of two
	// replicas seeing a tool first at once, one pins it.
	AddToolPin(ctx context.Context, p gateway.ToolPin) (bool, error)
	// UpdateToolPin replaces the state, change, renamed_from, hash,
	// definition, current_hash and current of the pin p names (a
	// quarantine, or a pinned definition the upstream lists again),
	// only while the stored pin still holds p's pinned hash and is not
	// already quarantined with p's current definition: EConflict when
	// another replica wrote that change or decided the pin first (so one
	// replica records each quarantine, and no review undoes a decision);
	// ENotFound when there is none.
	UpdateToolPin(ctx context.Context, p gateway.ToolPin) error
	// DecideToolPin approves (the current definition becomes the pinned
	// one, state pinned) or rejects (state rejected) the quarantined
	// tool, recording decidedBy and now, and returns the pin as decided.
	// ENotFound for an unknown pin; EConflict when it is not quarantined.
	DecideToolPin(ctx context.Context, surface, upstream, tool string, approve bool, decidedBy string, now time.Time) (*gateway.ToolPin, error)
}
