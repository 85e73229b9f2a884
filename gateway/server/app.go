package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/adapters/demo"
	"github.com/mcpgate/mcpgate/adapters/mcpupstream"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/approvals"
	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/gateway/callercache"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/confirm"
	"github.com/mcpgate/mcpgate/gateway/decisionlog"
	"github.com/mcpgate/mcpgate/gateway/metrics"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/postgres"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
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
	// Feed announces changes made through any replica to Server.Changes.
	Feed ChangeFeed
	// CC is the cc_server surface (MCPGATE_CCSERVER_LISTEN); nil when it
	// is off.
	CC      *CCServer
	closers []func() error

	// metrics is the Prometheus observer of the request path and of the
	// policy; origin names this process in the policy reload requests it
	// announces; policies are every surface's live policy (admin reload,
	// /readyz, reload requests of other replicas); policyCtx ends when
	// the App closes, and with it a reload still running; tested are the
	// bundles whose tests passed in this App, shared by its surfaces.
	metrics   *metrics.Metrics
	origin    string
	policies  *surfacePolicies
	policyCtx context.Context
	tested    *policy.TestedBundles
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
	store, err := openStore(ctx, cfg.DatabaseURL, cfg.DatabaseMaxConns)
	if err != nil {
		return err
	}
	a.Store = store
	a.closers = append(a.closers, store.Close)
	if a.Catalog, err = tools.Load(); err != nil {
		return fmt.Errorf("tool catalog: %w", err)
	}
	// The adapter comes before the engine: an upstream's tools join the
	// catalog, and the policy must range over the merged catalog.
	adapter, err := a.adapter(ctx, log, version)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	obs := metrics.New(reg)
	a.metrics, a.origin, a.tested = obs, newOrigin(), policy.NewTestedBundles(0)
	policyCtx, cancelPolicy := context.WithCancel(context.Background())
	a.policyCtx = policyCtx
	a.closers = append(a.closers, func() error { cancelPolicy(); return nil })
	if a.Policy, err = NewPolicy(ctx, cfg, a.Catalog, policy.LiveOptions{
		Logger: log, Observer: obs,
		// After a swap, the open sessions whose tools/list changed are told
		// (list_changed), as after an admin change. a.Server is set before
		// any reload can run: the watch starts once it is, and the admin
		// API is its own.
		OnSwap: func(_, _ *policy.Engine) { a.Server.PolicyChanged() },
		// Each shadow flip is one decision log event of its own, marked
		// custom.shadow with both revisions. a.DecisionLog is set below,
		// before any call can be decided.
		OnFlip: func(ctx context.Context, f policy.Flip) {
			if a.DecisionLog != nil {
				a.DecisionLog.LogFlip(ctx, f.Live, f.Shadow, f.Tool, f.Direction)
			}
		},
		// A reload asked for here is asked of every replica.
		OnAttempt: a.announcePolicy(log, policy.Surface),
		Tested:    a.tested,
	}); err != nil {
		return err
	}
	a.policies = &surfacePolicies{lives: []*policy.Live{a.Policy}}
	if a.JWT, err = auth.NewJWT(auth.JWTConfig{
		Secret: cfg.JWTSecret, PublicKeyPEM: cfg.JWTPublicKeyPEM,
		Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience,
	}); err != nil {
		return err
	}
	if err := a.openDecisionLog(log, obs, version); err != nil {
		return err
	}
	// The cache holds what RegisterTasks loaded, a newly registered task
	// included, so a new task costs one write, not one per call.
	a.Callers = callercache.New(pipeline.RegisterTasks(store), callercache.Options{TTL: cfg.CallerCacheTTL})
	a.Pipeline = &pipeline.Pipeline{
		Store: store, Callers: a.Callers, Decider: a.Policy, Catalog: a.Catalog, Adapter: adapter,
		Logger: log, Metrics: obs, AuditArguments: cfg.AuditArguments,
		RateLimits: a.rateLimits(log), Refusals: pipeline.NewRefusalLimiter(cfg.RefusedCallsPerSecond),
	}
	if a.DecisionLog != nil {
		a.Pipeline.DecisionLog = a.DecisionLog
	}
	if a.Pipeline.Confirmer, err = confirmer(cfg, log); err != nil {
		return err
	}
	var approvalsAPI admin.Approvals
	if as, ok := store.(approvals.Store); ok { // both stores are
		svc := approvals.New(as, approvals.Options{TTL: cfg.ApprovalTTL})
		a.Pipeline.Approvals, approvalsAPI = svc, svc
	}
	a.sweepIdempotencyKeys(log)
	if len(cfg.SessionSecret) == 0 {
		log.Warn("MCPGATE_SESSION_SECRET is unset: MCP session ids are signed with a key of this process only, so another replica answers them 404 and they end when this process does; set the same ≥ 32-byte key on every replica")
	}
	deps := Deps{
		Store: store, Pipeline: a.Pipeline, Auth: a.JWT, APIAuth: auth.NewAPITokens(store, log, nil), AdminToken: cfg.AdminToken,
		ConsoleUsers:  a.JWT.ConsoleUsers(),
		ValidateGrant: GrantValidator(a.Policy, a.Catalog), Logger: log, Registry: reg, Policy: a.policies,
		MaxBodyBytes: cfg.MaxBodyBytes, AllowedOrigins: cfg.AllowedOrigins, Version: version,
		MaxBatchMessages: cfg.MaxBatchMessages, MaxBatchReplyBytes: cfg.MaxBatchReplyBytes, MaxHeldBodyBytes: cfg.MaxHeldBodyBytes,
		HTTP: cfg.HTTP, ProbesApart: cfg.MetricsListen != "", Pprof: cfg.Pprof, WriteTimeout: cfg.WriteTimeout, Callers: a.Callers,
		SessionSecret: cfg.SessionSecret, SessionEnds: sessionEnds(store), Explain: a.explain(adapter),
		Approvals: approvalsAPI,
	}
	if g, ok := adapter.(approvals.HumanGates); ok { // the demo backend; an upstream keeps its own
		deps.Gates = g
	}
	var answers *storeAnswers
	if pg, ok := store.(*postgres.Store); ok { // the embedded store serves one process
		answers = newStoreAnswers(pg)
		deps.Answers = answers
	}
	a.Server, err = New(deps)
	if err != nil {
		return err
	}
	a.closers = append(a.closers, func() error { a.Server.Close(); return nil })
	if err := a.openCCServer(ctx, log, version, deps); err != nil {
		return err
	}
	if a.CC != nil {
		a.Server.callers = alsoDropAll{a.Server.callers, a.CC.Callers}
		a.policies.lives = append(a.policies.lives, a.CC.Policy)
	}
	a.Server.changes.policy = func(r gateway.PolicyRequest) { a.policyRequested(log, r) }
	if answers != nil {
		a.Server.changes.answered = answers.answered
	}
	if a.Feed, err = a.changeFeed(ctx, log); err != nil {
		return err
	}
	registerFeed(reg, a.Feed)
	return a.watchPolicy(log)
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
func (a *App) openDecisionLog(log *zap.Logger, m *metrics.Metrics, version string) error {
	dl := a.Config.DecisionLog
	if !dl.On() {
		return nil
	}
	if !a.Policy.HasMask() {
		return fmt.Errorf("MCPGATE_DECISION_LOG_FILE or MCPGATE_DECISION_LOG_URL is set, but the policy bundle defines no %s, and decision log events are never written unmasked; add the system/log folder of the built-in bundle (policies/system/log) to MCPGATE_POLICY_DIR, or unset both", policy.MaskQuery)
	}
	l, err := decisionlog.New(decisionlog.Options{
		File: dl.File, URL: dl.URL, Masker: a.Policy, Stats: m, Log: log, Version: version,
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

// listenWait bounds how long Open waits for the first LISTEN; past it the
// gateway starts anyway, degraded, and the listener keeps trying.
const listenWait = 5 * time.Second

// sessionEnds is the SessionEndCache over store: on PostgreSQL it keeps
// answers once the listener hears the ends made through other replicas
// (its first Resync); the embedded store (one process) sees every end
// pass through End, so it keeps them from the start.
func sessionEnds(store SessionEndStore) *SessionEndCache {
	_, shared := store.(*postgres.Store)
	return NewSessionEndCache(store, 0, !shared)
}

// changeFeed starts hearing the changes made through other replicas: on
// PostgreSQL a listener on the shared database, closed with the App; on
// the embedded store (one process) the admin API's own announcements.
func (a *App) changeFeed(ctx context.Context, log *zap.Logger) (ChangeFeed, error) {
	pg, ok := a.Store.(*postgres.Store)
	if !ok {
		return localFeed{a.Server}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, listenWait)
	defer cancel()
	l, err := pg.Listen(ctx, a.Server.Changes(), postgres.ListenOptions{})
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
// store, catalog and adapter (for resources); it explains with the live
// engine (liveExplainer), so its decisions name the live revision.
func (a *App) explain(adapter pipeline.Adapter) admin.Explainer {
	resolver, _ := adapter.(pipeline.ResourceResolver)
	return Explain(ExplainDeps{Store: a.Store, Catalog: a.Catalog, Resolver: resolver, Explainer: liveExplainer(a.Policy)})
}

// NewExplainer compiles the bundle NewEngine would and prepares its
// explanation query (policy.NewExplainer).
func NewExplainer(ctx context.Context, cfg *config.Config, cat *tools.Catalog) (*policy.Explainer, error) {
	x, err := policy.NewExplainer(ctx, engineOptions(cfg, cat))
	if err != nil {
		return nil, fmt.Errorf("policy bundle cannot explain decisions: %w", err)
	}
	return x, nil
}

// rateLimits builds the rate-limit rules (docs/requirements.md#rate-limits) from cfg.Limits, and
// sweeps the audit store's ended counters every sweepInterval until the
// App closes.
func (a *App) rateLimits(log *zap.Logger) *ratelimit.Rules {
	rules := ratelimit.NewRules(RateLimits(a.Config.Limits))
	ctx, cancel := context.WithCancel(context.Background())
	ratelimit.NewStore(a.Store, "", nil).Sweeper(ctx, sweepInterval, func(err error) {
		log.Warn("rate-limit counter sweep failed; ended windows stay in the table until the next sweep", zap.Error(err))
	})
	a.closers = append(a.closers, func() error { cancel(); return nil })
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

// sweepIdempotencyKeys deletes, every sweepInterval until the App closes,
// the idempotency keys of tasks that reached a terminal state more than
// confirm.IdempotencyTTL ago (docs/requirements.md#deploy-confirmation),
// the records of ended MCP sessions whose ids no longer verify, expired
// console sessions, and on PostgreSQL the expired records of relayed
// requests (of replicas that stopped during a call).
func (a *App) sweepIdempotencyKeys(log *zap.Logger) {
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
				if _, err := a.Store.DeleteEndedIdempotencyKeys(ctx, now.Add(-confirm.IdempotencyTTL)); err != nil && ctx.Err() == nil {
					log.Warn("idempotency key sweep failed; the keys of ended tasks stay until the next sweep", zap.Error(err))
				}
				if _, err := a.Store.DeleteEndedSessions(ctx, now); err != nil && ctx.Err() == nil {
					log.Warn("ended-session sweep failed; records of ended MCP sessions stay until the next sweep", zap.Error(err))
				}
				if _, err := a.Store.DeleteExpiredConsoleSessions(ctx, now); err != nil && ctx.Err() == nil {
					log.Warn("console session sweep failed; expired console sessions (never served) stay until the next sweep", zap.Error(err))
				}
				if pg, ok := a.Store.(*postgres.Store); ok {
					if _, err := pg.DeleteExpiredRelayAnswers(ctx, now); err != nil && ctx.Err() == nil {
						log.Warn("relayed-answer sweep failed; records of expired relayed requests stay until the next sweep", zap.Error(err))
					}
				}
			}
		}
	}()
}

// sweepInterval is how often ended rate-limit windows are deleted; the
// rows are small and harmless, so once an hour is plenty.
const sweepInterval = time.Hour

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
		ups[i] = tools.UpstreamTool(t)
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
	return openStore(ctx, url, 0)
}

// openStore is OpenStore with a PostgreSQL pool of maxConns connections
// (0: postgres.DefaultMaxConns).
func openStore(ctx context.Context, url string, maxConns int) (FullStore, error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		s, err := postgres.OpenWith(ctx, url, postgres.Options{MaxConns: maxConns})
		if err != nil {
			return nil, err
		}
		if err := s.Migrate(ctx); err != nil {
			_ = s.Close()
			return nil, err
		}
		return s, nil
	case strings.HasPrefix(url, "sqlite:"):
		s, err := sqlite.Open(ctx, strings.TrimPrefix(url, "sqlite:"))
		if err != nil {
			return nil, err
		}
		if err := s.Migrate(ctx); err != nil {
			_ = s.Close()
			return nil, err
		}
		return s, nil
	default:
		return nil, fmt.Errorf("MCPGATE_DATABASE_URL: want postgres://… or sqlite:PATH")
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
	refs := make([]policy.ToolRef, 0, cat.Len())
	for _, t := range cat.Tools() {
		refs = append(refs, policy.ToolRef{Name: t.Name, Tier: t.Tier, CarveOut: t.CarveOut})
	}
	return policy.Options{FS: bundle, Edition: cfg.Edition, Tools: refs, KeepInput: cfg.DecisionLog.On()}
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
