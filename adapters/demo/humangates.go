package demo

import (
	"context"
	"errors"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
)

var _ approvals.HumanGates = (*Backend)(nil)

// ListGates returns every gate of workspaceID (the records approvals.list
// lists while they wait), waiting and decided, in the order they opened.
// Unlike approvals.list it shows task gates' prompts: its readers are the
// workspace's people, who decide in SupaCloud what the agents may not.
// Errors: EUnavailable when ctx is done.
func (b *Backend) ListGates(ctx context.Context, workspaceID string) ([]approvals.Gate, error) {
	if err := ctx.Err(); err != nil {
		return nil, gateway.Wrap(gateway.EUnavailable, err, "demo backend: listing the human gates was cancelled")
	}
	w := b.workspace(workspaceID)
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]approvals.Gate, 0, len(w.approvals))
	for _, a := range w.approvals {
		out = append(out, *a)
	}
	return out, nil
}

// DecideGate lets a person decide any gate of workspaceID, the ones
// approval.decide refuses a machine included (tool, visual, tier_change,
// workflow human gates), on the same path: the decision is recorded and
// the paused task or workflow run resumes. Errors are *gateway.Error:
// ENotFound, EConflict (already decided), EInvalid (not approve or reject,
// a question approved without an answer, no DecidedBy), EUnavailable when
// ctx is done.
func (b *Backend) DecideGate(ctx context.Context, workspaceID, id string, d approvals.GateDecision) (approvals.Gate, error) {
	if err := ctx.Err(); err != nil {
		return approvals.Gate{}, gateway.Wrap(gateway.EUnavailable, err, "demo backend: the decision was cancelled before it was recorded")
	}
	w := b.workspace(workspaceID)
	w.mu.Lock()
	defer w.mu.Unlock()
	a := find(w.approvals, func(a *approval) bool { return a.ID == id })
	if a == nil {
		return approvals.Gate{}, gateError(notFound("gate", id))
	}
	t, err := w.decide(a, d, b.now().UTC())
	if err != nil {
		return approvals.Gate{}, gateError(err)
	}
	g := *a
	if t != nil {
		g.TaskStatus = t.Status
	}
	if rn := w.runByID(a.RunID); rn != nil {
		g.RunStatus = rn.Status
	}
	return g, nil
}

// gateError turns a refusal into the *gateway.Error of its code.
func gateError(err error) error {
	var te *toolError
	if errors.As(err, &te) {
		return gateway.Errorf(te.code, "%s", te.msg)
	}
	return err
}
