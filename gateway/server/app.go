package server

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/adapters/bridge"
	"github.com/mcpgate/mcpgate/adapters/demo"
	"github.com/mcpgate/mcpgate/adapters/mcpupstream"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/approvals"
	"github.com/mcpgate/mcpgate/gateway/auditchain"
	"github.com/mcpgate/mcpgate/gateway/auditlog"
	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/gateway/callercache"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/confirm"
	"github.com/mcpgate/mcpgate/gateway/decisionlog"
	"github.com/mcpgate/mcpgate/gateway/metrics"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
	"github.com/mcpgate/mcpgate/gateway/postgres"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
	"github.com/mcpgate/mcpgate/gateway/replica"
	"github.com/mcpgate/mcpgate/gateway/sqlite"
	"github.com/mcpgate/mcpgate/policies"
	"github.com/mcpgate/mcpgate/tools"
)

// App is a fully wired gateway: the real assembly used by `mcpgate serve`
// and by the end-to-end tests.
type App struct {
	Config *config.Config
	Store  FullStore
	// Policy holds the policy engine that decides calls now and swaps in
	// a reloaded bundle once it passes its checks (MCPGATE_POLICY_DIR
	// watched; POST /admin/v1/policy/reload); with the shadow candidate
	// of MCPGATE_SHADOW_POLICY_DIR.
	Policy   *policy.Live
	Catalog  *tools.Catalog
	JWT      *auth.JWT
	Server   *Server
	Pipeline *pipeline.Pipeline
	// Callers caches what the request path loads about each caller for
	// Config.CallerCacheTTL; Server.WorkspaceChanged invalidates it.
	Callers *callercache.Cache
	// DecisionLog writes the decision log (MCPGATE_DECISION_LOG_FILE,
	// MCPGATE_DECISION_LOG_URL); nil when neither is set.
	DecisionLog *decisionlog.Logger
	// Feed hears the changes made through any replica and delivers them
	// to Server.Changes (its health: mcpgate_store_notify_connected).
	Feed replica.Listening
	// CC is the cc_server surface (MCPGATE_CCSERVER_LISTEN); nil when it
	// is off.
	CC *CCServer
	// Bridges are the bridged upstreams of MCPGATE_UPSTREAMS_FILE, by
	// surface (only surfaces that have some); nil without the file.
	Bridges map[string]*bridge.Bridge
	// Audit writes the audit events besides tool calls (docs/operations.md, "Audit trail")
	// off the request path, until the App closes.
	Audit *auditlog.Log
	// Keys is the identity provider's key set both surfaces' JWTs verify
	// with (MCPGATE_JWT_JWKS_URL, MCPGATE_JWT_DISCOVERY); nil without.
	Keys    *auth.JWKS
	closers []func() error
	// syncs keep each bridged surface's registry in step with its bridge
	// and the pins (upstreams.go); upstreamTools is their gauge.
	syncs         []*bridgedSync
	upstreamTools *prometheus.GaugeVec

	// metrics is the Prometheus observer of the request path and of the
	// policy; feed is how this replica hears the others (chosen with the
	// store); fanout asks every replica to reload when this one does and
	// runs the reloads they ask; policies are every surface's live policy
	// (admin reload, /readyz); policyCtx ends when the App closes, and
	// with it a reload still running; tested are the bundles whose tests
	// passed in this App, shared by its surfaces.
	metrics   *metrics.Metrics
	feed      replica.Feed
	fanout    *replica.Policies
	policies  *surfacePolicies
	policyCtx context.Context
	tested    *policy.TestedBundles
	// tracer starts the pipelines' spans when OTEL_EXPORTER_OTLP_ENDPOINT
	// configures traces (openTracing); nil: off.
	tracer trace.Tracer
}

// Open opens the store named by cfg.DatabaseURL and applies its migrations,
// loads the catalog, compiles the policy bundle (refusing to start when it
// does not compile), connects the adapter and builds the HTTP handler.
func Open(ctx context.Context, cfg *config.Config, log *zap.Logger, version string) (*App, error) {
	a := &App{Config: cfg}
	if err := a.open(ctx, log, version); err != nil {
		_ = a.Close()
		return nil, err
	}
	return a, nil
}

func (a *App) open(ctx context.Context, log *zap.Logger, version string) error {
	cfg := a.Config
	if err := a.checkUpstreamsFile(); err != nil {
		return err
	}
	if err := a.openStore(ctx); err != nil {
		return err
	}
	// Before the audit log, whose refusals before a call's span are
	// spans of their own.
	if err := a.openTracing(ctx, log, version); err != nil {
		return err
	}
	// Before the policies and the bridges: a shadow bundle loaded at the
	// start and a quarantine at a bridge's first listing are audit events.
	a.auditLog(log)
	reg := prometheus.NewRegistry()
	a.metrics, a.tested = metrics.New(reg), policy.NewTestedBundles(0)
	a.openFanout(log)
	var err error
	if a.Keys, err = a.openKeys(log, reg); err != nil {
		return err
	}
	if a.JWT, err = auth.NewJWT(auth.JWTConfig{
		Secret: cfg.JWTSecret, PublicKeyPEM: cfg.JWTPublicKeyPEM, Keys: a.Keys,
		Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience, Leeway: cfg.JWTLeeway,
	}); err != nil {
		return err
	}
	main, err := a.supacloudSurface(ctx, log, version)
	if err != nil {
		return err
	}
	if err := a.openDecisionLog(log, version); err != nil {
		return err
	}
	if a.CC, err = a.ccServerSurface(ctx, log, version); err != nil {
		return err
	}
	if err := a.openBridges(ctx, log, version, main, reg); err != nil {
		return err
	}
	surfaces := []*Surface{main}
	if a.CC != nil {
		surfaces = append(surfaces, a.CC.Surface)
	}
	approvals := a.approvals()
	a.policies = &surfacePolicies{}
	for _, sf := range surfaces {
		sf.Pipeline = a.surfacePipeline(sf, log, approvals)
		a.policies.lives = append(a.policies.lives, sf.Policy)
	}
	a.fanout.Lives = a.policies.lives
	a.Pipeline = main.Pipeline
	a.sweep(log)
	a.seal(log)
	answers := a.relayAnswers()
	if a.Server, err = New(a.deps(log, version, reg, surfaces, approvals, answers)); err != nil {
		return err
	}
	a.Server.Changes().OnTable(gateway.PinsTable, a.pinsChanged)
	a.closers = append(a.closers, func() error { a.Server.Close(); return nil })
	if a.Feed, err = a.listen(ctx, log, answers); err != nil {
		return err
	}
	replica.RegisterMetrics(reg, a.Feed)
	return a.watchPolicy(log)
}

// openStore opens the store of MCPGATE_DATABASE_URL, and the feed its
// replicas hear each other on, until the App closes.
func (a *App) openStore(ctx context.Context) error {
	store, feed, err := openStore(ctx, a.Config.DatabaseURL, a.Config.DatabaseMaxConns)
	if err != nil {
		return err
	}
	a.Store, a.feed = store, feed
	a.closers = append(a.closers, store.Close)
	return nil
}

// openFanout prepares the policy reloads asked of and by every replica
// (replica.Policies), ended with the App; the surfaces' live policies
// join it once built.
func (a *App) openFanout(log *zap.Logger) {
	policyCtx, cancelPolicy := context.WithCancel(context.Background())
	a.policyCtx = policyCtx
	a.closers = append(a.closers, func() error { cancelPolicy(); return nil })
	a.fanout = &replica.Policies{Feed: a.feed, Origin: replica.NewOrigin(), Secret: a.Config.SessionSecret,
		Retest: a.Config.PolicyRetestOnReplicas, Ctx: policyCtx, Log: log}
}

// policyAttempts is the OnAttempt of surface's policy: the fan-out of
// reloads asked for here to the other replicas, and one audit event of
// kind policy (actor gateway, tool policy.reload) per attempt this
// replica made, with its trigger, outcome, candidate revision and why a
// refused one was refused, except those POST /admin/v1/policy/reload
// asked for: the admin API records those as the write they are, with the
// person or token that asked. a.Audit is started before the policies
// (open).
func (a *App) policyAttempts(surface string) func(string, *policystatus.Attempt, error) {
	fan := a.fanout.OnAttempt(surface)
	return func(trigger string, at *policystatus.Attempt, err error) {
		fan(trigger, at, err)
		if trigger != policy.TriggerAdmin {
			a.recordPolicy(surface, "policy.reload", trigger, at)
		}
	}
}

// shadowAttempts is the OnShadow of surface's policy: each load of the
// shadow folder (a shadow start, at the gateway's start or on a reload)
// is an audit event of kind policy by the gateway, tool policy.shadow,
// with its trigger, outcome, revision and why a refused one was refused.
func (a *App) shadowAttempts(surface string) func(string, *policystatus.Attempt, error) {
	return func(trigger string, at *policystatus.Attempt, _ error) {
		a.recordPolicy(surface, "policy.shadow", trigger, at)
	}
}

// recordPolicy records the policy attempt at of surface as an audit event
// of kind policy by the gateway; status denied when it was refused.
func (a *App) recordPolicy(surface, tool, trigger string, at *policystatus.Attempt) {
	if a.Audit == nil || at == nil {
		return
	}
	status := gateway.AuditAllowed
	if at.Outcome == policystatus.Refused {
		status = gateway.AuditDenied
	}
	args, _ := json.Marshal(map[string]string{"trigger": trigger, "outcome": at.Outcome, "revision": at.Revision, "error": at.Error})
	a.Audit.Record(&gateway.AuditEvent{Kind: "policy", Actor: "gateway", Surface: surface, Tool: tool,
		Status: status, ReasonCodes: []string{"policy." + at.Outcome}, Arguments: args})
}

// supacloudSurface builds the SupaCloud surface: the catalog (with an
// upstream's tools merged in), the adapter, the policy over that catalog,
// the callers, the rate limits, and the endpoints /mcp (agent sessions)
// and /api/mcp (external coordinators' API tokens).
func (a *App) supacloudSurface(ctx context.Context, log *zap.Logger, version string) (*Surface, error) {
	cfg := a.Config
	sf := &Surface{Name: gateway.SurfaceSupaCloud}
	var err error
	if a.Catalog, err = tools.Load(); err != nil {
		return nil, fmt.Errorf("tool catalog: %w", err)
	}
	// The adapter comes before the engine: an upstream's tools join the
	// catalog, and the policy must range over the merged catalog.
	if sf.Adapter, err = a.adapter(ctx, log, version); err != nil {
		return nil, err
	}
	sf.Catalog = a.Catalog
	a.registry(sf)
	if a.Policy, err = NewPolicy(ctx, cfg, a.Catalog, policy.LiveOptions{
		Engine: policy.Options{ToolSet: sf.ToolSet},
		Logger: log, Observer: a.metrics,
		// After a swap, the open sessions whose tools/list changed are told
		// (list_changed), as after an admin change. a.Server is set before
		// any reload can run: the watch starts once it is, and the admin
		// API is its own.
		OnSwap: func(_, _ *policy.Engine) { a.Server.PolicyChanged() },
		// Each shadow flip is one decision log event of its own, marked
		// custom.shadow with both revisions. a.DecisionLog is set below,
		// before any call can be decided.
		OnFlip: a.logFlip(policy.Surface),
		// A reload asked for here is asked of every replica, and each
		// replica's attempt is an audit event.
		OnAttempt: a.policyAttempts(policy.Surface),
		OnShadow:  a.shadowAttempts(policy.Surface),
		Tested:    a.tested,
	}); err != nil {
		return nil, err
	}
	sf.Policy = a.Policy
	// The cache holds what RegisterTasks loaded, a newly registered task
	// included, so a new task costs one write, not one per call.
	a.Callers = callercache.New(pipeline.RegisterTasks(a.Store), callercache.Options{TTL: cfg.CallerCacheTTL})
	sf.Callers, sf.Limits = a.Callers, a.rateLimits()
	if sf.Confirmer, err = confirmer(cfg, log); err != nil {
		return nil, err
	}
	sf.Endpoints = supacloudEndpoints(a.JWT, auth.NewAPITokens(a.Store, log, nil))
	return sf, nil
}

// surfacePipeline is the request path of sf: its catalog, policy,
// adapter, callers, limits and flags over the App's store, metrics,
// decision log and approvals.
func (a *App) surfacePipeline(sf *Surface, log *zap.Logger, approvals *approvals.Service) *pipeline.Pipeline {
	cfg := a.Config
	pl := &pipeline.Pipeline{
		Store: a.Store, Callers: sf.Callers, Decider: sf.Policy, Catalog: sf.Catalog, Adapter: sf.Adapter,
		Registry: sf.Registry, Bridged: sf.Bridged,
		Logger: log, Metrics: a.metrics, AuditArguments: cfg.AuditArguments,
		RateLimits: sf.Limits, Refusals: pipeline.NewRefusalLimiter(cfg.RefusedCallsPerSecond),
		Confirmer: sf.Confirmer, Surface: sf.Name, ListEveryTool: sf.ListEveryTool, WorkspaceFromPolicy: sf.WorkspaceFromPolicy,
		Tracer: a.tracer,
	}
	pl.Approvals = approvals
	if a.DecisionLog != nil {
		pl.DecisionLog = a.DecisionLog.ForSurface(sf.Name)
	}
	return pl
}

// approvals is the service of the approvals a person decides, shared by
// every surface's pipeline and the admin API (the store contract includes
// the approvals part, so every store has them).
func (a *App) approvals() *approvals.Service {
	return approvals.New(a.Store, approvals.Options{TTL: a.Config.ApprovalTTL})
}

// deps are what New serves: the surfaces (the SupaCloud surface first),
// the admin API over the store, the probes, the session ends and relayed
// answers on the store's feed.
func (a *App) deps(log *zap.Logger, version string, reg *prometheus.Registry, surfaces []*Surface, approvalsSvc *approvals.Service, answers *replica.Answers) Deps {
	cfg, main := a.Config, surfaces[0]
	if len(cfg.SessionSecret) == 0 {
		log.Warn("MCPGATE_SESSION_SECRET is unset: MCP session ids are signed with a key of this process only, so another replica answers them 404 and they end when this process does; set the same ≥ 32-byte key on every replica")
	}
	d := Deps{Audit: a.Audit,
		Store: a.Store, Surfaces: surfaces, AdminToken: cfg.AdminToken,
		ConsoleUsers:  a.JWT.ConsoleUsers(),
		ValidateGrant: a.bridgedGrants(GrantValidator(a.Policy, a.Catalog)), Logger: log, Registry: reg, Policy: a.policies,
		MaxBodyBytes: cfg.MaxBodyBytes, AllowedOrigins: cfg.AllowedOrigins, Version: version,
		MaxBatchMessages: cfg.MaxBatchMessages, MaxBatchReplyBytes: cfg.MaxBatchReplyBytes, MaxHeldBodyBytes: cfg.MaxHeldBodyBytes,
		HTTP: cfg.HTTP, ProbesApart: cfg.MetricsListen != "", Pprof: cfg.Pprof, WriteTimeout: cfg.WriteTimeout, Callers: a.Callers,
		SessionSecret: cfg.SessionSecret, SessionEnds: replica.NewSessionEndCache(a.Store, 0, !a.feed.Shared()),
		Explain: a.explain(main), Keys: a.Keys, Traced: a.tracer != nil,
	}
	if approvalsSvc != nil {
		d.Approvals = approvalsSvc
	}
	if a.CC != nil { // every admin change drops the cc_server callers whole
		d.Callers = alsoDropAll{a.Callers, a.CC.Callers}
	}
	if g, ok := main.Adapter.(approvals.HumanGates); ok { // the demo backend; an upstream keeps its own
		d.Gates = g
	}
	if answers != nil { // the embedded store serves one process
		d.Answers = answers
	}
	if len(a.Bridges) > 0 {
		d.Upstreams = upstreamAdmin{a}
		d.Bridges = make(map[string]Bridged, len(a.Bridges))
		for sf, b := range a.Bridges {
			d.Bridges[sf] = b
		}
	}
	return d
}

// watchPolicy watches MCPGATE_POLICY_DIR (and the shadow folder) until the
// App closes. A folder that cannot be watched is logged: the gateway runs
// its bundle, and POST /admin/v1/policy/reload still reloads.
func (a *App) watchPolicy(log *zap.Logger) error {
	for _, l := range a.policies.lives {
		if err := l.Watch(a.policyCtx); err != nil {
			log.Warn("policy folder not watched; reload with `mcpgate policy reload` after a change",
				zap.String("surface", l.Surface()), zap.Error(err))
		}
	}
	return nil
}

// decisionLogFlush bounds how long closing the App waits for the decision
// log to write and upload what it still holds.
const decisionLogFlush = 5 * time.Second

// openDecisionLog starts the decision log when a sink is configured. The
// bundle must define the mask (data.system.log.mask): events are never
// written unmasked, so without one the gateway does not start.
func (a *App) openDecisionLog(log *zap.Logger, version string) error {
	dl := a.Config.DecisionLog
	if !dl.On() {
		return nil
	}
	if !a.Policy.HasMask() {
		return fmt.Errorf("MCPGATE_DECISION_LOG_FILE or MCPGATE_DECISION_LOG_URL is set, but the policy bundle defines no %s, and decision log events are never written unmasked; add the system/log folder of the built-in bundle (policies/system/log) to MCPGATE_POLICY_DIR, or unset both", policy.MaskQuery)
	}
	l, err := decisionlog.New(decisionlog.Options{
		File: dl.File, URL: dl.URL, Masker: a.Policy, Stats: a.metrics, Log: log, Version: version,
		BufferEvents: dl.BufferEvents, BufferBytes: dl.BufferBytes, Interval: dl.Interval,
	})
	if err != nil {
		return err
	}
	a.DecisionLog = l
	a.closers = append(a.closers, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), decisionLogFlush)
		defer cancel()
		return l.Close(ctx)
	})
	return nil
}

// relayAnswers are the client's answers to relayed requests passed
// between replicas through the store's table; nil when one process serves
// the store (the embedded store).
func (a *App) relayAnswers() *replica.Answers {
	relay := a.feed.Relay()
	if relay == nil {
		return nil
	}
	return replica.NewAnswers(relay)
}

// listen starts hearing what other replicas announce on the store's feed,
// until the App closes: changes (Server.Changes), policy reloads they ask
// for (replica.Policies.Requested), and the relayed answers they recorded
// (answers, when not nil). A feed that does not listen yet (PostgreSQL
// unreachable) keeps trying in the background, degraded.
func (a *App) listen(ctx context.Context, log *zap.Logger, answers *replica.Answers) (replica.Listening, error) {
	c := a.Server.Changes()
	c.OnPolicy(a.fanout.Requested)
	if answers != nil {
		c.OnAnswer(answers.Answered)
	}
	l, err := a.feed.Listen(ctx, c)
	if l == nil {
		return nil, err
	}
	a.closers = append(a.closers, l.Close)
	if err != nil {
		log.Warn("not yet hearing the changes of other replicas; retrying in the background", zap.Error(err))
	}
	return l, nil
}

// explain is the explainer of POST /admin/v1/explain over the App's
// store and each surface's registry (catalog and bridged tools), adapter
// (for resources) and callers;
// it explains with each surface's live engine (liveExplainer), so its
// decisions name the revision the surface's audit rows name.
func (a *App) explain(main *Surface) admin.Explainer {
	d := ExplainDeps{Store: a.Store, Surfaces: map[string]ExplainSurface{
		gateway.SurfaceSupaCloud: {Catalog: a.Catalog, Registry: main.Registry, Adapter: main.Adapter, Explainer: liveExplainer(a.Policy)},
	}}
	if a.CC != nil {
		d.Surfaces[gateway.SurfaceCCServer] = ExplainSurface{Catalog: a.CC.Catalog, Registry: a.CC.Registry, Adapter: a.CC.Adapter,
			Explainer: liveExplainer(a.CC.Policy), Callers: memberships{a.Store}}
	}
	return Explain(d)
}

// NewExplainSurface is the ExplainSurface of surface (gateway.SurfaceSupaCloud
// or gateway.SurfaceCCServer) outside a running gateway (`mcpgate policy
// explain`): the surface's catalog, the bundle the gateway would run
// (cfg.PolicyDir, else the embedded one) compiled on the first explain
// (policy.NewExplainer), and on cc_server the users' memberships from
// store. It has no backend, so records are not looked up (Notes say so).
func NewExplainSurface(ctx context.Context, cfg *config.Config, store FullStore, surface string) (ExplainSurface, error) {
	load, sf := tools.Load, ExplainSurface{}
	if surface == gateway.SurfaceCCServer {
		load, sf.Callers = tools.LoadCCServer, memberships{store}
	}
	cat, err := load()
	if err != nil {
		return sf, fmt.Errorf("%s tool catalog: %w", surface, err)
	}
	opts := engineOptions(cfg, cat)
	opts.Surface = surface
	sf.Catalog = cat
	sf.Explainer = sync.OnceValues(func() (*policy.Explainer, error) {
		x, err := policy.NewExplainer(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("policy bundle cannot explain decisions: %w", err)
		}
		return x, nil
	})
	return sf, nil
}

// rateLimits builds the rate-limit rules (docs/requirements.md#rate-limits)
// from cfg.Limits; the store's ended counters are swept with the other
// expired rows (sweep).
func (a *App) rateLimits() *ratelimit.Rules {
	rules := ratelimit.NewRules(RateLimits(a.Config.Limits))
	return &rules
}

// RateLimits are the configured caps as the rate limiter takes them.
func RateLimits(l config.Limits) ratelimit.Limits { return ratelimit.Limits(l) }

// confirmer returns the signer of deploy confirmation tokens, or nil with a
// warning when SUPACLOUD_MCP_CONFIRMATION_SECRET is unset: the deploy
// tools then fail closed (docs/requirements.md#deploy-confirmation).
func confirmer(cfg *config.Config, log *zap.Logger) (*confirm.Signer, error) {
	if len(cfg.ConfirmationSecret) == 0 {
		log.Warn("SUPACLOUD_MCP_CONFIRMATION_SECRET is unset: app.deploy and app.migration.apply are refused (fail closed) until it is set")
		return nil, nil
	}
	return confirm.NewSigner(cfg.ConfirmationSecret, nil)
}

// sweep is the one sweeper of expired rows: every sweepInterval until the
// App closes it deletes the rate-limit counters of ended windows and
// ended tasks (ratelimit.Sweep), the idempotency keys of tasks that
// reached a terminal state more than confirm.IdempotencyTTL ago
// (docs/requirements.md#deploy-confirmation), the records of ended MCP
// sessions whose ids no longer verify, expired console sessions, and on
// PostgreSQL the expired records of relayed requests (of replicas that
// stopped during a call).
func (a *App) sweep(log *zap.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	a.closers = append(a.closers, func() error { cancel(); return nil })
	go func() {
		tick := time.NewTicker(sweepInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if _, err := ratelimit.Sweep(ctx, a.Store, now); err != nil && ctx.Err() == nil {
					log.Warn("rate-limit counter sweep failed; ended windows stay in the table until the next sweep", zap.Error(err))
				}
				if _, err := a.Store.DeleteEndedIdempotencyKeys(ctx, now.Add(-confirm.IdempotencyTTL)); err != nil && ctx.Err() == nil {
					log.Warn("idempotency key sweep failed; the keys of ended tasks stay until the next sweep", zap.Error(err))
				}
				if _, err := a.Store.DeleteEndedSessions(ctx, now); err != nil && ctx.Err() == nil {
					log.Warn("ended-session sweep failed; records of ended MCP sessions stay until the next sweep", zap.Error(err))
				}
				if _, err := a.Store.DeleteEndedFlows(ctx, now, now.Add(-flowIdle)); err != nil && ctx.Err() == nil {
					log.Warn("flow history sweep failed; histories of ended tasks stay until the next sweep", zap.Error(err))
				}
				if keep := a.Config.Audit.Retention; keep > 0 {
					if _, _, err := a.Store.PruneAudit(ctx, now.Add(-keep)); err != nil && ctx.Err() == nil {
						log.Warn("audit retention sweep failed; the old rows stay until the next sweep", zap.Error(err))
					}
				}
				if _, err := a.Store.DeleteExpiredConsoleSessions(ctx, now); err != nil && ctx.Err() == nil {
					log.Warn("console session sweep failed; expired console sessions (never served) stay until the next sweep", zap.Error(err))
				}
				if relay := a.feed.Relay(); relay != nil {
					if _, err := relay.DeleteExpiredRelayAnswers(ctx, now); err != nil && ctx.Err() == nil {
						log.Warn("relayed-answer sweep failed; records of expired relayed requests stay until the next sweep", zap.Error(err))
					}
				}
			}
		}
	}()
}

// seal runs the audit chain's sealer (auditchain.Loop, a round every
// auditchain.Every) until the App closes; Close waits for the round
// under way, before the store closes. On PostgreSQL every replica runs
// it and the holder of the sealing lease seals. A failed round is
// logged at most every sealWarnEvery; the rows stay unsealed until a
// round succeeds. The same loop writes the chain's checkpoints
// (auditchain.Checkpointer, signed with MCPGATE_AUDIT_SIGNING_KEY_FILE's
// key; unset, unsigned, which it logs once).
func (a *App) seal(log *zap.Logger) {
	key := a.Config.Audit.SigningKey
	if key == nil {
		log.Warn("MCPGATE_AUDIT_SIGNING_KEY_FILE is unset: the audit chain's checkpoints are written unsigned, so they cannot prove the chain to someone who trusts only the key; see docs/configuration.md")
	} else {
		log.Info("audit checkpoints are signed", zap.String("key_id", auditchain.KeyID(key.Public().(ed25519.PublicKey))))
	}
	cp := &auditchain.Checkpointer{Store: a.Store, Key: key}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	a.closers = append(a.closers, func() error { cancel(); <-done; return nil })
	go func() {
		defer close(done)
		var warned, upkeepWarned time.Time
		auditchain.Loop(ctx, a.Store, cp, auditchain.Every, func(err error) {
			switch {
			case errors.Is(err, auditchain.ErrQueueUpkeep):
				if time.Since(upkeepWarned) >= sealWarnEvery {
					upkeepWarned = time.Now()
					log.Warn("audit rows sealed, but the upkeep of their queue failed; sealing goes on", zap.Error(err))
				}
			case time.Since(warned) >= sealWarnEvery:
				warned = time.Now()
				log.Warn("audit chain not sealed this round; the rows wait for the next (mcpgate audit verify shows the chain)", zap.Error(err))
			}
		})
	}()
}

// auditLog starts a.Audit (auditlog.Log.Run) over the store; Close
// writes what is queued before the store closes. Failed writes are
// logged at most every sealWarnEvery (the events are tried again).
func (a *App) auditLog(log *zap.Logger) {
	var warned time.Time
	a.Audit = auditlog.New(a.Store, auditlog.Options{Tracer: a.tracer, Failed: func(err error) {
		if time.Since(warned) >= sealWarnEvery {
			warned = time.Now()
			log.Warn("audit events not written yet; they are tried again", zap.Error(err))
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	a.closers = append(a.closers, func() error { cancel(); <-done; return nil })
	go func() {
		defer close(done)
		a.Audit.Run(ctx)
	}()
}

// sealWarnEvery bounds the warnings of failed sealing rounds (4 a second
// while the database is away).
const sealWarnEvery = 30 * time.Second

// sweepInterval is how often expired rows (ended rate-limit windows, …)
// are deleted; the rows are small and harmless, so once an hour is plenty.
const sweepInterval = time.Hour

// flowIdle is how long a flow history (docs/policy.md, "Flow rules") no
// call touched is kept: the key of an API token or a cc_server
// conversation has no end the gateway is told of, so a day without a
// call ends it; a task's history ends with the task.
const flowIdle = 24 * time.Hour

func (a *App) adapter(ctx context.Context, log *zap.Logger, version string) (pipeline.Adapter, error) {
	if a.Config.UpstreamURL == "" {
		return demo.New(), nil
	}
	up, err := mcpupstream.New(ctx, a.Config.UpstreamURL, mcpupstream.Options{ClientName: "mcpgate", ClientVersion: version})
	if err != nil {
		return nil, fmt.Errorf("MCPGATE_UPSTREAM_URL: %w", err)
	}
	a.closers = append(a.closers, up.Close)
	if err := a.mergeUpstreamTools(ctx, log, up); err != nil {
		return nil, err
	}
	return up, nil
}

// mergeUpstreamTools adds the tools the upstream lists at start, and the
// SupaCloud catalog does not, to a.Catalog with the tier of
// MCPGATE_UPSTREAM_TIER (tools.Catalog.WithUpstream). Tools whose schema the
// gateway cannot check are left out with a warning naming them.
func (a *App) mergeUpstreamTools(ctx context.Context, log *zap.Logger, up *mcpupstream.Adapter) error {
	listed, err := up.ListTools(ctx)
	if err != nil {
		return fmt.Errorf("MCPGATE_UPSTREAM_URL: listing the upstream's tools: %w", err)
	}
	for name, reason := range up.Excluded() {
		log.Warn("upstream tool not offered", zap.String("tool", name), zap.String("reason", reason))
	}
	ups := make([]tools.UpstreamTool, len(listed))
	for i, t := range listed {
		ups[i] = tools.UpstreamTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	}
	merged, dropped, err := a.Catalog.WithUpstream(ups, a.Config.UpstreamTier)
	if err != nil {
		return fmt.Errorf("MCPGATE_UPSTREAM_TIER: %w", err)
	}
	for _, d := range dropped {
		log.Warn("upstream tool not offered", zap.String("tool", d.Name), zap.String("reason", d.Reason))
	}
	log.Info("upstream tools merged into the catalog", zap.String("upstream", up.URL()),
		zap.Int("listed", len(listed)), zap.Int("catalog", merged.Len()), zap.Int("dropped", len(dropped)),
		zap.String("tier", string(a.Config.UpstreamTier)))
	a.Catalog = merged
	return nil
}

// Close releases everything Open acquired, newest first.
func (a *App) Close() error {
	var errs []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		errs = append(errs, a.closers[i]())
	}
	a.closers = nil
	return errors.Join(errs...)
}

// Both stores serve the request path, the admin API and the token lookups.
var (
	_ FullStore = (*postgres.Store)(nil)
	_ FullStore = (*sqlite.Store)(nil)
)

// OpenStore opens and migrates the store a database URL names:
// postgres://… (PostgreSQL) or sqlite:PATH (the embedded store).
func OpenStore(ctx context.Context, url string) (FullStore, error) {
	s, _, err := openStore(ctx, url, 0)
	return s, err
}

// openStore is OpenStore with a PostgreSQL pool of maxConns connections
// (0: postgres.DefaultMaxConns), and the feed through which the store's
// replicas hear each other: PostgreSQL's LISTEN/NOTIFY, or, for the
// embedded store that one process serves, the in-process one.
func openStore(ctx context.Context, url string, maxConns int) (FullStore, replica.Feed, error) {
	path, isSQLite, err := config.SQLitePath(url)
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("MCPGATE_DATABASE_URL=%w", err)
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		s, err := postgres.OpenWith(ctx, url, postgres.Options{MaxConns: maxConns})
		if err != nil {
			return nil, nil, err
		}
		if err := s.Migrate(ctx); err != nil {
			_ = s.Close()
			return nil, nil, err
		}
		return s, replica.Postgres{Store: s}, nil
	case isSQLite:
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			return nil, nil, err
		}
		if err := s.Migrate(ctx); err != nil {
			_ = s.Close()
			return nil, nil, err
		}
		return s, replica.Local{}, nil
	default:
		return nil, nil, fmt.Errorf("MCPGATE_DATABASE_URL: want postgres://… or sqlite:PATH")
	}
}

// logFlip logs each shadow flip of surface as a decision log event of
// its own, marked custom.shadow with both revisions. a.DecisionLog is set
// before any call can be decided.
func (a *App) logFlip(surface string) func(context.Context, policy.Flip) {
	return func(ctx context.Context, f policy.Flip) {
		if a.DecisionLog != nil {
			a.DecisionLog.ForSurface(surface).LogFlip(ctx, f.Live, f.Shadow, f.Tool, f.Direction)
		}
	}
}

// NewPolicy compiles the policy bundle, the embedded one or
// cfg.PolicyDir (which must pass its own tests), and the shadow candidate
// of cfg.ShadowPolicyDir, over the tools of cat; opts adds the logger,
// the observer and the hooks (its bundle fields are set here).
func NewPolicy(ctx context.Context, cfg *config.Config, cat *tools.Catalog, opts policy.LiveOptions) (*policy.Live, error) {
	e := engineOptions(cfg, cat)
	opts.Engine.Edition, opts.Engine.Tools, opts.Engine.KeepInput = e.Edition, e.Tools, e.KeepInput
	opts.Dir, opts.Embedded, opts.ShadowDir, opts.Revision = cfg.PolicyDir, policies.FS, cfg.ShadowPolicyDir, policies.Revision
	// A candidate without the mask would drop every event once live.
	opts.RequireMask = cfg.DecisionLog.On()
	l, err := policy.NewLive(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("policy bundle refused, the gateway does not start: %w%s", err, policyDirHint(cfg))
	}
	return l, nil
}

// policyDirHint says, after a bundle refused at start, what to do about
// the folder MCPGATE_POLICY_DIR names: it holds the whole bundle (every
// surface's package and the decision log mask), as the repository's
// policies/ folder does. "" for the embedded bundle.
func policyDirHint(cfg *config.Config) string {
	if cfg.PolicyDir == "" {
		return ""
	}
	return fmt.Sprintf("; fix the folder MCPGATE_POLICY_DIR=%s names: it must be laid out as a copy of the repository's policies/ folder (supacloud/, ccserver/ and system/ together), or unset it to run the built-in bundle", cfg.PolicyDir)
}

// NewEngine is the live engine of NewPolicy without hooks: the bundle as
// the gateway would compile it at start.
func NewEngine(ctx context.Context, cfg *config.Config, cat *tools.Catalog) (*policy.Engine, error) {
	l, err := NewPolicy(ctx, cfg, cat, policy.LiveOptions{})
	if err != nil {
		return nil, err
	}
	return l.Engine(), nil
}

// engineOptions are the engine's options for cfg: the embedded bundle or
// cfg.PolicyDir, the edition, the catalog's tools, and whether decisions
// keep their input (a decision log is on).
func engineOptions(cfg *config.Config, cat *tools.Catalog) policy.Options {
	var bundle fs.FS = policies.FS
	if cfg.PolicyDir != "" {
		bundle = os.DirFS(cfg.PolicyDir)
	}
	return policy.Options{FS: bundle, Edition: cfg.Edition, Tools: pipeline.ToolRefs(cat), KeepInput: cfg.DecisionLog.On()}
}

// Granter is what GrantValidator asks for the bundle's grants;
// *policy.Engine and *policy.Live implement it.
type Granter interface {
	Grants() (entries []string, toolPrefix string)
}

// GrantValidator returns a check for allowlist entries: an entry must grant
// something — one of the bundle's non-tool grants (tier wildcards, the full
// grant, group wildcards; policy.Engine.Grants) or a catalog tool by exact
// name or under the bundle's tool prefix — so a typo is refused with a 400
// instead of silently granting nothing.
//
// The grants are read from g on every check, so that after a policy
// reload entries are checked against the bundle that is live.
func GrantValidator(g Granter, cat *tools.Catalog) func(string) error {
	return func(entry string) error {
		entries, prefix := g.Grants()
		if slices.Contains(entries, entry) {
			return nil
		}
		if _, ok := cat.Lookup(entry); ok {
			return nil
		}
		if name, ok := strings.CutPrefix(entry, prefix); ok && prefix != "" {
			if _, ok := cat.Lookup(name); ok {
				return nil
			}
		}
		return gateway.Errorf(gateway.EInvalid, "allowlist entry %q grants nothing; use one of %s, or a tool name such as project.get (also as %sproject.get)",
			entry, strings.Join(entries, ", "), prefix)
	}
}

// The decision log takes the pipeline's decisions, masked by the engine,
// counted by the metrics.
var (
	_ pipeline.DecisionLog = (*decisionlog.Logger)(nil)
	_ decisionlog.Masker   = (*policy.Engine)(nil)
	_ decisionlog.Stats    = (*metrics.Metrics)(nil)
)

// Both stores give the request path the workspaces' external limits.
var (
	_ pipeline.ExternalLimitsStore = (*postgres.Store)(nil)
	_ pipeline.ExternalLimitsStore = (*sqlite.Store)(nil)
)

// The demo backend tells the request path the class of the gate an
// approval.decide call names (pipeline.ResourceResolver).
var _ pipeline.ResourceResolver = (*demo.Backend)(nil)
