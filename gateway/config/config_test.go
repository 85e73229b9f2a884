package config

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

const secret = "0123456789abcdef0123456789abcdef"

func TestLoadDefaults(t *testing.T) {
	c, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:8080" || c.DatabaseURL != "sqlite:mcpgate.db" || c.Edition != gateway.EditionCommunity || c.JWTAudience != "mcpgate" {
		t.Errorf("defaults: %+v", c)
	}
	if c.Limits != DefaultLimits() {
		t.Errorf("limits %+v, want the defaults of docs/requirements.md#rate-limits", c.Limits)
	}
	if c.MaxBodyBytes != 1<<20 || c.MaxBatchMessages != 100 || c.MaxBatchReplyBytes != 4<<20 || c.MaxHeldBodyBytes != 256<<20 || c.AdminToken != "" || c.AuditArguments {
		t.Errorf("defaults: %+v", c)
	}
	if c.UpstreamTier != gateway.TierOps {
		t.Errorf("upstream tier %q, want ops", c.UpstreamTier)
	}
	if c.CallerCacheTTL != time.Second {
		t.Errorf("caller cache TTL %v, want 1s", c.CallerCacheTTL)
	}
}

func TestApprovalTTL(t *testing.T) {
	for v, want := range map[string]time.Duration{"": DefaultApprovalTTL, "90s": 90 * time.Second, "1h": time.Hour} {
		c, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_APPROVAL_TTL": v}))
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if c.ApprovalTTL != want {
			t.Errorf("MCPGATE_APPROVAL_TTL=%q: %v, want %v", v, c.ApprovalTTL, want)
		}
	}
	for _, v := range []string{"10", "-1m", "500ms", "25h"} {
		_, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_APPROVAL_TTL": v}))
		if err == nil || !strings.Contains(err.Error(), "MCPGATE_APPROVAL_TTL") {
			t.Errorf("MCPGATE_APPROVAL_TTL=%s: %v, want an error naming the variable", v, err)
		}
	}
}

func TestCallerCacheTTL(t *testing.T) {
	for v, want := range map[string]time.Duration{"0": 0, "0s": 0, "250ms": 250 * time.Millisecond, "1s": time.Second} {
		c, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_CALLER_CACHE_TTL": v}))
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if c.CallerCacheTTL != want {
			t.Errorf("MCPGATE_CALLER_CACHE_TTL=%s: %v, want %v", v, c.CallerCacheTTL, want)
		}
	}
}

func TestLoadOverrides(t *testing.T) {
	c, err := Load(env(map[string]string{
		"MCPGATE_JWT_SECRET":                  secret,
		"SUPACLOUD_EDITION":                   "enterprise",
		"AGENT_MCP_TOOL_RATE_LIMIT":           "7",
		"AGENT_MCP_PROFILE_OPS_HOURLY_LIMIT":  "2",
		"AGENT_MCP_WORKSPACE_OPS_DAILY_LIMIT": "99",
		"MCPGATE_ALLOWED_ORIGINS":             "https://a.example, https://b.example",
		"MCPGATE_UPSTREAM_TIER":               "read",
		"MCPGATE_MAX_BATCH_MESSAGES":          "10",
		"MCPGATE_MAX_BATCH_REPLY_BYTES":       "65536",
		"MCPGATE_MAX_HELD_BODY_BYTES":         "1048576",
		"MCPGATE_SESSION_SECRET":              "session-secret-0123456789abcdef-0123",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Edition != gateway.EditionEnterprise || c.Limits.ToolPerTask != 7 || c.Limits.ProfileOpsHourly != 2 || c.Limits.WorkspaceOpsDaily != 99 {
		t.Errorf("overrides not applied: %+v", c)
	}
	if len(c.AllowedOrigins) != 2 || c.AllowedOrigins[1] != "https://b.example" {
		t.Errorf("origins %v", c.AllowedOrigins)
	}
	if c.UpstreamTier != gateway.TierRead {
		t.Errorf("upstream tier %q, want read", c.UpstreamTier)
	}
	if string(c.SessionSecret) != "session-secret-0123456789abcdef-0123" {
		t.Errorf("session secret %q not read from MCPGATE_SESSION_SECRET", c.SessionSecret)
	}
	if c.MaxBatchMessages != 10 || c.MaxBatchReplyBytes != 65536 || c.MaxHeldBodyBytes != 1<<20 {
		t.Errorf("batch limits %d messages, %d reply bytes, %d held body bytes; want 10, 65536 and 1048576", c.MaxBatchMessages, c.MaxBatchReplyBytes, c.MaxHeldBodyBytes)
	}
}

func TestLoadRejects(t *testing.T) {
	cases := []struct {
		note string
		env  map[string]string
		want string
	}{
		{"unknown edition", map[string]string{"MCPGATE_JWT_SECRET": secret, "SUPACLOUD_EDITION": "premium"}, "SUPACLOUD_EDITION"},
		{"no key", map[string]string{}, "MCPGATE_JWT_SECRET"},
		{"no key names the trial mode", map[string]string{}, "for a local trial, mcpgate serve --dev"},
		{"short secret", map[string]string{"MCPGATE_JWT_SECRET": "short"}, "at least 32"},
		{"short session secret", map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_SESSION_SECRET": "x"}, "MCPGATE_SESSION_SECRET is 1 bytes"},
		{"short confirmation secret", map[string]string{"MCPGATE_JWT_SECRET": secret, "SUPACLOUD_MCP_CONFIRMATION_SECRET": "x"}, "SUPACLOUD_MCP_CONFIRMATION_SECRET"},
		{"bad limit", map[string]string{"MCPGATE_JWT_SECRET": secret, "AGENT_MCP_TOOL_RATE_LIMIT": "-1"}, "AGENT_MCP_TOOL_RATE_LIMIT"},
		{"bad listen", map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_LISTEN": "nope"}, "MCPGATE_LISTEN"},
		{"bad database", map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_DATABASE_URL": "mysql://x"}, "MCPGATE_DATABASE_URL"},
		{"missing key file", map[string]string{"MCPGATE_JWT_PUBLIC_KEY_FILE": "/nonexistent.pem"}, "MCPGATE_JWT_PUBLIC_KEY_FILE"},
		{"bad log format", map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_LOG_FORMAT": "xml"}, "MCPGATE_LOG_FORMAT"},
		{"bad upstream", map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_UPSTREAM_URL": "ftp://x"}, "MCPGATE_UPSTREAM_URL"},
		{"scaffold upstream tier", map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_UPSTREAM_TIER": "scaffold"}, "MCPGATE_UPSTREAM_TIER"},
		{"unknown upstream tier", map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_UPSTREAM_TIER": "admin"}, "MCPGATE_UPSTREAM_TIER"},
		{"zero batch limit", map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_MAX_BATCH_MESSAGES": "0"}, "MCPGATE_MAX_BATCH_MESSAGES"},
		{"bad reply budget", map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_MAX_BATCH_REPLY_BYTES": "4MiB"}, "MCPGATE_MAX_BATCH_REPLY_BYTES"},
		{"caller cache TTL without unit", map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_CALLER_CACHE_TTL": "1"}, "MCPGATE_CALLER_CACHE_TTL"},
		{"negative caller cache TTL", map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_CALLER_CACHE_TTL": "-1s"}, "MCPGATE_CALLER_CACHE_TTL"},
		{"caller cache TTL above 1s", map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_CALLER_CACHE_TTL": "1.5s"}, "at most 1s"},
		{"bad bool", map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_AUDIT_ARGUMENTS": "maybe"}, "MCPGATE_AUDIT_ARGUMENTS"},
		{"missing shadow policy folder", map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_SHADOW_POLICY_DIR": "/nonexistent-shadow"}, "MCPGATE_SHADOW_POLICY_DIR"},
		{"missing shadow policy folder says what to do", map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_SHADOW_POLICY_DIR": "/nonexistent-shadow"}, "or unset it to turn shadow mode off"},
		{"missing policy folder says what to do", map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_POLICY_DIR": "/nonexistent-live"}, `MCPGATE_POLICY_DIR="/nonexistent-live": not a readable folder; set it to a copy of the repository's policies/ folder, or unset it to run the built-in bundle`},
	}
	for _, c := range cases {
		t.Run(c.note, func(t *testing.T) {
			_, err := Load(env(c.env))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to name %s", err, c.want)
			}
		})
	}
}

// Issue 8, point 5: the error for a bad MCPGATE_UPSTREAM_URL does not
// repeat the key or password it may hold.
func TestBadUpstreamURLErrorHidesSecrets(t *testing.T) {
	env := map[string]string{"MCPGATE_JWT_SECRET": strings.Repeat("s", 32),
		"MCPGATE_UPSTREAM_URL": "ftp://svc:hunter2-pw@tools/mcp?api_key=TOPSECRET"}
	_, err := Load(func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), "MCPGATE_UPSTREAM_URL") {
		t.Fatalf("Load: %v; want an error naming MCPGATE_UPSTREAM_URL", err)
	}
	if strings.Contains(err.Error(), "TOPSECRET") || strings.Contains(err.Error(), "hunter2-pw") {
		t.Errorf("the error repeats a secret of the URL: %v", err)
	}
}

func TestStoreAndRefusalVariables(t *testing.T) {
	c, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret}))
	if err != nil {
		t.Fatal(err)
	}
	if c.DatabaseMaxConns != 20 || c.RefusedCallsPerSecond != 5 {
		t.Errorf("defaults: %d connections, %d refusals/s; want 20 and 5", c.DatabaseMaxConns, c.RefusedCallsPerSecond)
	}
	c, err = Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret,
		"MCPGATE_DATABASE_MAX_CONNS": "8", "MCPGATE_REFUSED_CALLS_PER_SECOND": "50"}))
	if err != nil || c.DatabaseMaxConns != 8 || c.RefusedCallsPerSecond != 50 {
		t.Errorf("set: %+v, %v", c, err)
	}
	for _, name := range []string{"MCPGATE_DATABASE_MAX_CONNS", "MCPGATE_REFUSED_CALLS_PER_SECOND"} {
		if _, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, name: "0"})); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=0: %v; want an error naming it", name, err)
		}
	}
}

func TestDecisionLog(t *testing.T) {
	c, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret}))
	if err != nil {
		t.Fatal(err)
	}
	if c.DecisionLog.On() || c.DecisionLog.BufferEvents != 10000 || c.DecisionLog.BufferBytes != 32<<20 || c.DecisionLog.Interval != 5*time.Second {
		t.Errorf("decision log defaults %+v", c.DecisionLog)
	}
	c, err = Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret,
		"MCPGATE_DECISION_LOG_FILE": "/var/log/mcpgate/decisions.jsonl", "MCPGATE_DECISION_LOG_URL": "https://logs.example/v1",
		"MCPGATE_DECISION_LOG_BUFFER_EVENTS": "50", "MCPGATE_DECISION_LOG_BUFFER_BYTES": "65536", "MCPGATE_DECISION_LOG_INTERVAL": "250ms"}))
	if err != nil {
		t.Fatal(err)
	}
	d := c.DecisionLog
	if !d.On() || d.File != "/var/log/mcpgate/decisions.jsonl" || d.URL != "https://logs.example/v1" || d.BufferEvents != 50 || d.BufferBytes != 65536 || d.Interval != 250*time.Millisecond {
		t.Errorf("decision log %+v", d)
	}
	_, err = Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_DECISION_LOG_URL": "logs.example:9/x?key=hunter2", "MCPGATE_DECISION_LOG_INTERVAL": "0s"}))
	if err == nil || !strings.Contains(err.Error(), "MCPGATE_DECISION_LOG_URL") || !strings.Contains(err.Error(), "MCPGATE_DECISION_LOG_INTERVAL") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("bad decision log settings: %v; want both named, the URL's key not shown", err)
	}
}

// TestPolicyRetestOnReplicas: off by default, on with
// MCPGATE_POLICY_RETEST_ON_REPLICAS=true, and a value that is no boolean
// is refused naming the variable.
func TestPolicyRetestOnReplicas(t *testing.T) {
	for v, want := range map[string]bool{"": false, "true": true, "false": false} {
		c, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_POLICY_RETEST_ON_REPLICAS": v}))
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if c.PolicyRetestOnReplicas != want {
			t.Errorf("%q: PolicyRetestOnReplicas %v, want %v", v, c.PolicyRetestOnReplicas, want)
		}
	}
	if _, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_POLICY_RETEST_ON_REPLICAS": "always"})); err == nil || !strings.Contains(err.Error(), "MCPGATE_POLICY_RETEST_ON_REPLICAS") {
		t.Errorf("a value that is no boolean: %v, want an error naming the variable", err)
	}
}

// Item 5 of issue 30: the JWT secret's length message says how to make
// one, as the session secret's does.
func TestJWTSecretLengthSuggestsHowToMakeOne(t *testing.T) {
	_, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": "short"}))
	if err == nil || !strings.Contains(err.Error(), "at least 32") || !strings.Contains(err.Error(), "openssl rand -hex 32") {
		t.Fatalf("err = %v, want the length and how to make a secret (openssl rand -hex 32)", err)
	}
}

// Issue 30, point 5: the expiry leeway is a setting, 0 included, bounded.
func TestJWTLeeway(t *testing.T) {
	for v, want := range map[string]time.Duration{"": DefaultJWTLeeway, "0": 0, "0s": 0, "5s": 5 * time.Second, "2m": 2 * time.Minute} {
		c, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_JWT_LEEWAY": v}))
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if c.JWTLeeway != want {
			t.Errorf("MCPGATE_JWT_LEEWAY=%q: %v, want %v", v, c.JWTLeeway, want)
		}
	}
	for _, v := range []string{"30", "-1s", "6m", "soon"} {
		_, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_JWT_LEEWAY": v}))
		if err == nil || !strings.Contains(err.Error(), "MCPGATE_JWT_LEEWAY") {
			t.Errorf("MCPGATE_JWT_LEEWAY=%s: %v, want an error naming the variable", v, err)
		}
	}
}
