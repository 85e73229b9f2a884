// Package gateway holds mcpgate's domain types: principals, workspace records,
// policy decisions, audit events and the one error type every layer returns.
//
// It imports only the standard library and the module's one JSON encoder
// (gateway/internal/jsonw, standard library only), which writes tool
// results without reflection. Packages that wrap a dependency
// (OPA, PostgreSQL, SQLite, HTTP) import this package and never each other;
// only the composing packages (gateway/pipeline, gateway/server) and
// cmd/mcpgate see everything; test/layout checks it.
package gateway

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/mcpgate/mcpgate/gateway/internal/jsonw"
)

// Tier is the capability tier a tool belongs to; it decides which allowlist
// entry unlocks the tool and which rate-limit bucket it consumes
// (docs/requirements.md#tiers).
type Tier string

// The five tiers of docs/requirements.md#tiers. script.run is an ops-tier tool with its own
// carve-out grant; it is marked by Tool.CarveOut, not by a tier of its own.
const (
	TierBaseline Tier = "baseline"
	TierRead     Tier = "read"
	TierOps      Tier = "ops"
	TierScaffold Tier = "scaffold"
	TierDeploy   Tier = "deploy"
)

// Edition is the deployment edition, a process-global, fail-closed property
// (docs/requirements.md#edition).
type Edition string

// The two editions SUPACLOUD_EDITION accepts.
const (
	EditionCommunity  Edition = "community"
	EditionEnterprise Edition = "enterprise"
)

// PrincipalKind says how a caller authenticated.
type PrincipalKind string

// Principal kinds: an in-app agent task session (JWT on /mcp) or an external
// coordinator holding an scmt_ API token (on /api/mcp). On the cc_server
// surface (docs/requirements.md#cc-registry) a caller is a PrincipalUser (a person's client: the
// desktop, the web build, an external MCP client) or a PrincipalAgent (the
// built-in agent runtime).
const (
	PrincipalAgent       PrincipalKind = "agent"
	PrincipalCoordinator PrincipalKind = "coordinator"
	PrincipalUser        PrincipalKind = "user"
)

// The surfaces the gateway serves (one tool registry each: catalog, Rego
// package, adapter, endpoints); audit rows name theirs.
const (
	SurfaceSupaCloud = "supacloud"
	SurfaceCCServer  = "ccserver"
)

// Principal is the authenticated caller of one request. WorkspaceID always
// comes from the credential, never from the client (workspace isolation).
type Principal struct {
	Kind PrincipalKind
	// Subject is the acting user (JWT "sub") for agents, or "token:<fingerprint>"
	// for coordinators.
	Subject     string
	WorkspaceID string
	// TaskID is the task session's task ("task_id" claim); empty for coordinators.
	TaskID string
	// ProfileID is the "agent_profile_id" claim; empty when the claim is absent.
	ProfileID string
	// TokenFingerprint identifies an scmt_ token; empty for agents.
	TokenFingerprint string
	// Scopes are the scmt_ token scopes (mcp:read, mcp:ops, management:read).
	Scopes []string
	// ExpiresAt is the credential's expiry; zero when it does not expire.
	ExpiresAt time.Time
	// Mode is a cc_server conversation mode (JWT claim "mode": chat, plan,
	// review, orchestrate; docs/requirements.md#cc-modes), ""
	// elsewhere. The credential's value is kept as sent: the policy
	// refuses every tool for one it does not know.
	Mode string
	// TicketID is a cc_server run's own ticket (JWT claim "ticket_id");
	// "" when the run has none, and on SupaCloud.
	TicketID string
	// ConversationID is a cc_server conversation (JWT claim
	// "conversation_id"), the flow key of its calls (FlowKey); "" when
	// the credential names none, and on SupaCloud.
	ConversationID string
}

// Workspace is a tenant. OrgPlan names the organisation plan whose
// permissions sit fourth in the precedence chain. FlowRules switches the
// shipped flow rule set on for the workspace (docs/policy.md, "Flow
// rules"; docs/requirements.md#flow-rules): set only through the admin
// API's flow-rules route (Admin.SetWorkspaceFlowRules), kept by
// PutWorkspace, and shown to the policy as input.workspace.flow_rules.
type Workspace struct {
	ID        string    `json:"id" db:"id"`
	Name      string    `json:"name" db:"name"`
	Slug      string    `json:"slug" db:"slug"`
	OrgPlan   string    `json:"org_plan" db:"org_plan"`
	CreatedAt time.Time `json:"created_at" db:"created_at"`
	FlowRules bool      `json:"flow_rules" db:"flow_rules"`
}

// Member roles of a workspace. Deploy-tier tools need RoleOwner or RoleAdmin
// (docs/requirements.md#deploy-role).
const (
	RoleOwner  = "owner"
	RoleAdmin  = "admin"
	RoleMember = "member"
	RoleViewer = "viewer"
)

// Member is a user's membership of a workspace: role and seat type.
type Member struct {
	WorkspaceID string `json:"workspace_id" db:"workspace_id"`
	UserID      string `json:"user_id" db:"user_id"`
	Role        string `json:"role" db:"role"`
	SeatType    string `json:"seat_type" db:"seat_type"`
}

// Profile is an agent profile of a workspace. Allowlist holds grant entries
// such as "supacloud.read.*"; ScriptAllowlist, when non-nil, restricts which
// script slugs script.run may execute (nil means no restriction, an empty
// slice means none).
type Profile struct {
	WorkspaceID     string   `json:"workspace_id"`
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	Allowlist       []string `json:"allowlist"`
	ScriptAllowlist []string `json:"script_allowlist"`
	IsDefault       bool     `json:"is_workspace_default"`
}

// Restricted reports whether ScriptAllowlist limits script.run (nil: any
// script may run).
func (p Profile) Restricted() bool { return p.ScriptAllowlist != nil }

// Permissions maps a permission key (e.g. "workspace.budget.view") to a grant.
type Permissions map[string]bool

// SeatType is a named seat with permission grants; EnterpriseOnly seat types
// do nothing on a community instance (docs/requirements.md#edition).
type SeatType struct {
	Name           string      `json:"name"`
	EnterpriseOnly bool        `json:"enterprise_only"`
	Permissions    Permissions `json:"permissions"`
}

// OrgPlan is an organisation plan with permission grants.
type OrgPlan struct {
	Name        string      `json:"name"`
	Permissions Permissions `json:"permissions"`
}

// Task statuses accepted by the admin API.
const (
	TaskRunning   = "running"
	TaskCompleted = "completed"
	TaskFailed    = "failed"
	TaskCancelled = "cancelled"
)

// Task is a task of a workspace; agent session JWTs name one in "task_id".
type Task struct {
	WorkspaceID string    `json:"workspace_id" db:"workspace_id"`
	ID          string    `json:"id" db:"id"`
	Status      string    `json:"status" db:"status"`
	UpdatedAt   time.Time `json:"updated_at" db:"updated_at"`
}

// APIToken is the stored form of an scmt_ token: never the value, only its
// SHA-256 hash and the fingerprint shown to people (docs/requirements.md#api-tokens).
type APIToken struct {
	Fingerprint string     `json:"fingerprint"`
	WorkspaceID string     `json:"workspace_id"`
	Label       string     `json:"label"`
	Scopes      []string   `json:"scopes"`
	Status      string     `json:"status"` // "active" or "revoked"
	Hash        string     `json:"-"`
	CreatedAt   time.Time  `json:"created_at"`
	LastUsedAt  *time.Time `json:"last_used_at"`
}

// ExternalLimits are a workspace's per-token hourly limits for the external
// gateway; nil keeps the default (docs/requirements.md#external-limits: 50 reads per tool, 30 ops).
type ExternalLimits struct {
	ReadsPerToolHourly *int `json:"reads_per_tool_hourly"`
	OpsPerTokenHourly  *int `json:"ops_per_token_hourly"`
}

// Caller is everything the store knows about a principal that the policy
// needs, loaded by Store.LoadCaller. The caller cache shares one Caller
// between the calls of a principal, so once loaded it is read-only.
type Caller struct {
	Workspace *Workspace
	// Member is nil when the acting user is not a member of the workspace.
	Member *Member
	// ProfileRequested is the agent_profile_id claim ("" when absent).
	ProfileRequested string
	// Profile is the requested profile when it exists in this workspace; nil otherwise.
	Profile *Profile
	// ProfileDeleted is true when ProfileRequested names a profile that was
	// deleted from this workspace and not re-created (Profile is then nil).
	// The session then falls back as one without agent_profile_id does: the
	// workspace default profile, else the read-only fallback. false for an
	// id the workspace never had, which the policy refuses.
	ProfileDeleted bool
	// DefaultProfile is the workspace default profile; nil when none is set.
	DefaultProfile *Profile
	// SeatType is the member's seat type; nil when unknown.
	SeatType *SeatType
	// OrgPlan is the workspace's org plan; nil when unknown.
	OrgPlan            *OrgPlan
	UserOverrides      Permissions
	WorkspaceOverrides Permissions
	// Task is the session's task; nil when the task is unknown.
	Task *Task
	// Memberships are the ids of the workspaces a cc_server user is a
	// member of (the members table), sorted; nil on SupaCloud and for a
	// pinned cc_server agent, whose workspace comes from its credential.
	Memberships []string
	// FlowRulesIn are the ids of the workspaces, among a cc_server
	// caller's (its pinned workspace, or Memberships), whose admin
	// switched the flow rule set on (Workspace.FlowRules), sorted; nil on
	// SupaCloud, whose Workspace carries the switch.
	FlowRulesIn []string
}

// FlowRulesOn reports whether the admin of workspaceID, the workspace a
// call acts in, switched the shipped flow rule set on for it, as far as
// c knows: Workspace.FlowRules on SupaCloud, FlowRulesIn on cc_server.
// false for a nil Caller and for "" (docs/requirements.md#flow-rules).
func (c *Caller) FlowRulesOn(workspaceID string) bool {
	if c == nil || workspaceID == "" {
		return false
	}
	if c.Workspace != nil && c.Workspace.ID == workspaceID && c.Workspace.FlowRules {
		return true
	}
	return slices.Contains(c.FlowRulesIn, workspaceID)
}

// Reason explains one part of a decision with a stable code (for tests and
// dashboards) and a human message (for people).
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Obligations are duties the gateway must carry out on an allowed call.
type Obligations struct {
	// Redact lists top-level result fields to remove (e.g. "budget_remaining").
	Redact []string `json:"redact,omitempty"`
	// ConfirmationRequired marks a deploy-tier call that needs the two-step
	// confirmation (docs/requirements.md#deploy-confirmation).
	ConfirmationRequired bool `json:"confirmation_required,omitempty"`
	// Relay says which messages an upstream sends during the call reach
	// the caller (policy data relay_rules); nil relays none.
	Relay *RelayPolicy `json:"relay,omitempty"`
	// ApprovalRequired marks a call that must wait for a person's
	// approval before it runs (docs/requirements.md#cc-approval: a
	// cc_server requiresApproval tool, or an action guard that answered
	// prompt; on either surface an egress tool after a sensitive read,
	// when the flow rule set is on: docs/policy.md, "Flow rules").
	ApprovalRequired bool `json:"approval_required,omitempty"`
	// ApprovalBecause names why ApprovalRequired is set, as the policy's
	// reason codes ("tool.requires_approval", "guard.prompt"), sorted.
	ApprovalBecause []string `json:"approval_because,omitempty"`
	// FlowReads are the labels of the data the call's result holds
	// (policy data: the tool's reads labels), which the reservation
	// records in the session's history (FlowRecord.Reads), sorted.
	FlowReads []string `json:"flow_reads,omitempty"`
}

// RelayPolicy is the policy's word on relaying during one allowed call:
// the kinds relayed, and the words that mark a form elicitation as asking
// for a secret (refused whatever the kinds say).
type RelayPolicy struct {
	Kinds       []RelayKind `json:"kinds"`
	SecretWords []string    `json:"secret_words"`
}

// Decision is the policy's answer for one principal and one tool.
type Decision struct {
	ID      string `json:"decision_id"`
	Allow   bool   `json:"allow"`
	Visible bool   `json:"visible"`
	Tier    Tier   `json:"tier"`
	// Group, Mode and WorkspaceID are what a cc_server decision tells of
	// the call: the tool's group, the conversation mode the policy
	// applied, and the workspace the call acts in ("" for a global tool,
	// or a search tool called without one). Empty on SupaCloud.
	Group       string      `json:"group,omitempty"`
	Mode        string      `json:"mode,omitempty"`
	WorkspaceID string      `json:"workspace_id,omitempty"`
	Reasons     []Reason    `json:"reasons"`
	Obligations Obligations `json:"obligations"`
	// Input is the policy input the decision was made on, as a JSON value
	// (maps, slices, strings, json.Number, bools), for the decision log;
	// nil unless the engine keeps inputs (policy.Options.KeepInput).
	Input any `json:"-"`
	// Revision names the policy bundle that made the decision: its
	// .manifest revision, else "sha256:" and a hash of its loaded files
	// (docs/policy.md, "Revisions").
	Revision string `json:"revision"`
	// Cached is true when the engine answered from its decision cache
	// instead of evaluating the policy (the trace then has no span for
	// the decision: docs/operations.md, "Traces").
	Cached bool `json:"-"`
}

// Audit statuses, one per tools/call outcome.
const (
	AuditAllowed              = "allowed"
	AuditDenied               = "denied"
	AuditError                = "error"
	AuditRateLimited          = "rate_limited"
	AuditConfirmationRequired = "confirmation_required"
)

// AuditKindToolCall is the kind of the row of a tools/call, the one kind
// the trail records so far.
const AuditKindToolCall = "tool_call"

// AuditKinds are the kinds of audit rows (docs/architecture.md, "The audit
// chain"): tool calls, and the kinds issue 26 adds (refused credentials,
// methods refused before policy, admin writes, API tokens, approvals,
// upstreams, policy reloads), which the listing accepts as filters
// already.
var AuditKinds = []string{AuditKindToolCall, "auth", "method", "admin", "token", "approval", AuditKindUpstream, "policy"}

// AuditKindUpstream is the kind of the rows of bridged upstreams' pins:
// a quarantine the gateway made and a person's decision on it.
const AuditKindUpstream = "upstream"

// AuditEvent is one audit_events row: written for every tools/call before
// the reply, whatever the outcome (one audit row per call). It never holds a secret or
// a token; arguments appear only as a hash unless argument logging is on.
type AuditEvent struct {
	ID            int64           `json:"id"`
	Time          time.Time       `json:"time"`
	RequestID     string          `json:"request_id"`
	DecisionID    string          `json:"decision_id"`
	WorkspaceID   string          `json:"workspace_id"`
	TaskID        string          `json:"task_id"`
	ProfileID     string          `json:"profile_id"`
	Actor         string          `json:"actor"`
	PrincipalKind PrincipalKind   `json:"principal_kind"`
	TokenFP       string          `json:"token_fingerprint,omitempty"`
	Tool          string          `json:"tool"`
	Tier          Tier            `json:"tier"`
	Status        string          `json:"status"`
	ErrorClass    string          `json:"error_class,omitempty"`
	ReasonCodes   []string        `json:"reason_codes"`
	Bucket        string          `json:"bucket,omitempty"`
	LatencyMicros int64           `json:"latency_us"`
	ArgumentsHash string          `json:"arguments_hash"`
	Arguments     json.RawMessage `json:"arguments,omitempty"`
	// PolicyRevision is Decision.Revision of the decision the call got;
	// empty for a call refused before the policy was asked (an unknown
	// tool, a workspace the store does not know, a store failure).
	PolicyRevision string `json:"policy_revision"`
	// Surface is the registry the call was made on (SurfaceSupaCloud,
	// SurfaceCCServer); Mode its cc_server conversation mode ("" on
	// SupaCloud); ApprovalID the approval a cc_server call waited for (""
	// when it needed none).
	Surface string `json:"surface"`
	Mode    string `json:"mode,omitempty"`
	// ApprovalID names the approval the call waited for (the ID of
	// gateway/approvals' Approval); "" for a call that needed none.
	ApprovalID string `json:"approval_id,omitempty"`
	// TraceID is the OpenTelemetry trace of the call (32 lowercase hex
	// digits), when traces are on and the call had a span; "" otherwise
	// (the store keeps NULL).
	TraceID string `json:"trace_id,omitempty"`
	// Kind is what the row records (AuditKinds); RecordAudit and Reserve
	// write AuditKindToolCall for "".
	Kind string `json:"kind"`
	// Open is true while the call a reservation recorded has not finished
	// (its status and latency are the reservation's until FinishAudit),
	// and stays true on a row sealed before its call finished.
	Open bool `json:"open,omitempty"`
	// Seq and Hash are the row's place in the tamper-evident chain once it
	// is sealed (within a second of its commit; 0 and "" until then):
	// Hash is the lowercase hex of SHA-256(the previous row's hash ||
	// RFC 8785 of this row), see gateway/auditchain.
	Seq  int64  `json:"seq,omitempty"`
	Hash string `json:"hash,omitempty"`
}

// AuditFilter narrows a listing of audit events; empty fields match all.
// Limit is capped by the store (default 100, max 1000). Before, when set,
// keeps only the events older than that position, which pages through a
// trail longer than one listing: pass the position of the last event of
// the previous page.
type AuditFilter struct {
	WorkspaceID string
	TaskID      string
	Tool        string
	Status      string
	// Kind and Actor match the row's kind (AuditKinds) and actor (for a
	// tool call, the principal's subject) exactly.
	Kind   string
	Actor  string
	Limit  int
	Before AuditPosition
}

// AuditPosition is an event's place in the listing order: newest first by
// Time, then by ID. The zero value is "no position".
type AuditPosition struct {
	Time time.Time
	ID   int64
}

// IsZero reports whether p is the zero position.
func (p AuditPosition) IsZero() bool { return p.ID == 0 && p.Time.IsZero() }

// PositionOf returns ev's position in the listing order.
func PositionOf(ev *AuditEvent) AuditPosition { return AuditPosition{Time: ev.Time, ID: ev.ID} }

// ToolCall is an allowed call handed to an adapter. WorkspaceID is the
// credential's workspace, never a client-supplied one.
//
// Arguments are the decoded arguments, numbers as json.Number with every
// digit the client sent. RawArguments are the same arguments as the
// client's JSON object, byte for byte except that members only the gateway
// reads (the deploy confirmation token) are left out; an adapter that
// forwards the call sends these bytes. RawArguments is nil for a call built
// in Go; an adapter then encodes Arguments.
//
// Principal is the authenticated caller, for the tools the gateway answers
// itself (cc_server's search tools, which rate callability for the caller);
// an adapter that forwards calls never sends it on.
type ToolCall struct {
	WorkspaceID  string
	TaskID       string
	Actor        string
	Tool         string
	Arguments    map[string]any
	RawArguments json.RawMessage
	Principal    *Principal
}

// ToolResult is an adapter's answer in MCP CallToolResult shape. Adapters
// that answer with structured data may leave Content empty; the gateway then
// renders StructuredContent as one text block after applying obligations.
type ToolResult struct {
	Content           []map[string]any `json:"content"`
	StructuredContent map[string]any   `json:"structuredContent,omitempty"`
	IsError           bool             `json:"isError,omitempty"`
	// Input, when not nil, makes the result an input-required result of MCP
	// 2026-07-28 instead (InputRequired): Content, StructuredContent and
	// IsError are then unused, and the transport writes resultType
	// "input_required" with Input's fields.
	Input *InputRequired `json:"-"`

	// structuredJSON is StructuredContent encoded by StructuredJSON, once.
	structuredJSON []byte
}

// StructuredJSON returns the JSON encoding of StructuredContent (nil when
// it is nil). The encoding is made once: later calls, the text block
// rendered from it and MarshalJSON reuse it, so StructuredContent must not
// change after the first call (apply redactions before).
func (r *ToolResult) StructuredJSON() ([]byte, error) {
	if r.structuredJSON != nil || r.StructuredContent == nil {
		return r.structuredJSON, nil
	}
	b, err := marshalValue(r.StructuredContent)
	if err != nil {
		return nil, err
	}
	r.structuredJSON = b
	return b, nil
}

// MarshalJSON encodes r in CallToolResult shape, structuredContent from
// the encoding StructuredJSON made, if it made one.
func (r ToolResult) MarshalJSON() ([]byte, error) {
	var sc []byte
	if len(r.StructuredContent) > 0 { // omitted when empty, as the field's tag says
		var err error
		if sc, err = r.StructuredJSON(); err != nil {
			return nil, err
		}
	}
	// What json.Marshal writes for the struct below, without reflection:
	// sc is already compact, as encoding/json writes an embedded raw value.
	e := jsonw.Get()
	defer jsonw.Put(e)
	e.Out = append(e.Out, `{"content":`...)
	if appendContent(e, r.Content) {
		if len(sc) > 0 {
			e.Out = append(append(e.Out, `,"structuredContent":`...), sc...)
		}
		if r.IsError {
			e.Out = append(e.Out, `,"isError":true`...)
		}
		return slices.Clone(append(e.Out, '}')), nil
	}
	return json.Marshal(struct {
		Content           []map[string]any `json:"content"`
		StructuredContent json.RawMessage  `json:"structuredContent,omitempty"`
		IsError           bool             `json:"isError,omitempty"`
	}{r.Content, sc, r.IsError})
}

// marshalValue returns json.Marshal(v), written by the module's JSON
// encoder (gateway/internal/jsonw) without reflection where it can: the
// values tool results hold. Anything it does not take, and every error,
// is json.Marshal's own. FuzzMarshalValue holds the two to the same bytes.
func marshalValue(v any) ([]byte, error) {
	e := jsonw.Get()
	defer jsonw.Put(e)
	if e.Append(v) {
		return slices.Clone(e.Out), nil
	}
	return json.Marshal(v)
}

// appendContent appends json.Marshal(content), a result's content blocks,
// to e.Out; false when the encoder does not take one of them.
func appendContent(e *jsonw.Encoder, content []map[string]any) bool {
	if content == nil {
		e.Out = append(e.Out, "null"...)
		return true
	}
	e.Out = append(e.Out, '[')
	for i, block := range content {
		if i > 0 {
			e.Out = append(e.Out, ',')
		}
		if !e.Append(block) {
			return false
		}
	}
	e.Out = append(e.Out, ']')
	return true
}

// IdempotencyRecord is one mcp_idempotency_keys row: the idempotency_key of
// a confirmed deploy-tier call, scoped to TaskID + Tool + Key (docs/requirements.md#idempotency-keys),
// with the InputHash of the arguments it was first used with and the
// result of that call. Result is nil while the call is being dispatched
// (the key is claimed but no result is stored yet). The stores and the
// pipeline share it, so it lives in the domain package.
type IdempotencyRecord struct {
	WorkspaceID string
	TaskID      string
	Tool        string
	Key         string
	InputHash   string
	// Result is the JSON of the gateway.ToolResult returned to the caller.
	Result    json.RawMessage
	CreatedAt time.Time
}

// Slot is one rate-limit counter a call takes in its reservation: the
// counter Key (e.g. "mcpgate:task:ws-a/t1:task.ops") and the start of its
// Window, in UTC; Expires is when the window ends (the zero time for a
// counter that never expires, such as a per-task cap, whose Window is the
// Unix epoch). Limit is the most calls the window admits. A per-task
// counter names its task (WorkspaceID, TaskID; both empty otherwise), so
// that the store can delete it once the task has ended. Bucket is the
// bucket's name ("task.ops", "workspace_day.ops", …), for people and
// logs; the store keys the counter by Key and Window only.
type Slot struct {
	Bucket      string
	Key         string
	Window      time.Time
	Expires     time.Time
	Limit       int64
	WorkspaceID string
	TaskID      string
}

// Reservation is what the request path asks of the audit store for an
// allowed call, in one transaction: claim the idempotency key Claim (when
// non-nil; its Result nil), take one call of each of Slots in order, all
// or nothing, and insert Event (its Status "allowed") as the call's audit
// row. Nothing is written unless all three succeed.
type Reservation struct {
	Event *AuditEvent
	Slots []Slot
	Claim *IdempotencyRecord
	// Flow, when set, records the call in its session's history in the
	// same transaction, under a lock on its flow key, unless the key's
	// labels changed since the call was decided (FlowRecord.Seen).
	Flow *FlowRecord
}

// ReservationResult is the outcome of a Reservation that the store could
// carry out (a store failure is an error instead). Exactly one holds:
//   - AuditID != 0: everything was written and committed; AuditID is the
//     audit row's id.
//   - Prior != nil: Claim's key was claimed before (by this workspace's
//     task, for the same tool); Prior is that record as stored (Result nil
//     while its call is still being dispatched). Nothing was written.
//   - Full > 0: Slots[Full-1] had no room; Used is how many calls its window
//     held (its Limit, or more if the limit was lowered). Nothing was
//     written: the slots before it are given back.
//   - FlowChanged: the session of Flow read new labels after the call was
//     decided (FlowRecord.Seen); nothing was written, and the call must be
//     decided again on the history as it is now.
type ReservationResult struct {
	AuditID     int64
	Prior       *IdempotencyRecord
	Full        int
	Used        int64
	FlowChanged bool
}

// RateLimits are the rate-limit caps of docs/requirements.md#rate-limits
// and docs/requirements.md#workspace-profile-caps, in calls per task, per workspace and UTC day, or
// per agent profile and UTC hour; the configuration overrides each from
// the environment variable named beside it, and the rate-limit rules plan
// a call's slots from them.
type RateLimits struct {
	ToolPerTask             int // AGENT_MCP_TOOL_RATE_LIMIT: baseline + read per task (50)
	OpsPerTask              int // ops incl. script.run per task (10)
	ScaffoldPerTask         int // scaffold per task (10)
	DeployPerTask           int // deploy per task (5)
	WorkspaceOpsDaily       int // AGENT_MCP_WORKSPACE_OPS_DAILY_LIMIT (100)
	WorkspaceDeployDaily    int // AGENT_MCP_WORKSPACE_DEPLOY_DAILY_LIMIT (20)
	WorkspaceProposalDaily  int // AGENT_MCP_WORKSPACE_PROPOSAL_DAILY_LIMIT (10)
	WorkspaceTaskSpawnDaily int // AGENT_MCP_WORKSPACE_TASK_SPAWN_DAILY_LIMIT (3)
	ProfileOpsHourly        int // AGENT_MCP_PROFILE_OPS_HOURLY_LIMIT (30)
	ProfileDeployHourly     int // AGENT_MCP_PROFILE_DEPLOY_HOURLY_LIMIT (10)
	ProfileProposalHourly   int // AGENT_MCP_PROFILE_PROPOSAL_HOURLY_LIMIT (10)
	ProfileTaskSpawnHourly  int // AGENT_MCP_PROFILE_TASK_SPAWN_HOURLY_LIMIT (3)
	// CCServerCallsPerMinute caps the tools/call of one cc_server
	// principal (its subject, and its pinned workspace if any) per UTC
	// minute: MCPGATE_CCSERVER_CALLS_PER_MINUTE; 0 (unset, the default
	// here) takes the policy data (data.ccserver.limits.calls_per_minute),
	// else DefaultCCServerCallsPerMinute.
	CCServerCallsPerMinute int
}

// DefaultCCServerCallsPerMinute is the per-principal cc_server cap when
// neither the environment nor the policy data sets one: two calls a
// second on average, far above an agent's pace, low enough to stop a loop.
const DefaultCCServerCallsPerMinute = 120

// DefaultRateLimits returns the defaults of docs/requirements.md#rate-limits.
func DefaultRateLimits() RateLimits {
	return RateLimits{
		ToolPerTask: 50, OpsPerTask: 10, ScaffoldPerTask: 10, DeployPerTask: 5,
		WorkspaceOpsDaily: 100, WorkspaceDeployDaily: 20, WorkspaceProposalDaily: 10, WorkspaceTaskSpawnDaily: 3,
		ProfileOpsHourly: 30, ProfileDeployHourly: 10, ProfileProposalHourly: 10, ProfileTaskSpawnHourly: 3,
	}
}
