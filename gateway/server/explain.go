package server

import (
	"bytes"
	"cmp"
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
// policy explain` prints: the surface and the acting user explained, what
// the explanation had to assume (Notes), and the decision with its
// explanation.
type ExplainAnswer struct {
	Surface string   `json:"surface"`
	User    string   `json:"user"`
	Notes   []string `json:"notes"`
	*policy.Explanation
}

// ExplainSurface is what explaining a call of one surface composes: the
// parts of the surface's request path that decide it.
type ExplainSurface struct {
	// Explainer returns the explainer of the surface's running bundle,
	// built once (its error is returned to every request).
	Explainer func() (*policy.Explainer, error)
	Catalog   *tools.Catalog
	// Registry, when set, is the surface's registry (Catalog with the
	// bridged tools on top, docs/requirements.md#bridged-tools): a call is
	// explained against its tools now, a quarantined tool refused as the
	// request path refuses it. nil explains against Catalog alone.
	Registry *tools.Registry
	// Adapter looks up the record a call addresses (approval.decide's
	// gate, a cc_server ticket's workspace) when it is a
	// pipeline.ResourceResolver, as the request path does; it is never
	// called. nil resolves nothing, which Notes then say.
	Adapter pipeline.Adapter
	// Callers loads the caller as the surface's request path does,
	// writing nothing (cc_server: the user's memberships); nil loads an
	// agent task session's caller with ExplainDeps.Store.
	Callers pipeline.CallerLoader
}

// ExplainDeps are what Explain composes.
type ExplainDeps struct {
	Store ExplainStore
	// Surfaces are the surfaces a call may be explained on, by name
	// (gateway.SurfaceSupaCloud, gateway.SurfaceCCServer): each is
	// explained the same way, with its own parts.
	Surfaces map[string]ExplainSurface
}

// Explain returns the admin.Explainer of POST /admin/v1/explain and
// `mcpgate policy explain`: it runs the request path's own first steps in
// a dry run (pipeline.Pipeline.DryRun: the catalog entry, the caller, the
// addressed record; no reservation, no audit row, no dispatch) on the
// surface the request names and decides and explains the call with that
// surface's engine on their state. The caller is loaded from the store
// without registering anything: a task the store has not seen is
// explained as the gateway would register it on the first request
// (running). Errors: EInvalid for a surface not served, an unknown tool,
// arguments that are not a JSON object, or no user when the task has no
// audited call; ENotFound for an unknown workspace; the engine's errors.
func Explain(d ExplainDeps) admin.Explainer {
	return func(ctx context.Context, req admin.ExplainRequest) (any, error) {
		return explainCall(ctx, d, req)
	}
}

func explainCall(ctx context.Context, d ExplainDeps, req admin.ExplainRequest) (*ExplainAnswer, error) {
	if err := admin.CheckExplainRequest(req); err != nil {
		return nil, err
	}
	name := cmp.Or(req.Surface, gateway.SurfaceSupaCloud)
	sf, ok := d.Surfaces[name]
	if !ok {
		return nil, gateway.Errorf(gateway.EInvalid, "this gateway does not serve the %s surface, so its calls cannot be explained here; start it with that surface on (cc_server: MCPGATE_CCSERVER_LISTEN)", name)
	}
	cat := sf.Catalog
	if sf.Registry != nil {
		cat = sf.Registry.Catalog()
	}
	if _, ok := cat.Lookup(req.Tool); !ok {
		return nil, gateway.Errorf(gateway.EInvalid, "tool %q is not in the catalog of the %s surface, so the gateway answers it as an unknown tool before any policy runs; use a tool name from tools/list", req.Tool, name)
	}
	args, err := explainArgs(req.Args)
	if err != nil {
		return nil, err
	}
	x, err := sf.Explainer()
	if err != nil {
		return nil, err
	}
	ans := &ExplainAnswer{Surface: name, User: req.User, Notes: []string{}}
	p, err := explainPrincipal(ctx, d.Store, name, req, ans)
	if err != nil {
		return nil, err
	}
	callers := &explainCallers{l: sf.Callers, notes: &ans.Notes}
	if callers.l == nil {
		callers.l = d.Store
	}
	// The dry run loads the session's history as the call would
	// (pipeline.Pipeline.Flows), with the workspace the call acts in
	// (WorkspaceFromPolicy on cc_server) and the bundle's own switch
	// (its engine, a pipeline.FlowScope), so that the explanation shows
	// the taint.
	flows, _ := d.Store.(pipeline.FlowStore)
	dry := &pipeline.Pipeline{Catalog: cat, Registry: sf.Registry, Callers: callers, Surface: name, Flows: flows,
		Decider: x.Engine(), WorkspaceFromPolicy: name == gateway.SurfaceCCServer}
	resolver, _ := sf.Adapter.(pipeline.ResourceResolver)
	if resolver != nil {
		dry.Adapter = explainResolver{r: resolver, notes: &ans.Notes}
	}
	c, err := dry.DryRun(ctx, p, req.Tool, args)
	if callers.err != nil { // the store's own error (ENotFound for an unknown workspace), not the wire's
		return nil, callers.err
	}
	if err != nil {
		return nil, err
	}
	if ref := c.Tool.Resource; ref != nil && resolver == nil && c.Resource["id"] != "" {
		ans.Notes = append(ans.Notes, fmt.Sprintf("%s %s was not looked up (no backend here), so the policy sees only its id; POST /admin/v1/explain on the gateway resolves it", ref.Kind, c.Resource["id"]))
	}
	if ref := c.Tool.Resource; ref != nil && c.Resource["id"] == "" {
		ans.Notes = append(ans.Notes, fmt.Sprintf("the call names no %s (argument %s), so the policy sees no record", ref.Kind, ref.IDArgument))
	}
	ex, err := x.Explain(ctx, p, c.Caller, c.ToolRef(), cat.PolicyArguments(c.Tool.Name, args))
	if err != nil {
		return nil, err
	}
	ans.Explanation = ex
	return ans, nil
}

// explainPrincipal is the principal of req on surface, as its credential
// would give it: on cc_server the claims the request names (kind, by
// default user; mode; a server-started agent's workspace; the run's
// ticket), on SupaCloud an agent task session whose acting user, when
// req names none, is the actor of the task's latest audited call.
func explainPrincipal(ctx context.Context, s ExplainStore, surface string, req admin.ExplainRequest, ans *ExplainAnswer) (*gateway.Principal, error) {
	if surface == gateway.SurfaceCCServer {
		kind := gateway.PrincipalKind(cmp.Or(req.Kind, string(gateway.PrincipalUser)))
		return &gateway.Principal{Kind: kind, Subject: req.User, WorkspaceID: req.Workspace, Mode: req.Mode, TicketID: req.Ticket}, nil
	}
	if ans.User == "" {
		evs, err := s.ListAuditEvents(ctx, gateway.AuditFilter{WorkspaceID: req.Workspace, TaskID: req.Task, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 || evs[0].Actor == "" {
			return nil, gateway.Errorf(gateway.EInvalid, "task %s of workspace %s has no audited call, so its acting user is unknown; give the user (the session token's sub)", req.Task, req.Workspace)
		}
		ans.User = evs[0].Actor
		ans.Notes = append(ans.Notes, fmt.Sprintf("user %s is the actor of the task's latest audited call (%s)", ans.User, evs[0].Time.Format("2006-01-02T15:04:05Z07:00")))
	}
	return &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: ans.User, WorkspaceID: req.Workspace, TaskID: req.Task, ProfileID: req.Profile}, nil
}

// explainCallers loads the caller of an explanation's dry run with l and
// registers nothing: a task the store has not seen is given as
// pipeline.RegisterTasks would register it on the first request, and
// Notes say so. err keeps the store's error.
type explainCallers struct {
	l     pipeline.CallerLoader
	notes *[]string
	err   error
}

func (l *explainCallers) LoadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error) {
	caller, err := l.l.LoadCaller(ctx, p)
	if err != nil {
		l.err = err
		return nil, err
	}
	if caller.Task == nil && caller.Member != nil {
		c := *caller
		c.Task = &gateway.Task{WorkspaceID: p.WorkspaceID, ID: p.TaskID, Status: gateway.TaskRunning}
		caller = &c
		*l.notes = append(*l.notes, fmt.Sprintf("task %s is not registered yet; explained as the gateway registers it on its first request: running", p.TaskID))
	}
	return caller, nil
}

// explainResolver is the adapter of an explanation's dry run: it looks
// records up through r and notes the ones r does not have. A dry run
// dispatches nothing, so CallTool is never called.
type explainResolver struct {
	r     pipeline.ResourceResolver
	notes *[]string
}

func (e explainResolver) ResolveResource(ctx context.Context, ws, kind, id string) (map[string]string, bool, error) {
	attrs, found, err := e.r.ResolveResource(ctx, ws, kind, id)
	if err == nil && !found {
		*e.notes = append(*e.notes, fmt.Sprintf("the backend has no %s %s in workspace %s", kind, id, ws))
	}
	return attrs, found, err
}

func (explainResolver) CallTool(context.Context, gateway.ToolCall) (*gateway.ToolResult, error) {
	return nil, gateway.Errorf(gateway.EInternal, "an explanation dispatches nothing")
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
