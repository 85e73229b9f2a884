package config

import (
	"strings"
	"time"
)

// Var is one row of the configuration table: an environment variable,
// its default as one would write it in the environment ("" when unset
// means off, or a default that depends on other variables, which Meaning
// then states), and what it means in one line.
type Var struct{ Name, Default, Meaning string }

// Vars is the configuration table: every variable Load reads, once, in
// the order of docs/configuration.md (which says more of each). `mcpgate
// serve --help` prints it; the package's tests hold it to Load (the same
// names, and each stated default read back gives Load's own value).
var Vars = []Var{
	{"MCPGATE_LISTEN", "127.0.0.1:8080", "the listen address, host:port"},
	{"MCPGATE_DATABASE_URL", DefaultDatabaseURL, "the store: sqlite:PATH, sqlite:///ABSPATH or postgres://… (serve --dev: sqlite:mcpgate-dev.db)"},
	{"SUPACLOUD_EDITION", "community", "community or enterprise (fail-closed: another value stops the gateway)"},
	{"MCPGATE_JWT_SECRET", "", "HS256 key of agent session JWTs, ≥ 32 bytes (e.g. openssl rand -hex 32); or:"},
	{"MCPGATE_JWT_PUBLIC_KEY_FILE", "", "PEM public key of agent session JWTs (RS256, ES256 or EdDSA)"},
	{"MCPGATE_JWT_JWKS_URL", "", "an identity provider's JWKS URL verifying agent and cc_server JWTs (RS256, ES256, EdDSA by key); or:"},
	{"MCPGATE_JWT_DISCOVERY", "false", "true: find the JWKS from MCPGATE_JWT_ISSUER's OpenID configuration"},
	{"MCPGATE_JWT_ISSUER", "", "the iss every agent session JWT must carry, when set (required with a JWKS)"},
	{"MCPGATE_JWT_AUDIENCE", "mcpgate", "the aud every agent session JWT must carry"},
	{"MCPGATE_JWT_LEEWAY", durationText(DefaultJWTLeeway), "clock skew tolerated on a JWT's exp, nbf and iat, 0 to 5m"},
	{"SUPACLOUD_MCP_CONFIRMATION_SECRET", "", "HMAC key of deploy confirmation tokens, ≥ 32 bytes; unset: confirmed deploys fail closed"},
	{"MCPGATE_ADMIN_TOKEN", "", "turns on the admin API (/admin/v1) and the console"},
	{"MCPGATE_SESSION_SECRET", "", "key of MCP session ids, ≥ 32 bytes, shared by replicas; unset: one per process"},
	{"MCPGATE_UPSTREAM_URL", "", "an upstream MCP server instead of the demo backend"},
	{"MCPGATE_POLICY_DIR", "", "a watched policy folder instead of the built-in bundle"},
	{"MCPGATE_SHADOW_POLICY_DIR", "", "a candidate bundle decided beside the live one, never enforced"},
	{"MCPGATE_POLICY_RETEST_ON_REPLICAS", "false", "true: rerun a candidate's tests on a reload another replica announced"},
	{"MCPGATE_CCSERVER_LISTEN", "", "address of the cc_server listener; unset: off (serve --dev: " + DevCCServerListen + ")"},
	{"MCPGATE_CCSERVER_JWT_AUDIENCE", DefaultCCServerAudience, "the aud a cc_server JWT must carry"},
	{"MCPGATE_CCSERVER_UPSTREAM_URL", "", "a cc_server MCP endpoint; unset: the demo backend"},
	{"MCPGATE_CCSERVER_CALLS_PER_MINUTE", "", "cc_server tools/call per principal per minute; unset: the policy's (120)"},
	{"MCPGATE_UPSTREAM_TIER", "ops", "tier of upstream tools the catalog does not know: read, ops, deploy or baseline"},
	{"MCPGATE_UPSTREAMS_FILE", "", "a JSON file declaring MCP servers bridged beside the catalog (name, surface, url, prefix, tier or group, headers)"},
	{"MCPGATE_UPSTREAM_REFRESH", "5m", "how often the bridged upstreams' tool lists are read again (at least 1s)"},
	{"MCPGATE_UPSTREAM_TIMEOUT", "30s", "bound on one listing or call of a bridged upstream (at most 10m)"},
	{"MCPGATE_LOG_FORMAT", "json", "json or console (serve --dev: console)"},
	{"MCPGATE_CALLER_CACHE_TTL", durationText(DefaultCallerCacheTTL), "how long a loaded caller is reused, 0 (off) to 1s"},
	{"MCPGATE_APPROVAL_TTL", durationText(DefaultApprovalTTL), "how long a call waits for a person's approval, 1s to 24h"},
	{"MCPGATE_AUDIT_ARGUMENTS", "false", "true: audit rows hold the call arguments, not only their hash"},
	{"MCPGATE_AUDIT_RETENTION", "0", "how long sealed audit rows are kept, at least 24h; 0: all (whole ranges up to an old checkpoint are pruned)"},
	{"MCPGATE_AUDIT_SIGNING_KEY_FILE", "", "PEM Ed25519 private key (openssl genpkey -algorithm ed25519) signing the audit checkpoints; unset: unsigned"},
	{"MCPGATE_DECISION_LOG_FILE", "", "a file the decision log is appended to"},
	{"MCPGATE_DECISION_LOG_URL", "", "a service the decision log is sent to (OPA's /logs API)"},
	{"MCPGATE_DECISION_LOG_INTERVAL", "5s", "the longest an event waits to be uploaded"},
	{"MCPGATE_DECISION_LOG_BUFFER_EVENTS", "10000", "events waiting to be masked and encoded"},
	{"MCPGATE_DECISION_LOG_BUFFER_BYTES", "33554432", "bytes of encoded events held for upload"},
	{"MCPGATE_MAX_BODY_BYTES", "1048576", "request body limit, bytes"},
	{"MCPGATE_MAX_BATCH_MESSAGES", "100", "most messages in one JSON-RPC batch"},
	{"MCPGATE_MAX_BATCH_REPLY_BYTES", "4194304", "reply budget of one POST, bytes"},
	{"MCPGATE_MAX_HELD_BODY_BYTES", "268435456", "request body bytes held at once; above: HTTP 503"},
	{"MCPGATE_DATABASE_MAX_CONNS", "20", "PostgreSQL connections of one replica"},
	{"MCPGATE_REFUSED_CALLS_PER_SECOND", "5", "audited refusals per principal per second"},
	{"MCPGATE_ALLOWED_ORIGINS", "", "browser origins allowed on the MCP endpoints, comma separated"},
	{"MCPGATE_ALLOWED_HOSTS", "", "Host header values accepted; unset: the loopback names on a loopback listener"},
	{"MCPGATE_PUBLIC_URL", "", "the external URL, the OAuth resource; unset: http://MCPGATE_LISTEN"},
	{"MCPGATE_AUTHORIZATION_SERVERS", "", "OAuth authorization servers, comma separated, in the resource metadata"},
	{"AGENT_MCP_TOOL_RATE_LIMIT", "50", "baseline + read calls per task"},
	{"AGENT_MCP_WORKSPACE_OPS_DAILY_LIMIT", "100", "ops calls per workspace per day"},
	{"AGENT_MCP_WORKSPACE_DEPLOY_DAILY_LIMIT", "20", "deploy calls per workspace per day"},
	{"AGENT_MCP_WORKSPACE_PROPOSAL_DAILY_LIMIT", "10", "proposals per workspace per day"},
	{"AGENT_MCP_WORKSPACE_TASK_SPAWN_DAILY_LIMIT", "3", "task spawns per workspace per day"},
	{"AGENT_MCP_PROFILE_OPS_HOURLY_LIMIT", "30", "ops calls per profile per hour"},
	{"AGENT_MCP_PROFILE_DEPLOY_HOURLY_LIMIT", "10", "deploy calls per profile per hour"},
	{"AGENT_MCP_PROFILE_PROPOSAL_HOURLY_LIMIT", "10", "proposals per profile per hour"},
	{"AGENT_MCP_PROFILE_TASK_SPAWN_HOURLY_LIMIT", "3", "task spawns per profile per hour"},
	{"MCPGATE_HTTP_HEADER_TIMEOUT", durationText(DefaultHeaderTimeout), "time to send a request's headers"},
	{"MCPGATE_HTTP_BODY_TIMEOUT", durationText(DefaultBodyTimeout), "time to send a request's body"},
	{"MCPGATE_HTTP_WRITE_TIMEOUT", durationText(DefaultWriteTimeout), "time to take one reply, or one SSE event, off the wire"},
	{"MCPGATE_HTTP_IDLE_TIMEOUT", durationText(DefaultIdleTimeout), "time a keep-alive connection may sit idle"},
	{"MCPGATE_HTTP_MAX_CONNECTIONS", "4096", "connections the main listener holds at once"},
	{"MCPGATE_METRICS_LISTEN", "", "address of /metrics and the probes; unset: the main listener"},
	{"MCPGATE_PPROF", "false", "true: Go's profiles under /debug/pprof/ on MCPGATE_METRICS_LISTEN"},
}

// durationText writes d as one would set it: 10m, not 10m0s.
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
