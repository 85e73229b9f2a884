package server_test

import (
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
	"github.com/mcpgate/mcpgate/gateway/server"
	"github.com/mcpgate/mcpgate/tools"
)

// Every cap follows its environment variable (docs/requirements.md#rate-limits names them; the
// per-task ops, scaffold and deploy caps have none), through the
// configuration and the wiring's RateLimits into the rules.
func TestRateLimitsFollowEnvironment(t *testing.T) {
	env := map[string]string{
		"MCPGATE_JWT_SECRET":                         "0123456789abcdef0123456789abcdef",
		"AGENT_MCP_TOOL_RATE_LIMIT":                  "7",
		"AGENT_MCP_WORKSPACE_OPS_DAILY_LIMIT":        "11",
		"AGENT_MCP_WORKSPACE_DEPLOY_DAILY_LIMIT":     "12",
		"AGENT_MCP_WORKSPACE_PROPOSAL_DAILY_LIMIT":   "13",
		"AGENT_MCP_WORKSPACE_TASK_SPAWN_DAILY_LIMIT": "14",
		"AGENT_MCP_PROFILE_OPS_HOURLY_LIMIT":         "15",
		"AGENT_MCP_PROFILE_DEPLOY_HOURLY_LIMIT":      "16",
		"AGENT_MCP_PROFILE_PROPOSAL_HOURLY_LIMIT":    "17",
		"AGENT_MCP_PROFILE_TASK_SPAWN_HOURLY_LIMIT":  "18",
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	r := ratelimit.NewRules(server.RateLimits(cfg.Limits))
	limits := map[string]int64{}
	for _, tc := range []struct {
		tier gateway.Tier
		kind string
	}{{gateway.TierRead, ""}, {gateway.TierOps, ""}, {gateway.TierDeploy, ""},
		{gateway.TierScaffold, tools.LimitKindProposal}, {gateway.TierScaffold, tools.LimitKindTaskSpawn}} {
		p, err := r.Plan(ratelimit.Subject{WorkspaceID: "w", TaskID: "t", ProfileID: "p", Tool: "x", Tier: tc.tier, LimitKind: tc.kind}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Slots {
			limits[s.Bucket.Name] = s.Bucket.Rate.Limit
		}
	}
	want := map[string]int64{
		"task.read": 7, "task.ops": 10, "task.scaffold": 10, "task.deploy": 5,
		"workspace_day.ops": 11, "workspace_day.deploy": 12, "workspace_day.proposal": 13, "workspace_day.task_spawn": 14,
		"profile_hour.ops": 15, "profile_hour.deploy": 16, "profile_hour.proposal": 17, "profile_hour.task_spawn": 18,
	}
	for name, n := range want {
		if limits[name] != n {
			t.Errorf("bucket %s has limit %d, want %d", name, limits[name], n)
		}
	}
	if len(limits) != len(want) {
		t.Errorf("buckets %v, want exactly %v", limits, want)
	}
}

// The rate limiter keeps its own copies of the defaults and the limit
// kinds (it imports neither the configuration nor the catalog); they must
// not drift.
func TestRateLimitsMatchConfigAndCatalog(t *testing.T) {
	if got, want := server.RateLimits(config.DefaultLimits()), ratelimit.DefaultLimits(); got != want {
		t.Errorf("config's defaults %+v, ratelimit's %+v", got, want)
	}
	if ratelimit.LimitKindProposal != tools.LimitKindProposal || ratelimit.LimitKindTaskSpawn != tools.LimitKindTaskSpawn {
		t.Errorf("limit kinds differ: ratelimit %q/%q, catalog %q/%q", ratelimit.LimitKindProposal, ratelimit.LimitKindTaskSpawn,
			tools.LimitKindProposal, tools.LimitKindTaskSpawn)
	}
}
