// Package config reads, defaults and validates mcpgate's configuration from
// the environment in one place (docs/configuration.md), before anything starts.
package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// Config is the validated configuration of one gateway process.
type Config struct {
	// Listen is the HTTP address (MCPGATE_LISTEN, default 127.0.0.1:8080).
	Listen string
	// DatabaseURL is postgres://… or sqlite:PATH (MCPGATE_DATABASE_URL,
	// default sqlite:mcpgate.db).
	DatabaseURL string
	// Edition is SUPACLOUD_EDITION (default community); other values refuse to start.
	Edition gateway.Edition
	// AdminToken enables /admin/v1 when non-empty (MCPGATE_ADMIN_TOKEN).
	AdminToken string
	// JWTSecret is the HS256 key (MCPGATE_JWT_SECRET, ≥ 32 bytes).
	JWTSecret []byte
	// JWTPublicKeyPEM is the content of MCPGATE_JWT_PUBLIC_KEY_FILE.
	JWTPublicKeyPEM []byte
	// JWTIssuer (MCPGATE_JWT_ISSUER) is required in "iss" when set.
	JWTIssuer string
	// JWTJWKSURL (MCPGATE_JWT_JWKS_URL) is an identity provider's key set
	// that verifies agent and cc_server JWTs instead of a secret or key
	// file (docs/operations.md, "Identity provider").
	JWTJWKSURL string
	// JWTDiscovery (MCPGATE_JWT_DISCOVERY=true) finds the key set from
	// JWTIssuer's OpenID configuration instead.
	JWTDiscovery bool
	// JWTAudience (MCPGATE_JWT_AUDIENCE, default mcpgate) is required in "aud".
	JWTAudience string
	// JWTLeeway is the clock skew tolerated on a JWT's exp, nbf and iat
	// (MCPGATE_JWT_LEEWAY, a Go duration from 0 to MaxJWTLeeway, default
	// DefaultJWTLeeway); 0 tolerates none.
	JWTLeeway time.Duration
	// ConfirmationSecret is SUPACLOUD_MCP_CONFIRMATION_SECRET (≥ 32 bytes
	// when set; unset ⇒ deploy confirmation fails closed).
	ConfirmationSecret []byte
	// SessionSecret is MCPGATE_SESSION_SECRET (≥ 32 bytes): the HMAC key
	// of MCP session ids, which replicas must share to serve each other's
	// sessions; it also seals the policy test passes replicas announce.
	// Unset: a random key per process (App warns), so a session is served
	// only by the process that opened it and ends with it, and no pass is
	// sealed (every replica runs its own tests).
	SessionSecret []byte
	// UpstreamURL (MCPGATE_UPSTREAM_URL) replaces the demo backend.
	UpstreamURL string
	// UpstreamTier (MCPGATE_UPSTREAM_TIER, default ops) is the tier given to
	// tools the upstream lists that the SupaCloud catalog does not know, so
	// that policy grants them like any tool of that tier (its wildcard, the
	// exact name, or supacloud.<name>). One of baseline, read, ops or deploy:
	// scaffold tools need a proposal/task-spawn limit kind (docs/requirements.md#workspace-profile-caps)
	// that an upstream cannot declare. baseline makes the tools
	// always on for every session.
	UpstreamTier gateway.Tier
	// Upstreams configures the bridged upstreams (upstreams.go).
	Upstreams Upstreams
	// PolicyDir (MCPGATE_POLICY_DIR) loads policies from a folder instead of
	// the embedded bundle; the folder is watched, and a change goes live
	// once it passes its checks (docs/policy.md, "Reloading").
	PolicyDir string
	// ShadowPolicyDir (MCPGATE_SHADOW_POLICY_DIR) names a candidate
	// bundle decided beside the live one on every tools/call and never
	// enforced (shadow mode); empty turns it off.
	ShadowPolicyDir string
	// PolicyRetestOnReplicas (MCPGATE_POLICY_RETEST_ON_REPLICAS=true)
	// makes a replica run its candidate's own tests on a reload another
	// replica announced even when its folder holds the bytes that replica
	// tested and passed (off: it compiles them and skips the tests;
	// docs/policy.md, "Reloading").
	PolicyRetestOnReplicas bool
	// LogFormat is "json" (default) or "console" (MCPGATE_LOG_FORMAT).
	LogFormat string
	// AuditArguments turns on argument logging in audit rows
	// (MCPGATE_AUDIT_ARGUMENTS=true); off, rows hold only a hash.
	AuditArguments bool
	// MaxBodyBytes limits request bodies (MCPGATE_MAX_BODY_BYTES, default 1 MiB).
	MaxBodyBytes int64
	// MaxBatchMessages is the most messages one JSON-RPC batch may hold
	// (MCPGATE_MAX_BATCH_MESSAGES, default 100); a larger batch is refused
	// whole.
	MaxBatchMessages int
	// MaxBatchReplyBytes is the reply budget of one POST in bytes
	// (MCPGATE_MAX_BATCH_REPLY_BYTES, default 4 MiB): once a batch's
	// responses reach it, its later requests are refused without running.
	MaxBatchReplyBytes int64
	// MaxHeldBodyBytes bounds the bytes of request bodies the MCP
	// transports hold at once, summed over all requests still running
	// (MCPGATE_MAX_HELD_BODY_BYTES, default 256 MiB); a POST beyond it
	// gets HTTP 503 with Retry-After.
	MaxHeldBodyBytes int64
	// AllowedOrigins lists browser origins allowed on the MCP endpoints
	// (MCPGATE_ALLOWED_ORIGINS, comma separated; none by default).
	AllowedOrigins []string
	// CallerCacheTTL is how long the request path reuses a caller it
	// loaded from the store (workspace, member, profiles, seat type, org
	// plan, overrides, task): MCPGATE_CALLER_CACHE_TTL, a Go duration such
	// as 500ms, default DefaultCallerCacheTTL, at most MaxCallerCacheTTL;
	// 0 turns the cache off. A change through this process's admin API
	// takes effect on the next call whatever the value; the TTL bounds how
	// long a change made elsewhere (another replica, the database
	// directly) may go unseen here.
	CallerCacheTTL time.Duration
	// HTTP holds the public URL, OAuth authorization servers and allowed
	// Host names of the MCP endpoints (http.go).
	HTTP
	// Conn holds the timeouts and the connection cap of the listeners
	// (conn.go).
	Conn
	// MetricsListen is the address, host:port, of a second listener that
	// serves /metrics, /healthz and /readyz instead of the main one
	// (MCPGATE_METRICS_LISTEN). Empty (the default): they are served on
	// Listen.
	MetricsListen string
	// Pprof serves Go's runtime profiles (net/http/pprof) under
	// /debug/pprof/ on the metrics listener (MCPGATE_PPROF=true), as OPA's
	// --pprof does; it needs MetricsListen, so profiles never reach the
	// public port. Off by default.
	Pprof bool
	// DecisionLog configures the decision log sinks (decisionlog.go).
	DecisionLog DecisionLog
	// Audit configures the audit chain's signed checkpoints (audit.go).
	Audit Audit
	// Limits are the rate limits of docs/requirements.md#rate-limits, and the
	// cc_server per-principal cap (CCServer.CallsPerMinute).
	Limits Limits
	// CCServer configures the cc_server surface (ccserver.go).
	CCServer CCServer
	// DatabaseMaxConns is the PostgreSQL pool size, idle connections
	// included (MCPGATE_DATABASE_MAX_CONNS, default 20).
	DatabaseMaxConns int
	// RefusedCallsPerSecond is how many tools/call refused before dispatch
	// one principal may have audited per second, with bursts of four
	// times that (MCPGATE_REFUSED_CALLS_PER_SECOND, default 5); refusals
	// above it are answered as rate limited without an audit row.
	RefusedCallsPerSecond int
	// ApprovalTTL is how long a call that needs a person's approval waits
	// for a decision before its approval expires and the call is refused
	// (MCPGATE_APPROVAL_TTL, a Go duration, default DefaultApprovalTTL,
	// from 1s to MaxApprovalTTL).
	ApprovalTTL time.Duration
}

// DefaultJWTLeeway is JWTLeeway when MCPGATE_JWT_LEEWAY is unset: within
// the 0–60 s other verifiers default to (OPA's io.jwt.decode_verify 0,
// Keycloak and Spring Security 60 s), enough for hosts kept in time by
// NTP, which drift by well under a second, and for the delay between the
// platform minting a token and the gateway first seeing it; a stolen
// token outlives its exp by this much at most.
const DefaultJWTLeeway = 30 * time.Second

// MaxJWTLeeway is the largest JWTLeeway accepted (the default of
// Microsoft's token validation): beyond it, fix the clocks instead.
const MaxJWTLeeway = 5 * time.Minute

// DefaultApprovalTTL is ApprovalTTL when MCPGATE_APPROVAL_TTL is unset.
const DefaultApprovalTTL = 10 * time.Minute

// MaxApprovalTTL is the longest ApprovalTTL accepted: the call (and its
// client's request) waits that long at most.
const MaxApprovalTTL = 24 * time.Hour

// Limits holds the rate-limit caps of docs/requirements.md#rate-limits, each overridable by its
// environment variable (gateway.RateLimits).
type Limits = gateway.RateLimits

// DefaultLimits returns the defaults of docs/requirements.md#rate-limits.
func DefaultLimits() Limits { return gateway.DefaultRateLimits() }

// DefaultCallerCacheTTL is CallerCacheTTL when MCPGATE_CALLER_CACHE_TTL
// is unset.
const DefaultCallerCacheTTL = time.Second

// MaxCallerCacheTTL is the largest CallerCacheTTL accepted: a change made
// through any replica must take effect on every replica within 1 s, and
// until changes are announced between replicas the TTL is what bounds it.
const MaxCallerCacheTTL = time.Second

// Load reads the configuration through getenv (os.Getenv in production) and
// returns every problem at once, each naming its variable.
func Load(getenv func(string) string) (*Config, error) {
	r := reader{getenv: getenv}
	c := &Config{
		Listen:             r.str("MCPGATE_LISTEN", "127.0.0.1:8080"),
		DatabaseURL:        r.str("MCPGATE_DATABASE_URL", DefaultDatabaseURL),
		Edition:            gateway.Edition(r.str("SUPACLOUD_EDITION", "community")),
		AdminToken:         getenv("MCPGATE_ADMIN_TOKEN"),
		JWTSecret:          []byte(getenv("MCPGATE_JWT_SECRET")),
		JWTIssuer:          getenv("MCPGATE_JWT_ISSUER"),
		JWTJWKSURL:         getenv("MCPGATE_JWT_JWKS_URL"),
		JWTDiscovery:       r.boolean("MCPGATE_JWT_DISCOVERY"),
		JWTAudience:        r.str("MCPGATE_JWT_AUDIENCE", "mcpgate"),
		UpstreamURL:        getenv("MCPGATE_UPSTREAM_URL"),
		UpstreamTier:       gateway.Tier(r.str("MCPGATE_UPSTREAM_TIER", string(gateway.TierOps))),
		PolicyDir:          getenv("MCPGATE_POLICY_DIR"),
		ShadowPolicyDir:    getenv("MCPGATE_SHADOW_POLICY_DIR"),
		LogFormat:          r.str("MCPGATE_LOG_FORMAT", "json"),
		AuditArguments:     r.boolean("MCPGATE_AUDIT_ARGUMENTS"),
		MaxBodyBytes:       int64(r.positive("MCPGATE_MAX_BODY_BYTES", 1<<20)),
		MaxBatchMessages:   r.positive("MCPGATE_MAX_BATCH_MESSAGES", 100),
		MaxBatchReplyBytes: int64(r.positive("MCPGATE_MAX_BATCH_REPLY_BYTES", 4<<20)),
		MaxHeldBodyBytes:   int64(r.positive("MCPGATE_MAX_HELD_BODY_BYTES", 256<<20)),
		AllowedOrigins:     splitList(getenv("MCPGATE_ALLOWED_ORIGINS")),
		ConfirmationSecret: []byte(getenv("SUPACLOUD_MCP_CONFIRMATION_SECRET")),
		SessionSecret:      []byte(getenv("MCPGATE_SESSION_SECRET")),
	}
	c.Limits = r.limits()
	c.PolicyRetestOnReplicas = r.boolean("MCPGATE_POLICY_RETEST_ON_REPLICAS")
	c.DatabaseMaxConns = r.positive("MCPGATE_DATABASE_MAX_CONNS", 20)
	c.RefusedCallsPerSecond = r.positive("MCPGATE_REFUSED_CALLS_PER_SECOND", 5)
	c.CallerCacheTTL = r.callerCacheTTL()
	c.ApprovalTTL = r.duration("MCPGATE_APPROVAL_TTL", DefaultApprovalTTL)
	c.JWTLeeway = r.jwtLeeway()
	c.loadHTTP(&r)
	c.loadConn(&r)
	c.loadDecisionLog(&r)
	c.loadAudit(&r)
	c.loadCCServer(&r)
	c.loadUpstreams(&r)
	if f := getenv("MCPGATE_JWT_PUBLIC_KEY_FILE"); f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			r.fail("MCPGATE_JWT_PUBLIC_KEY_FILE: cannot read %s: %v", f, err)
		}
		c.JWTPublicKeyPEM = pem
	}
	c.validate(&r)
	if len(r.errs) > 0 {
		return nil, errors.New("invalid configuration:\n  " + strings.Join(r.errs, "\n  "))
	}
	return c, nil
}

func (c *Config) validate(r *reader) {
	if c.Edition != gateway.EditionCommunity && c.Edition != gateway.EditionEnterprise {
		r.fail("SUPACLOUD_EDITION=%q: must be community or enterprise (the edition is fail-closed)", c.Edition)
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		r.fail("MCPGATE_LISTEN=%q: want host:port (%v)", c.Listen, err)
	}
	if _, isSQLite, err := SQLitePath(c.DatabaseURL); err != nil {
		r.fail("MCPGATE_DATABASE_URL=%v", err)
	} else if !isSQLite && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		r.fail("MCPGATE_DATABASE_URL: want postgres://… or sqlite:PATH")
	}
	switch {
	case c.identityProvider(r): // checked there
	case len(c.JWTSecret) > 0 && len(c.JWTPublicKeyPEM) > 0:
		r.fail("MCPGATE_JWT_SECRET and MCPGATE_JWT_PUBLIC_KEY_FILE are both set; choose one key")
	case len(c.JWTSecret) == 0 && len(c.JWTPublicKeyPEM) == 0:
		r.fail("MCPGATE_JWT_SECRET (HS256, ≥ 32 bytes, e.g. $(openssl rand -hex 32)) or MCPGATE_JWT_PUBLIC_KEY_FILE (PEM) is required to verify agent session tokens; for a local trial, mcpgate serve --dev (make run) generates the keys")
	case len(c.JWTSecret) > 0 && len(c.JWTSecret) < 32:
		r.fail("MCPGATE_JWT_SECRET is %d bytes; it must be at least 32 (e.g. openssl rand -hex 32)", len(c.JWTSecret))
	}
	if c.ApprovalTTL < time.Second || c.ApprovalTTL > MaxApprovalTTL {
		r.fail("MCPGATE_APPROVAL_TTL=%s: want a duration from 1s to %s (default %s)", c.ApprovalTTL, MaxApprovalTTL, DefaultApprovalTTL)
	}
	if n := len(c.ConfirmationSecret); n > 0 && n < 32 {
		r.fail("SUPACLOUD_MCP_CONFIRMATION_SECRET is %d bytes; it must be at least 32 (unset it to make deploy confirmation fail closed)", n)
	}
	if n := len(c.SessionSecret); n > 0 && n < 32 {
		r.fail("MCPGATE_SESSION_SECRET is %d bytes; it must be at least 32 (e.g. openssl rand -hex 32)", n)
	}
	if c.LogFormat != "json" && c.LogFormat != "console" {
		r.fail("MCPGATE_LOG_FORMAT=%q: want json or console", c.LogFormat)
	}
	if c.UpstreamURL != "" && !strings.HasPrefix(c.UpstreamURL, "http://") && !strings.HasPrefix(c.UpstreamURL, "https://") {
		// The value is not repeated: its password or query may hold a key.
		r.fail("MCPGATE_UPSTREAM_URL: want an http:// or https:// URL of an MCP server (the value starts %q)", scheme(c.UpstreamURL))
	}
	switch c.UpstreamTier {
	case gateway.TierBaseline, gateway.TierRead, gateway.TierOps, gateway.TierDeploy:
	default:
		r.fail("MCPGATE_UPSTREAM_TIER=%q: want read, ops, deploy or baseline (the tier of upstream tools the SupaCloud catalog does not list; scaffold is not possible because it needs a rate-limit kind)", c.UpstreamTier)
	}
	for _, d := range []struct{ name, dir, unset string }{
		{"MCPGATE_POLICY_DIR", c.PolicyDir, "run the built-in bundle"},
		{"MCPGATE_SHADOW_POLICY_DIR", c.ShadowPolicyDir, "turn shadow mode off"},
	} {
		if d.dir == "" {
			continue
		}
		if st, err := os.Stat(d.dir); err != nil || !st.IsDir() {
			r.fail("%s=%q: not a readable folder; set it to a copy of the repository's policies/ folder, or unset it to %s", d.name, d.dir, d.unset)
		}
	}
}

func (r *reader) limits() Limits {
	d := DefaultLimits()
	return Limits{
		ToolPerTask:             r.positive("AGENT_MCP_TOOL_RATE_LIMIT", d.ToolPerTask),
		OpsPerTask:              d.OpsPerTask,
		ScaffoldPerTask:         d.ScaffoldPerTask,
		DeployPerTask:           d.DeployPerTask,
		WorkspaceOpsDaily:       r.positive("AGENT_MCP_WORKSPACE_OPS_DAILY_LIMIT", d.WorkspaceOpsDaily),
		WorkspaceDeployDaily:    r.positive("AGENT_MCP_WORKSPACE_DEPLOY_DAILY_LIMIT", d.WorkspaceDeployDaily),
		WorkspaceProposalDaily:  r.positive("AGENT_MCP_WORKSPACE_PROPOSAL_DAILY_LIMIT", d.WorkspaceProposalDaily),
		WorkspaceTaskSpawnDaily: r.positive("AGENT_MCP_WORKSPACE_TASK_SPAWN_DAILY_LIMIT", d.WorkspaceTaskSpawnDaily),
		ProfileOpsHourly:        r.positive("AGENT_MCP_PROFILE_OPS_HOURLY_LIMIT", d.ProfileOpsHourly),
		ProfileDeployHourly:     r.positive("AGENT_MCP_PROFILE_DEPLOY_HOURLY_LIMIT", d.ProfileDeployHourly),
		ProfileProposalHourly:   r.positive("AGENT_MCP_PROFILE_PROPOSAL_HOURLY_LIMIT", d.ProfileProposalHourly),
		ProfileTaskSpawnHourly:  r.positive("AGENT_MCP_PROFILE_TASK_SPAWN_HOURLY_LIMIT", d.ProfileTaskSpawnHourly),
	}
}

type reader struct {
	getenv func(string) string
	errs   []string
}

func (r *reader) fail(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *reader) str(name, def string) string {
	if v := r.getenv(name); v != "" {
		return v
	}
	return def
}

func (r *reader) positive(name string, def int) int {
	v := r.getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		r.fail("%s=%q: want a positive whole number", name, v)
		return def
	}
	return n
}

// callerCacheTTL reads MCPGATE_CALLER_CACHE_TTL: a Go duration from 0
// (off) to MaxCallerCacheTTL.
func (r *reader) callerCacheTTL() time.Duration {
	const name = "MCPGATE_CALLER_CACHE_TTL"
	v := r.getenv(name)
	if v == "" {
		return DefaultCallerCacheTTL
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil || d < 0:
		r.fail("%s=%q: want a duration such as 500ms or 1s (0 turns the caller cache off)", name, v)
		return DefaultCallerCacheTTL
	case d > MaxCallerCacheTTL:
		r.fail("%s=%q: must be at most %v, so that a change made through another replica takes effect here within that time", name, v, MaxCallerCacheTTL)
		return DefaultCallerCacheTTL
	}
	return d
}

// jwtLeeway reads MCPGATE_JWT_LEEWAY: a Go duration from 0 (no skew
// tolerated) to MaxJWTLeeway.
func (r *reader) jwtLeeway() time.Duration {
	const name = "MCPGATE_JWT_LEEWAY"
	v := r.getenv(name)
	if v == "" {
		return DefaultJWTLeeway
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > MaxJWTLeeway {
		r.fail("%s=%q: want a duration from 0 to %v with its unit, such as 10s (default %v)", name, v, MaxJWTLeeway, DefaultJWTLeeway)
		return DefaultJWTLeeway
	}
	return d
}

func (r *reader) boolean(name string) bool {
	v := r.getenv(name)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail("%s=%q: want true or false", name, v)
	}
	return b
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// scheme is the part of a URL before "://" (at most 16 bytes), or "" when
// it has none: what an error may say of a URL that may hold secrets.
func scheme(u string) string {
	s, _, ok := strings.Cut(u, "://")
	if !ok || len(s) > 16 {
		return ""
	}
	return s + "://"
}
