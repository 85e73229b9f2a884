package approvals

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// Reason codes of the approval step, in the refusal's reasons and the
// audit row's reason_codes.
const (
	ReasonNoPerson = "approval.no_person"
	ReasonRejected = "approval.rejected"
	ReasonExpired  = "approval.expired"
	ReasonUsed     = "approval.used"
	ReasonPending  = "approval.pending"
	// ReasonTooLarge: the arguments do not fit MaxArgumentsBytes, so no
	// one could be shown them whole.
	ReasonTooLarge = "approval.arguments_too_large"
	// ReasonTooMany: the principal has MaxPendingPerPrincipal approvals
	// pending already.
	ReasonTooMany = "approval.too_many_pending"
)

// Call is the call an approval is asked for.
type Call struct {
	Principal *gateway.Principal
	// WorkspaceID is the call's workspace, as its audit row names it: on
	// cc_server the one the policy resolved from the call's workspace_id
	// for a user whose credential pins none. "" means the principal's.
	WorkspaceID string
	Tool        string
	// ArgumentsHash is the canonical hash of the arguments, as the audit
	// row holds it.
	ArgumentsHash string
	// PolicyRevision is the revision of the bundle that decided; "" when
	// decisions do not name one.
	PolicyRevision string
	// Because says why the call needs an approval (the decision's
	// obligations.approval_because).
	Because []string
	// Arguments is the canonical JSON (RFC 8785, CanonicalArguments) of
	// the arguments ArgumentsHash hashes: stored with the approval and
	// shown whole, pretty-printed (Pretty), to whoever decides it. At most
	// MaxArgumentsBytes; Approve refuses a call with more.
	Arguments json.RawMessage
}

// workspace is the workspace the approval of c is bound to.
func (c Call) workspace() string {
	if c.WorkspaceID != "" {
		return c.WorkspaceID
	}
	return c.Principal.WorkspaceID
}

func (c Call) key() Key {
	p := c.Principal
	return Key{PrincipalKind: p.Kind, Subject: p.Subject, WorkspaceID: c.workspace(),
		Tool: c.Tool, ArgumentsHash: c.ArgumentsHash, PolicyRevision: c.PolicyRevision}
}

// Approve gets a person's approval of call and uses it: it returns the
// approval, status used, once the call may run, exactly once. The
// approval comes from the store when a retry of the same call finds one
// still open (pending: wait for it; approved: use it); otherwise a new
// one is created and awaited, asked of the calling client's user through
// el when el is non-nil (the client declared the elicitation capability)
// and of the approvers holding the admin approvals stream (or the
// console's approvals page) open.
//
// A refusal is an EForbidden *gateway.Error with one reason (its code
// ReasonNoPerson, ReasonRejected, ReasonExpired or ReasonUsed) whose
// message says what happened and what to do; the approval, when there is
// one, is returned with it so that the audit row names it. A request that
// ends while the approval is pending returns an EUnavailable error: the
// approval stays pending, and a retry of the same call waits for it.
// Store failures are returned as they are (the call is not run).
//
// A call whose Arguments exceed MaxArgumentsBytes is refused at once
// (EInvalid, ReasonTooLarge): a person must see all of what they approve.
// A call that needs a new approval while its principal has
// MaxPendingPerPrincipal pending is refused (ERateLimited,
// ReasonTooMany); a retry of a call whose approval is open is not.
func (s *Service) Approve(ctx context.Context, call Call, el wire.Elicitor) (*Approval, error) {
	if n := len(call.Arguments); n > MaxArgumentsBytes {
		msg := fmt.Sprintf("%s needs a person's approval, and its arguments are %d bytes of canonical JSON, more than the %d an approval shows whole; nothing ran; call it with shorter arguments", call.Tool, n, MaxArgumentsBytes)
		return nil, &gateway.Error{Code: gateway.EInvalid, Message: msg, Reasons: []gateway.Reason{{Code: ReasonTooLarge, Message: msg}}}
	}
	a, err := s.store.OpenApproval(ctx, call.key(), s.now())
	switch {
	case err == nil && a.Status == StatusApproved:
		return s.use(ctx, a, call)
	case gateway.ErrorCodeOf(err) == gateway.ENotFound:
		a = nil
	case err != nil:
		return nil, err
	}
	if el == nil {
		ok, err := s.Reachable(ctx)
		if err != nil {
			return a, err
		}
		if !ok {
			return a, refusal(ReasonNoPerson, fmt.Sprintf("%s needs a person's approval before it runs, and no one who could approve it is connected: no approver holds the admin approvals stream open (nor has the console's approvals page open) and this client did not declare the elicitation capability, so the call was refused and nothing ran; ask an operator to open the approvals stream (GET /admin/v1/approvals/stream) or the console's approvals page (/console/approvals), or use a client that supports elicitation, then call again", call.Tool))
		}
	}
	if a == nil {
		if a, err = s.create(ctx, call); err != nil {
			return nil, err
		}
	}
	if el != nil {
		ectx, cancel := context.WithDeadline(ctx, a.ExpiresAt)
		defer cancel()
		go s.elicit(ectx, el, a, call)
	}
	a, err = s.await(ctx, a)
	if err != nil {
		return a, err
	}
	return s.use(ctx, a, call)
}

// create stores a new pending approval of call, unless its principal has
// MaxPendingPerPrincipal pending already. createMu makes the count and
// the insert one step on this replica, so concurrent calls of one
// principal cannot all pass the count; across replicas the bound holds
// per replica.
func (s *Service) create(ctx context.Context, call Call) (*Approval, error) {
	s.createMu.Lock()
	defer s.createMu.Unlock()
	now := s.now()
	p := call.Principal
	pending, err := s.store.ListApprovals(ctx, Filter{Status: StatusPending, Now: now,
		WorkspaceID: call.workspace(), PrincipalKind: p.Kind, Subject: p.Subject, Limit: MaxPendingPerPrincipal})
	if err != nil {
		return nil, err
	}
	if len(pending) >= MaxPendingPerPrincipal {
		msg := fmt.Sprintf("%s needs a person's approval, and %d approvals of yours are already pending (at most %d at once); nothing ran; wait until they are decided or expire, then call again",
			call.Tool, len(pending), MaxPendingPerPrincipal)
		return nil, &gateway.Error{Code: gateway.ERateLimited, Message: msg, Reasons: []gateway.Reason{{Code: ReasonTooMany, Message: msg}}}
	}
	a := &Approval{ID: newID(), PrincipalKind: p.Kind, Subject: p.Subject, WorkspaceID: call.workspace(),
		TaskID: p.TaskID, Tool: call.Tool, ArgumentsHash: call.ArgumentsHash, Arguments: call.Arguments,
		PolicyRevision: call.PolicyRevision, Because: call.Because, Status: StatusPending,
		CreatedAt: now, ExpiresAt: now.Add(s.o.TTL)}
	if err := s.store.CreateApproval(ctx, a); err != nil {
		return nil, err
	}
	s.notify()
	return a, nil
}

// await waits until a is no longer pending: it reads a from the store at
// every PollInterval and at every change made through this Service, and
// marks it expired once its expiry has passed.
func (s *Service) await(ctx context.Context, a *Approval) (*Approval, error) {
	tick := time.NewTicker(s.o.PollInterval)
	defer tick.Stop()
	for {
		changed := s.wait()
		cur, err := s.store.Approval(ctx, a.ID)
		if err != nil {
			if ctx.Err() != nil { // the read failed because the request ended
				return a, requestEnded(ctx, a)
			}
			return a, err
		}
		if cur.Status == StatusPending && !s.now().Before(cur.ExpiresAt) {
			if cur, err = s.store.ExpireApproval(context.WithoutCancel(ctx), a.ID, s.now()); err != nil {
				return a, err
			}
		}
		switch cur.Status {
		case StatusApproved:
			return cur, nil
		case StatusRejected:
			msg := fmt.Sprintf("%s was not run: %s rejected approval %s", cur.Tool, cur.DecidedBy, cur.ID)
			if cur.Reason != "" {
				msg += " (" + cur.Reason + ")"
			}
			return cur, refusal(ReasonRejected, msg+"; change the call, or ask the approver, before calling again")
		case StatusExpired:
			return cur, refusal(ReasonExpired, fmt.Sprintf("%s was not run: no one decided approval %s before it expired at %s; call again to ask for a new approval", cur.Tool, cur.ID, cur.ExpiresAt.Format(time.RFC3339)))
		case StatusUsed:
			return cur, refusal(ReasonUsed, fmt.Sprintf("%s was not run again: approval %s was already used by an earlier call with the same arguments; an approval runs its call once, so call again to ask for a new one", cur.Tool, cur.ID))
		}
		timer := time.NewTimer(time.Until(cur.ExpiresAt))
		select {
		case <-ctx.Done():
			timer.Stop()
			return cur, requestEnded(ctx, cur)
		case <-changed:
		case <-tick.C:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// requestEnded is the refusal of a call whose request ended while its
// approval a was pending: the approval stays pending and decidable, the
// call does not run.
func requestEnded(ctx context.Context, a *Approval) error {
	return &gateway.Error{Code: gateway.EUnavailable, Err: gateway.NotDispatched(ctx.Err()),
		Message: fmt.Sprintf("%s was not run: the request ended while approval %s was pending; calling again with the same arguments waits for the same approval until %s", a.Tool, a.ID, a.ExpiresAt.Format(time.RFC3339)),
		Reasons: []gateway.Reason{{Code: ReasonPending, Message: "the request ended while the approval was pending"}}}
}

// use marks the approved a used for call; the call may then run.
func (s *Service) use(ctx context.Context, a *Approval, call Call) (*Approval, error) {
	used, err := s.store.UseApproval(context.WithoutCancel(ctx), a.ID, call.ArgumentsHash, s.now())
	if gateway.ErrorCodeOf(err) == gateway.EConflict {
		return a, refusal(ReasonUsed, fmt.Sprintf("%s was not run: approval %s can no longer run it (%s); call again to ask for a new approval", call.Tool, a.ID, gateway.ErrorMessageOf(err)))
	}
	if err != nil {
		return a, err
	}
	s.notify()
	return used, nil
}

// Elicitation decisions name the deciding user so: "elicitation:<subject>".
const elicitedBy = "elicitation:"

// approvalSchema is the form the elicitation asks for: a decision and an
// optional reason.
var approvalSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"decision": map[string]any{"type": "string", "title": "Decision", "enum": []any{"approve", "reject"},
			"description": "approve runs the call once, exactly as shown; reject refuses it"},
		"reason": map[string]any{"type": "string", "title": "Reason", "description": "optional, recorded with the decision"},
	},
	"required": []any{"decision"},
}

// elicit asks the calling client's user to decide a and records the answer
// as the decision of elicitation:<subject>: accept with decision approve
// approves, any other answer rejects. A decision made meanwhile by an
// approver wins (the store refuses the second), and an elicitation that
// fails or ends with ctx decides nothing.
func (s *Service) elicit(ctx context.Context, el wire.Elicitor, a *Approval, call Call) {
	msg := fmt.Sprintf("The agent wants to run %s, which needs your approval before it runs (approval %s, expires %s).\n\nTool: %s\nArguments (all of them):\n%s\n\nApprove runs it once with exactly these arguments; reject refuses it.",
		call.Tool, a.ID, a.ExpiresAt.Format(time.RFC3339), call.Tool, Pretty(call.Arguments))
	res, err := el.Elicit(ctx, wire.ElicitRequest{Message: msg, RequestedSchema: approvalSchema})
	if err != nil {
		return
	}
	status, reason := StatusRejected, ""
	switch res.Action {
	case wire.ElicitAccept:
		reason, _ = res.Content["reason"].(string)
		if d, _ := res.Content["decision"].(string); d == "approve" {
			status = StatusApproved
		} else if reason == "" {
			reason = "the user rejected it"
		}
	case wire.ElicitDecline:
		reason = "the user declined the approval request"
	default:
		reason = "the user dismissed the approval request"
	}
	// A conflict (decided already) or a store failure decides nothing
	// here: the waiter reads the store.
	_, _ = s.Decide(context.WithoutCancel(ctx), a.ID, status, elicitedBy+call.Principal.Subject, reason)
}

// refusal is the EForbidden error of an approval step that refuses a call.
func refusal(code, msg string) *gateway.Error {
	return &gateway.Error{Code: gateway.EForbidden, Message: msg, Reasons: []gateway.Reason{{Code: code, Message: msg}}}
}
