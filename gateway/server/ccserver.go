package server

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/adapters/ccdemo"
	"github.com/mcpgate/mcpgate/adapters/mcpupstream"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/gateway/callercache"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
	"github.com/mcpgate/mcpgate/policies"
	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/search"
)

// CCServer is the cc_server surface (docs/requirements.md#cc-registry) of a
// gateway: a Surface of its own over the same store, metrics and
// transport code, with the cc_server catalog, its Rego package
// (data.ccserver), its callers (memberships), its adapter (the search
// tools in front of its backend) and its rate limits. Once New opened it,
// Handler serves POST /mcp (Streamable HTTP) and GET /sse with POST
// /messages (2024-11-05) on the listener of MCPGATE_CCSERVER_LISTEN.
//
// Its Policy decides the surface's calls: the bundle of
// MCPGATE_POLICY_DIR (or the embedded one) under the same gated hot
// reload as the SupaCloud surface: watched, reloaded with it through the
// admin API, and on every replica. Its Callers cache the users'
// memberships; every admin change drops them whole (InvalidateAll), since
// a membership of any workspace can change what a user reaches.
type CCServer struct {
	*Surface
	JWT *auth.JWT
	// rules are the surface's rate limits, rebuilt after every swap of
	// its policy (data.ccserver.limits).
	rules *liveRules
}

// liveRules are rate-limit rules swapped atomically while calls plan
// with them (pipeline.RatePlanner).
type liveRules struct {
	p atomic.Pointer[ratelimit.Rules]
}

// Plan implements pipeline.RatePlanner with the current rules.
func (r *liveRules) Plan(s ratelimit.Subject, now time.Time) (ratelimit.Plan, error) {
	return r.p.Load().Plan(s, now)
}

// ccLimits are the rate limits of the cc_server surface under the policy
// engine e: the configured ones, with the per-principal cap of
// MCPGATE_CCSERVER_CALLS_PER_MINUTE, else e's
// data.ccserver.limits.calls_per_minute (else the default of
// ratelimit.NewRules).
func (a *App) ccLimits(e *policy.Engine) gateway.RateLimits {
	limits := a.Config.Limits
	if limits.CCServerCallsPerMinute == 0 {
		limits.CCServerCallsPerMinute, _ = e.LimitInt("calls_per_minute")
	}
	return limits
}

// setRules makes the rate limits of e's policy the surface's, and says
// so when the per-principal cap changed.
func (cc *CCServer) setRules(a *App, log *zap.Logger, e *policy.Engine) {
	limits := a.ccLimits(e)
	rules := ratelimit.NewRules(RateLimits(limits))
	if old := cc.rules.p.Swap(&rules); old != nil && a.Config.Limits.CCServerCallsPerMinute == 0 {
		log.Info("cc_server calls_per_minute follows the live policy", zap.String("revision", e.Revision()),
			zap.Int("calls_per_minute", a.ccLimits(cc.Policy.Engine()).CCServerCallsPerMinute))
	}
}

// ccServerSurface builds the cc_server surface when
// MCPGATE_CCSERVER_LISTEN is set (nil otherwise): its catalog, policy,
// credential, adapter, callers, rate limits and listener; New opens it
// with the others.
func (a *App) ccServerSurface(ctx context.Context, log *zap.Logger, version string) (*CCServer, error) {
	cfg := a.Config
	if !cfg.CCServer.On() {
		return nil, nil
	}
	cc := &CCServer{Surface: &Surface{Name: gateway.SurfaceCCServer, ListEveryTool: true, WorkspaceFromPolicy: true, Listen: cfg.CCServer.Listen},
		rules: &liveRules{}}
	var err error
	if cc.Catalog, err = tools.LoadCCServer(); err != nil {
		return nil, fmt.Errorf("cc_server tool catalog: %w", err)
	}
	a.registry(cc.Surface)
	if cc.Policy, err = a.ccPolicy(ctx, log, cc); err != nil {
		return nil, err
	}
	if cc.JWT, err = auth.NewJWT(auth.JWTConfig{
		Secret: cfg.JWTSecret, PublicKeyPEM: cfg.JWTPublicKeyPEM, Keys: a.Keys, Issuer: cfg.JWTIssuer, Audience: cfg.CCServer.JWTAudience,
		Leeway: cfg.JWTLeeway,
	}); err != nil {
		return nil, err
	}
	backend, err := a.ccAdapter(ctx, version)
	if err != nil {
		return nil, err
	}
	cc.setRules(a, log, cc.Policy.Engine())
	cc.Limits = cc.rules
	cc.Callers = callercache.New(memberships{a.Store}, callercache.Options{TTL: cfg.CallerCacheTTL})
	reg := cc.Registry
	if reg == nil {
		reg = tools.NewRegistry(cc.Catalog)
	}
	cc.Adapter = search.NewRegistryTools(backend, func(ctx context.Context, p *gateway.Principal, c *gateway.Caller, ws string) (map[string]bool, error) {
		return cc.Policy.Engine().VisibleIn(ctx, p, c, ws)
	}, cc.Callers, reg, func(name, group string) string { return cc.Policy.Engine().BridgedGroup(name, group) })
	cc.Endpoints = []Endpoint{{Path: "/mcp", Auth: auth.CCServer{J: cc.JWT}, Instructions: ccInstructions, Legacy: true}}
	log.Info("cc_server surface configured", zap.String("listen", cfg.CCServer.Listen), zap.Int("tools", cc.Catalog.Len()),
		zap.Int("calls_per_minute", a.ccLimits(cc.Policy.Engine()).CCServerCallsPerMinute))
	return cc, nil
}

// ccPolicy compiles the cc_server bundle (data.ccserver) of
// MCPGATE_POLICY_DIR, or the embedded one, as a policy.Live of its own:
// reloads go through the same checks as the SupaCloud surface's, and after
// a swap the surface's open streams whose tool list changed are told. A
// folder without the cc_server package refuses to start, as before. The
// shadow candidate is MCPGATE_SHADOW_POLICY_DIR's data.ccserver, under the
// same lifecycle as SupaCloud's (its flips are decision log events of
// path ccserver/decision). A swap also rebuilds the surface's rate limits
// from the new revision's data.ccserver.limits.
func (a *App) ccPolicy(ctx context.Context, log *zap.Logger, cc *CCServer) (*policy.Live, error) {
	opts := engineOptions(a.Config, cc.Catalog)
	l, err := policy.NewLive(ctx, policy.LiveOptions{
		Engine: policy.Options{Surface: gateway.SurfaceCCServer, Edition: opts.Edition, Tools: opts.Tools, KeepInput: opts.KeepInput, ToolSet: cc.ToolSet},
		Dir:    a.Config.PolicyDir, Embedded: policies.FS, Revision: policies.Revision,
		ShadowDir: a.Config.ShadowPolicyDir, OnFlip: a.logFlip(gateway.SurfaceCCServer),
		RequireMask: a.Config.DecisionLog.On(),
		Logger:      log, Observer: a.metrics,
		OnSwap: func(_, cur *policy.Engine) {
			cc.setRules(a, log, cur)
			cc.RefreshTools(func(*gateway.Principal) bool { return true })
		},
		OnAttempt: a.policyAttempts(gateway.SurfaceCCServer),
		OnShadow:  a.shadowAttempts(gateway.SurfaceCCServer),
		Tested:    a.tested,
	})
	if err != nil {
		return nil, fmt.Errorf("cc_server policy bundle refused, the gateway does not start: %w%s", err, policyDirHint(a.Config))
	}
	return l, nil
}

// ccAdapter is the cc_server backend: the in-memory demo, or a real
// cc_server through the MCP upstream adapter (MCPGATE_CCSERVER_UPSTREAM_URL).
func (a *App) ccAdapter(ctx context.Context, version string) (pipeline.Adapter, error) {
	url := a.Config.CCServer.UpstreamURL
	if url == "" {
		return ccdemo.New(), nil
	}
	up, err := mcpupstream.New(ctx, url, mcpupstream.Options{ClientName: "mcpgate", ClientVersion: version})
	if err != nil {
		return nil, fmt.Errorf("MCPGATE_CCSERVER_UPSTREAM_URL: %w", err)
	}
	a.closers = append(a.closers, up.Close)
	return up, nil
}

// memberships loads a cc_server caller: the user's workspaces from the
// members table (callercache.Loader).
type memberships struct{ s FullStore }

func (m memberships) LoadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error) {
	return m.s.LoadMemberships(ctx, p)
}

// alsoDropAll invalidates the main callers as asked and the cc_server
// callers whole on every change: a user's memberships span workspaces.
type alsoDropAll struct {
	main CallerInvalidator
	cc   *callercache.Cache
}

func (i alsoDropAll) InvalidateWorkspace(ws string) {
	if i.main != nil {
		i.main.InvalidateWorkspace(ws)
	}
	i.cc.InvalidateAll()
}

func (i alsoDropAll) InvalidateAll() {
	if i.main != nil {
		i.main.InvalidateAll()
	}
	i.cc.InvalidateAll()
}

var (
	_ pipeline.ResourceResolver = (*search.Tools)(nil)
	_ search.Resolver           = (pipeline.ResourceResolver)(nil)
	_ pipeline.ResourceResolver = (*ccdemo.Backend)(nil)
	_ callercache.Loader        = memberships{}
)
