package pipeline

import (
	"context"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/tools"
)

// dryRunSteps are the first steps of callSteps, the ones that only read:
// the catalog entry, the caller and the addressed record. A dry run
// (DryRun) takes them and no other; the session's history is loaded as a
// call would see it, so an explanation shows the taint.
var dryRunSteps = []step{
	(*Pipeline).resolveTool,
	(*Pipeline).loadCaller,
	(*Pipeline).resolveResource,
	(*Pipeline).loadSession,
}

// DryRun takes the first steps of a tools/call of tool with args by p
// (dryRunSteps) and returns the call's state: Tool, Caller and Resource as
// the request path sees them before it decides. It reserves nothing,
// writes no audit row, tells no decision log and dispatches nothing; the
// caller is loaded through pl.Callers (else RegisterTasks(pl.Store), which
// registers a new task: give a loader that writes nothing). The policy
// explanation (POST /admin/v1/explain, `mcpgate policy explain`) decides
// on this state. Errors are the steps' own.
func (pl *Pipeline) DryRun(ctx context.Context, p *gateway.Principal, tool string, args map[string]any) (*Call, error) {
	c := pl.newCall(ctx, p, &gateway.CallRequest{Name: tool, Arguments: args})
	defer func() {
		if c.storeCancel != nil {
			c.storeCancel()
		}
	}()
	for _, s := range dryRunSteps {
		if err := s(pl, ctx, c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// ToolRef is what the policy is told of catalog tool t (input.tool, and
// one entry of input.tools), with the attributes resource of the record a
// call addresses (nil for none). Every decision, explanation and engine
// tool list takes its references from here.
func ToolRef(t *tools.Tool, resource map[string]string) policy.ToolRef {
	return policy.ToolRef{Name: t.Name, Tier: t.Tier, CarveOut: t.CarveOut,
		Group: t.Group, RequiresApproval: t.RequiresApproval, ActionClasses: t.ActionClasses, Resource: resource,
		Upstream: t.Upstream, UpstreamAnnotations: t.UpstreamAnnotations}
}

// ToolRefs are the references of every tool of cat, in catalog order
// (policy.Options.Tools).
func ToolRefs(cat *tools.Catalog) []policy.ToolRef {
	refs := make([]policy.ToolRef, 0, cat.Len())
	for _, t := range cat.Tools() {
		refs = append(refs, ToolRef(&t, nil))
	}
	return refs
}
