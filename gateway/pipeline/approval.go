package pipeline

import (
	"context"
	"fmt"
	"slices"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// Approver gets a person's approval of a call
// (docs/requirements.md#cc-approval); *approvals.Service implements it. Approve returns
// once the call may run, with its approval used, or refuses it (see
// approvals.Service.Approve); a returned approval is named in the audit
// row either way.
type Approver interface {
	Approve(ctx context.Context, call approvals.Call, el wire.Elicitor) (*approvals.Approval, error)
}

// reasonApprovalsOff is the reason code of a call that needs an approval
// on a gateway that cannot take one (Pipeline.Approvals nil).
const reasonApprovalsOff = "approval.unavailable"

// needsApproval: the decision's obligation decides (a requiresApproval
// tool, or a guard that answered prompt); the catalog's requiresApproval
// flag is a second, fail-closed source, so a policy bundle that forgets
// the obligation cannot let such a tool run unapproved.
func needsApproval(c *Call) bool {
	return c.Decision.Obligations.ApprovalRequired || c.Tool.RequiresApproval
}

// awaitApproval holds a call that needs a person's approval until one
// approves exactly this call (principal, tool, the audit row's argument
// hash, policy revision) through the admin API or an elicitation to the
// calling client's user (the client's Elicitor, when it declared the
// capability and is no agent's: personElicitor), and uses the approval, so that the call runs once. A
// rejection, an expiry and the want of anyone who could decide refuse it
// before anything is reserved or dispatched; the audit row names the
// approval. The wait does not count against the store budget of the
// steps before: the reservation after it gets a budget of its own.
func (pl *Pipeline) awaitApproval(ctx context.Context, c *Call) error {
	if !needsApproval(c) {
		return nil
	}
	if pl.Approvals == nil {
		msg := fmt.Sprintf("%s needs a person's approval before it runs, and this gateway takes no approvals; nothing ran; ask the operator to enable approvals", c.Tool.Name)
		return withDecision(&gateway.Error{Code: gateway.EForbidden, Message: msg,
			Reasons: []gateway.Reason{{Code: reasonApprovalsOff, Message: msg}}}, c.Decision)
	}
	// An approval request writes rows (the approval, the audit row) and
	// holds a waiting call without a rate-limit slot, so it counts against
	// the principal's refused-call budget, as a refusal does.
	if !pl.refusalAudited(c) {
		c.overRefusals = true
		return gateway.Errorf(gateway.ERateLimited,
			"%s needs a person's approval, and asking for one counts against the refused-call budget; wait a second and call again", c.Tool.Name)
	}
	c.refusalTaken = true
	because := slices.Clone(c.Decision.Obligations.ApprovalBecause)
	if len(because) == 0 {
		because = []string{"tool.requires_approval"} // the catalog's flag alone
	}
	// What the person is shown is what the audit row's hash covers: the
	// arguments without the confirmation token, canonical, whole.
	args, err := approvals.CanonicalArguments(withoutToken(c.Arguments))
	if err != nil {
		return gateway.Wrap(gateway.EInvalid, err, c.Tool.Name+": the arguments have no canonical JSON form to show for approval: "+err.Error())
	}
	// The wait ends when the request that carries the call is gone (the
	// client disconnected), though the call's own context is detached from
	// it: the approval stays pending and decidable, the call does not run,
	// and its audit row says the request ended (approval.pending).
	if carrier := gateway.CarrierFrom(ctx); carrier != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(carrier, cancel)()
	}
	a, err := pl.Approvals.Approve(ctx, approvals.Call{
		Principal: c.Principal, WorkspaceID: c.Event.WorkspaceID, Tool: c.Tool.Name, ArgumentsHash: c.Event.ArgumentsHash,
		PolicyRevision: c.Event.PolicyRevision, // the revision that decided, as the audit row names it
		Because:        because,
		Arguments:      args,
	}, personElicitor(ctx, c.Principal))
	if a != nil {
		c.Event.ApprovalID = a.ID
	}
	c.renewStoreBudget()
	return withDecision(withNotices(err, c.Decision), c.Decision)
}

// personElicitor is the calling client's Elicitor when a person may be
// behind it, nil otherwise. An agent's client (PrincipalAgent: an agent
// the server started, or an in-app agent) is the agent itself: asked, it
// would approve its own call, so only an approver on the admin approvals
// stream decides its calls (docs/requirements.md#cc-approval: a prompt with no responsible person
// connected is refused).
func personElicitor(ctx context.Context, p *gateway.Principal) wire.Elicitor {
	if p.Kind == gateway.PrincipalAgent {
		return nil
	}
	return wire.ElicitorFrom(ctx)
}
