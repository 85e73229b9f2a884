package server

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/adapters/ccdemo"
	"github.com/mcpgate/mcpgate/adapters/mcpupstream"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/gateway/callercache"
	"github.com/mcpgate/mcpgate/gateway/mcp"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
	"github.com/mcpgate/mcpgate/policies"
	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/search"
)

// CCServer is the cc_server surface (docs/requirements.md#cc-registry) of a gateway: a second
// pipeline.Pipeline value over the same store, metrics and transport code,
// with the cc_server catalog, its Rego package (data.ccserver), its
// callers (memberships) and its adapter. Handler serves POST /mcp
// (Streamable HTTP) and GET /sse with POST /messages (2024-11-05) on the
// listener of MCPGATE_CCSERVER_LISTEN.
type CCServer struct {
	Catalog *tools.Catalog
	// Policy decides the surface's calls (data.ccserver): the bundle of
	// MCPGATE_POLICY_DIR (or the embedded one) under the same gated hot
	// reload as the SupaCloud surface: watched, reloaded with it through
	// the admin API, and on every replica.
	Policy   *policy.Live
	JWT      *auth.JWT
	Pipeline *pipeline.Pipeline
	// Callers caches the users' memberships; every admin change drops it
	// whole (InvalidateAll), since a membership of any workspace can
	// change what a user reaches.
	Callers   *callercache.Cache
	Handler   http.Handler
	transport *mcp.Transport
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

// ccInstructions are sent at initialize on the cc_server surface.
const ccInstructions = "cc_server tools, authorized by mcpgate. tools/list offers the whole registry; list_my_tools and search_tool_bm25 say what is callable now in this conversation's mode."

// openCCServer builds the cc_server surface when MCPGATE_CCSERVER_LISTEN
// is set; a.CC stays nil otherwise.
func (a *App) openCCServer(ctx context.Context, log *zap.Logger, version string, deps Deps) error {
	cfg := a.Config
	if !cfg.CCServer.On() {
		return nil
	}
	cc := &CCServer{rules: &liveRules{}}
	var err error
	if cc.Catalog, err = tools.LoadCCServer(); err != nil {
		return fmt.Errorf("cc_server tool catalog: %w", err)
	}
	if cc.Policy, err = a.ccPolicy(ctx, log, cc); err != nil {
		return err
	}
	if cc.JWT, err = auth.NewJWT(auth.JWTConfig{
		Secret: cfg.JWTSecret, PublicKeyPEM: cfg.JWTPublicKeyPEM, Issuer: cfg.JWTIssuer, Audience: cfg.CCServer.JWTAudience,
	}); err != nil {
		return err
	}
	backend, err := a.ccAdapter(ctx, version)
	if err != nil {
		return err
	}
	cc.setRules(a, log, cc.Policy.Engine())
	cc.Callers = callercache.New(memberships{a.Store}, callercache.Options{TTL: cfg.CallerCacheTTL})
	cc.Pipeline = &pipeline.Pipeline{
		Store: a.Store, Callers: cc.Callers, Decider: cc.Policy, Catalog: cc.Catalog,
		Adapter: search.NewTools(backend, func(ctx context.Context, p *gateway.Principal, c *gateway.Caller, ws string) (map[string]bool, error) {
			return cc.Policy.Engine().VisibleIn(ctx, p, c, ws)
		}, cc.Callers, cc.Catalog),
		Logger: log, Metrics: a.Pipeline.Metrics, AuditArguments: cfg.AuditArguments,
		RateLimits: cc.rules, Refusals: pipeline.NewRefusalLimiter(cfg.RefusedCallsPerSecond),
		Surface: gateway.SurfaceCCServer, ListEveryTool: true, WorkspaceFromPolicy: true,
		Approvals: a.Pipeline.Approvals,
	}
	if a.DecisionLog != nil {
		cc.Pipeline.DecisionLog = a.DecisionLog.ForSurface(gateway.SurfaceCCServer)
	}
	deps.Pipeline = cc.Pipeline
	if cc.transport, err = newTransport(deps, auth.CCServer{J: cc.JWT}, "", ccInstructions); err != nil {
		return err
	}
	r := mux.NewRouter()
	r.Handle("/mcp", cc.transport)
	legacy := cc.transport.LegacyHandler(legacyMessagesPath)
	r.Handle(legacySSEPath, legacy)
	r.Handle(legacyMessagesPath, legacy)
	cc.Handler = r
	a.CC = cc
	a.closers = append(a.closers, func() error { cc.transport.Close(); return nil })
	log.Info("cc_server surface configured", zap.String("listen", cfg.CCServer.Listen), zap.Int("tools", cc.Catalog.Len()),
		zap.Int("calls_per_minute", a.ccLimits(cc.Policy.Engine()).CCServerCallsPerMinute))
	return nil
}

// ccPolicy compiles the cc_server bundle (data.ccserver) of
// MCPGATE_POLICY_DIR, or the embedded one, as a policy.Live of its own:
// reloads go through the same checks as the SupaCloud surface's, and after
// a swap the surface's open streams whose tool list changed are told. A
// folder without the cc_server package refuses to start, as before. The
// shadow candidate is the SupaCloud surface's only. A swap also rebuilds
// the surface's rate limits from the new revision's
// data.ccserver.limits.
func (a *App) ccPolicy(ctx context.Context, log *zap.Logger, cc *CCServer) (*policy.Live, error) {
	opts := engineOptions(a.Config, cc.Catalog)
	l, err := policy.NewLive(ctx, policy.LiveOptions{
		Engine: policy.Options{Surface: gateway.SurfaceCCServer, Edition: opts.Edition, Tools: opts.Tools, KeepInput: opts.KeepInput},
		Dir:    a.Config.PolicyDir, Embedded: policies.FS, Revision: policies.Revision,
		Logger: log, Observer: a.metrics,
		OnSwap: func(_, cur *policy.Engine) {
			cc.setRules(a, log, cur)
			if cc.transport != nil {
				cc.transport.RefreshTools(func(*gateway.Principal) bool { return true })
			}
		},
		OnAttempt: a.announcePolicy(log, gateway.SurfaceCCServer),
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
