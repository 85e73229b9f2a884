package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/tools"
)

// ExplainStore is what explaining a call reads of the store: the caller,
// as the request path loads it, and the audit trail (for the acting user
// when none is given). It writes nothing.
type ExplainStore interface {
	LoadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error)
	ListAuditEvents(ctx context.Context, f gateway.AuditFilter) ([]gateway.AuditEvent, error)
}

// ExplainAnswer is the reply of POST /admin/v1/explain and what `mcpgate
// policy explain` prints: the acting user explained, what the explanation
// had to assume (Notes), and the decision with its explanation.
type ExplainAnswer struct {
	User  string   `json:"user"`
	Notes []string `json:"notes"`
	*policy.Explanation
}

// ExplainDeps are what Explain composes.
type ExplainDeps struct {
	Store ExplainStore
	// Explainer returns the explainer of the running bundle, built once
	// (its error is returned to every request).
	Explainer func() (*policy.Explainer, error)
	Catalog   *tools.Catalog
	// Resolver looks up the record a call addresses (approval.decide's
	// gate), as the request path does; nil resolves nothing, which Notes
	// then say.
	Resolver pipeline.ResourceResolver
}

// Explain returns the admin.Explainer of POST /admin/v1/explain and
// `mcpgate policy explain`: it loads the session's caller from the store as
// the request path does (a task the store has not seen is explained as the
// gateway would register it on the first request: running; nothing is
// written), takes the policy arguments as the request path does
// (tools.Catalog.PolicyArguments), resolves the call's resource when the
// tool declares one, and decides and explains the call with the engine.
// Errors: EInvalid for an unknown tool, arguments that are not a JSON
// object, or no user when the task has no audited call; ENotFound for an
// unknown workspace; the engine's errors.
func Explain(d ExplainDeps) admin.Explainer {
	return func(ctx context.Context, req admin.ExplainRequest) (any, error) {
		return explainCall(ctx, d, req)
	}
}

func explainCall(ctx context.Context, d ExplainDeps, req admin.ExplainRequest) (*ExplainAnswer, error) {
	if err := admin.CheckExplainRequest(req); err != nil {
		return nil, err
	}
	tool, ok := d.Catalog.Lookup(req.Tool)
	if !ok {
		return nil, gateway.Errorf(gateway.EInvalid, "tool %q is not in the catalog, so the gateway answers it as an unknown tool before any policy runs; use a tool name from tools/list", req.Tool)
	}
	args, err := explainArgs(req.Args)
	if err != nil {
		return nil, err
	}
	x, err := d.Explainer()
	if err != nil {
		return nil, err
	}
	ans := &ExplainAnswer{User: req.User, Notes: []string{}}
	if ans.User == "" {
		evs, err := d.Store.ListAuditEvents(ctx, gateway.AuditFilter{WorkspaceID: req.Workspace, TaskID: req.Task, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 || evs[0].Actor == "" {
			return nil, gateway.Errorf(gateway.EInvalid, "task %s of workspace %s has no audited call, so its acting user is unknown; give the user (the session token's sub)", req.Task, req.Workspace)
		}
		ans.User = evs[0].Actor
		ans.Notes = append(ans.Notes, fmt.Sprintf("user %s is the actor of the task's latest audited call (%s)", ans.User, evs[0].Time.Format("2006-01-02T15:04:05Z07:00")))
	}
	p := &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: ans.User, WorkspaceID: req.Workspace, TaskID: req.Task, ProfileID: req.Profile}
	caller, err := d.Store.LoadCaller(ctx, p)
	if err != nil {
		return nil, err
	}
	if caller.Task == nil && caller.Member != nil {
		// What pipeline.RegisterTasks does on the first request, without
		// the write.
		c := *caller
		c.Task = &gateway.Task{WorkspaceID: req.Workspace, ID: req.Task, Status: gateway.TaskRunning}
		caller = &c
		ans.Notes = append(ans.Notes, fmt.Sprintf("task %s is not registered yet; explained as the gateway registers it on its first request: running", req.Task))
	}
	ref := policy.ToolRef{Name: tool.Name, Tier: tool.Tier, CarveOut: tool.CarveOut}
	if tool.Resource != nil {
		ref.Resource, err = explainResource(ctx, d.Resolver, req.Workspace, tool.Resource, args, &ans.Notes)
		if err != nil {
			return nil, err
		}
	}
	ex, err := x.Explain(ctx, p, caller, ref, d.Catalog.PolicyArguments(tool.Name, args))
	if err != nil {
		return nil, err
	}
	ans.Explanation = ex
	return ans, nil
}

// explainArgs decodes the arguments as the transport does (numbers kept
// exact).
func explainArgs(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var args map[string]any
	if err := dec.Decode(&args); err != nil {
		return nil, gateway.Wrap(gateway.EInvalid, err, "args must be a JSON object of the call's arguments, e.g. {\"slug\": \"nightly-report\"}")
	}
	return args, nil
}

// explainResource is the input.resource of the call: kind and id, and what
// the resolver tells of the record (pipeline: resolveResource).
func explainResource(ctx context.Context, r pipeline.ResourceResolver, ws string, ref *tools.ResourceRef, args map[string]any, notes *[]string) (map[string]string, error) {
	res := map[string]string{"kind": ref.Kind}
	id, _ := args[ref.IDArgument].(string)
	if id == "" {
		*notes = append(*notes, fmt.Sprintf("the call names no %s (argument %s), so the policy sees no record", ref.Kind, ref.IDArgument))
		return res, nil
	}
	res["id"] = id
	if r == nil {
		*notes = append(*notes, fmt.Sprintf("%s %s was not looked up (no backend here), so the policy sees only its id; POST /admin/v1/explain on the gateway resolves it", ref.Kind, id))
		return res, nil
	}
	attrs, found, err := r.ResolveResource(ctx, ws, ref.Kind, id)
	if err != nil {
		return nil, gateway.Wrap(gateway.EUnavailable, err, fmt.Sprintf("the backend could not look up %s %s; retry shortly", ref.Kind, id))
	}
	if !found {
		*notes = append(*notes, fmt.Sprintf("the backend has no %s %s in workspace %s", ref.Kind, id, ws))
	}
	for k, v := range attrs {
		if k != "kind" && k != "id" {
			res[k] = v
		}
	}
	return res, nil
}

// liveExplainer follows the live engine: the explainer of the engine that
// decides calls now, prepared on the first explain after each swap
// (explain is rare, and the request path does not need it), so an
// explained decision carries the live revision.
func liveExplainer(live *policy.Live) func() (*policy.Explainer, error) {
	var (
		mu sync.Mutex
		x  *policy.Explainer
	)
	return func() (*policy.Explainer, error) {
		e := live.Engine()
		mu.Lock()
		defer mu.Unlock()
		if x != nil && x.Engine() == e {
			return x, nil
		}
		nx, err := e.Explainer(context.Background())
		if err != nil {
			return nil, fmt.Errorf("policy bundle cannot explain decisions: %w", err)
		}
		x = nx
		return x, nil
	}
}
