package ratelimit

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ulule/limiter/v3"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/tools"
)

// slotView is a slot as the tests compare it.
type slotView struct {
	bucket string
	limit  int64
	period time.Duration
	key    string
}

func view(slots []Slot) []slotView {
	out := make([]slotView, 0, len(slots))
	for _, s := range slots {
		out = append(out, slotView{s.Bucket.Name, s.Bucket.Rate.Limit, s.Bucket.Rate.Period, s.Key})
	}
	return out
}

func TestPlanDefaults(t *testing.T) {
	r := NewRules(config.DefaultLimits())
	sub := func(tier gateway.Tier, kind, profile string) Subject {
		return Subject{WorkspaceID: "ws-a", TaskID: "t1", ProfileID: profile, Tool: "x", Tier: tier, LimitKind: kind}
	}
	const h = time.Hour
	for _, tc := range []struct {
		note string
		sub  Subject
		want []slotView
	}{
		{"baseline shares the read bucket of 50", sub(gateway.TierBaseline, "", "p1"), []slotView{
			{"task.read", 50, 0, "task:ws-a/t1:task.read"}}},
		{"read: per task only, no workspace or profile cap", sub(gateway.TierRead, "", "p1"), []slotView{
			{"task.read", 50, 0, "task:ws-a/t1:task.read"}}},
		{"ops (script.run included)", sub(gateway.TierOps, "", "p1"), []slotView{
			{"task.ops", 10, 0, "task:ws-a/t1:task.ops"},
			{"workspace_day.ops", 100, 24 * h, "workspace:ws-a:workspace_day.ops"},
			{"profile_hour.ops", 30, h, "profile:ws-a/p1:profile_hour.ops"}}},
		{"deploy", sub(gateway.TierDeploy, "", "p1"), []slotView{
			{"task.deploy", 5, 0, "task:ws-a/t1:task.deploy"},
			{"workspace_day.deploy", 20, 24 * h, "workspace:ws-a:workspace_day.deploy"},
			{"profile_hour.deploy", 10, h, "profile:ws-a/p1:profile_hour.deploy"}}},
		{"scaffold proposal", sub(gateway.TierScaffold, tools.LimitKindProposal, "p1"), []slotView{
			{"task.scaffold", 10, 0, "task:ws-a/t1:task.scaffold"},
			{"workspace_day.proposal", 10, 24 * h, "workspace:ws-a:workspace_day.proposal"},
			{"profile_hour.proposal", 10, h, "profile:ws-a/p1:profile_hour.proposal"}}},
		{"scaffold task-spawn", sub(gateway.TierScaffold, tools.LimitKindTaskSpawn, "p1"), []slotView{
			{"task.scaffold", 10, 0, "task:ws-a/t1:task.scaffold"},
			{"workspace_day.task_spawn", 3, 24 * h, "workspace:ws-a:workspace_day.task_spawn"},
			{"profile_hour.task_spawn", 3, h, "profile:ws-a/p1:profile_hour.task_spawn"}}},
		{"no profile: no profile bucket", sub(gateway.TierOps, "", ""), []slotView{
			{"task.ops", 10, 0, "task:ws-a/t1:task.ops"},
			{"workspace_day.ops", 100, 24 * h, "workspace:ws-a:workspace_day.ops"}}},
		{"no task (coordinator): no per-task bucket", Subject{WorkspaceID: "ws-a", Tool: "x", Tier: gateway.TierOps}, []slotView{
			{"workspace_day.ops", 100, 24 * h, "workspace:ws-a:workspace_day.ops"}}},
		{"ids are escaped, so they cannot collide", Subject{WorkspaceID: "a/b", TaskID: "c:d", ProfileID: "e f", Tool: "x", Tier: gateway.TierOps}, []slotView{
			{"task.ops", 10, 0, "task:a%2Fb/c%3Ad:task.ops"},
			{"workspace_day.ops", 100, 24 * h, "workspace:a%2Fb:workspace_day.ops"},
			{"profile_hour.ops", 30, h, "profile:a%2Fb/e+f:profile_hour.ops"}}},
	} {
		t.Run(tc.note, func(t *testing.T) {
			slots, err := r.Plan(tc.sub)
			if err != nil {
				t.Fatal(err)
			}
			if got := view(slots); !slices.Equal(got, tc.want) {
				t.Errorf("Plan =\n %v\nwant\n %v", got, tc.want)
			}
		})
	}
}

func TestPlanRefusesUnknownShapes(t *testing.T) {
	r := NewRules(config.DefaultLimits())
	for _, tc := range []struct {
		note string
		sub  Subject
	}{
		{"unknown tier", Subject{WorkspaceID: "w", TaskID: "t", Tool: "x", Tier: "admin"}},
		{"scaffold without limit kind", Subject{WorkspaceID: "w", TaskID: "t", Tool: "x", Tier: gateway.TierScaffold}},
	} {
		t.Run(tc.note, func(t *testing.T) {
			if _, err := r.Plan(tc.sub); gateway.ErrorCodeOf(err) != gateway.EInternal {
				t.Errorf("Plan = %v, want EInternal (fail closed)", err)
			}
		})
	}
}

// Every cap follows its environment variable (seed 001 names them; the
// per-task ops, scaffold and deploy caps have none).
func TestRulesFollowEnvironment(t *testing.T) {
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
	r := NewRules(cfg.Limits)
	limits := map[string]int64{}
	for _, tc := range []struct {
		tier gateway.Tier
		kind string
	}{{gateway.TierRead, ""}, {gateway.TierOps, ""}, {gateway.TierDeploy, ""},
		{gateway.TierScaffold, tools.LimitKindProposal}, {gateway.TierScaffold, tools.LimitKindTaskSpawn}} {
		slots, err := r.Plan(Subject{WorkspaceID: "w", TaskID: "t", ProfileID: "p", Tool: "x", Tier: tc.tier, LimitKind: tc.kind})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range slots {
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

func TestRefusalMessages(t *testing.T) {
	sub := Subject{Tool: "app.deploy"}
	for _, tc := range []struct {
		scope Scope
		used  int64
		want  string
	}{
		{ScopeTask, 5, "Rate limit exceeded for tool 'app.deploy'"},
		{ScopeWorkspaceDay, 20, "Workspace daily limit reached for this MCP tool tier (20/20)"},
		{ScopeProfileHour, 12, "Profile hourly limit reached for this MCP tool tier (12/10)"},
	} {
		t.Run(string(tc.scope), func(t *testing.T) {
			b := Bucket{Name: "b", Scope: tc.scope, Rate: limiter.Rate{Limit: map[Scope]int64{ScopeTask: 5, ScopeWorkspaceDay: 20, ScopeProfileHour: 10}[tc.scope]}}
			err := refusal(sub, Slot{Bucket: b}, tc.used)
			if err.Code != gateway.ERateLimited || err.Message != tc.want || err.Bucket != "b" {
				t.Errorf("refusal = %+v, want ERateLimited %q in bucket b", err, tc.want)
			}
			if err.Code.RPCCode() != -32003 || err.Code.Class() != "Forbidden" || err.Code.HTTPStatus() != 403 {
				t.Errorf("wire shape %d/%s/%d, want -32003/Forbidden/403 (DESIGN.md §5)", err.Code.RPCCode(), err.Code.Class(), err.Code.HTTPStatus())
			}
		})
	}
}

// failing counters fail every call with err.
type failing struct{ err error }

func (f failing) AddRateCount(context.Context, string, time.Time, time.Time, int64) (int64, error) {
	return 0, f.err
}
func (f failing) RateCount(context.Context, string, time.Time) (int64, error)     { return 0, f.err }
func (f failing) DeleteRateCount(context.Context, string, time.Time) error        { return f.err }
func (f failing) ReserveCounts(context.Context, []CountRequest) ([]int64, error)  { return nil, f.err }
func (f failing) DeleteEndedTaskCounts(context.Context, time.Time) (int64, error) { return 0, f.err }
func (f failing) DeleteExpiredRateCounts(context.Context, time.Time) (int64, error) {
	return 0, f.err
}

// A failing store refuses the call (fail closed) and keeps its error class.
func TestReserveStoreFailure(t *testing.T) {
	sub := Subject{WorkspaceID: "w", TaskID: "t", Tool: "projects.list", Tier: gateway.TierRead}
	for _, tc := range []struct {
		note string
		err  error
		want gateway.ErrorCode
	}{
		{"unavailable passes through", gateway.Errorf(gateway.EUnavailable, "down"), gateway.EUnavailable},
		{"foreign errors become EInternal", errors.New("driver bug"), gateway.EInternal},
	} {
		t.Run(tc.note, func(t *testing.T) {
			err := New(failing{tc.err}, config.DefaultLimits(), nil).Reserve(context.Background(), sub)
			if gateway.ErrorCodeOf(err) != tc.want || gateway.ErrorMessageOf(err) == "" {
				t.Errorf("Reserve = %v, want %s with a message", err, tc.want)
			}
		})
	}
}

func TestWindowContext(t *testing.T) {
	now := time.Date(2025, 3, 4, 23, 59, 59, 0, time.UTC)
	s := NewStore(nil, "", func() time.Time { return now })
	for _, tc := range []struct {
		note  string
		rate  limiter.Rate
		count int64
		want  limiter.Context
	}{
		{"hour, below", limiter.Rate{Limit: 3, Period: time.Hour}, 2,
			limiter.Context{Limit: 3, Remaining: 1, Reset: time.Date(2025, 3, 5, 0, 0, 0, 0, time.UTC).Unix()}},
		{"day, at the limit is not reached", limiter.Rate{Limit: 3, Period: 24 * time.Hour}, 3,
			limiter.Context{Limit: 3, Remaining: 0, Reset: time.Date(2025, 3, 5, 0, 0, 0, 0, time.UTC).Unix()}},
		{"per task, over", limiter.Rate{Limit: 3}, 4, limiter.Context{Limit: 3, Remaining: 0, Reached: true}},
	} {
		t.Run(tc.note, func(t *testing.T) {
			if got := s.windowOf(tc.rate).context(tc.rate, tc.count); got != tc.want {
				t.Errorf("context = %+v, want %+v", got, tc.want)
			}
		})
	}
}
