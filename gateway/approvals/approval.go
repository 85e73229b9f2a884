package approvals

import (
	"encoding/json"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// Approval statuses (Approval.Status). An approval is created pending; a
// person approves or rejects it (StatusApproved, StatusRejected), or its
// TTL passes first (StatusExpired); an approved approval becomes
// StatusUsed when its call is dispatched, once.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusRejected = "rejected"
	StatusExpired  = "expired"
	StatusUsed     = "used"
)

// Approval is one approvals row: a person's approval of one exact tools/call
// before it runs (docs/requirements.md#cc-approval: a tool declaring
// requiresApproval, or an action-class tool whose guard answered prompt).
// It is bound to the call by the principal (PrincipalKind, Subject,
// WorkspaceID), the tool, the canonical argument hash (the audit row's
// arguments_hash, gateway/canon) and the policy revision that asked for
// it: a call that differs in any of them needs an approval of its own.
type Approval struct {
	// ID is the approval's id ("apr_" and 26 base32 characters), named in
	// the call's audit row (gateway.AuditEvent.ApprovalID).
	ID            string                `json:"id"`
	PrincipalKind gateway.PrincipalKind `json:"principal_kind"`
	Subject       string                `json:"subject"`
	WorkspaceID   string                `json:"workspace_id"`
	TaskID        string                `json:"task_id,omitempty"`
	Tool          string                `json:"tool"`
	ArgumentsHash string                `json:"arguments_hash"`
	// Arguments is the canonical JSON (RFC 8785) of the call's arguments,
	// what ArgumentsHash hashes, so the person who decides sees exactly
	// what runs; nil for an approval stored before it was kept.
	Arguments json.RawMessage `json:"arguments"`
	// PolicyRevision is the revision of the bundle whose decision asked
	// for the approval; "" while decisions do not name one.
	PolicyRevision string `json:"policy_revision"`
	// Because says why the call needs a person: "tool.requires_approval",
	// "guard.prompt" (the decision's obligations.approval_because).
	Because []string `json:"because"`
	// Status is one of the Status* statuses.
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// DecidedBy names who approved or rejected it ("" while pending, and
	// for an expired approval); DecidedAt is when, Reason why.
	DecidedBy string     `json:"decided_by,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	// UsedAt is when the approved call was dispatched.
	UsedAt *time.Time `json:"used_at,omitempty"`
}

// Key is what binds an approval to one exact call; the store finds
// an open approval (pending, or approved and unused) of a key, so that a
// retried call waits for or runs on the approval its first attempt
// created, and a changed argument (another ArgumentsHash) finds none.
type Key struct {
	PrincipalKind  gateway.PrincipalKind
	Subject        string
	WorkspaceID    string
	Tool           string
	ArgumentsHash  string
	PolicyRevision string
}

// KeyOf returns the key a binds.
func (a *Approval) KeyOf() Key {
	return Key{PrincipalKind: a.PrincipalKind, Subject: a.Subject, WorkspaceID: a.WorkspaceID,
		Tool: a.Tool, ArgumentsHash: a.ArgumentsHash, PolicyRevision: a.PolicyRevision}
}

// Filter narrows a listing of approvals, newest first; empty
// fields match all. Limit is capped by the store (default 100, max 1000).
// Status StatusPending lists only approvals that have not expired at
// Now (the zero Now: the store's clock is not consulted and every pending
// row is listed).
type Filter struct {
	Status      string
	WorkspaceID string
	// PrincipalKind and Subject select one principal's approvals (both
	// set, or both empty).
	PrincipalKind gateway.PrincipalKind
	Subject       string
	Now           time.Time
	Limit         int
}
