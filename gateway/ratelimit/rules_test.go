package ratelimit

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
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
	r := NewRules(DefaultLimits())
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
		{"scaffold proposal", sub(gateway.TierScaffold, LimitKindProposal, "p1"), []slotView{
			{"task.scaffold", 10, 0, "task:ws-a/t1:task.scaffold"},
			{"workspace_day.proposal", 10, 24 * h, "workspace:ws-a:workspace_day.proposal"},
			{"profile_hour.proposal", 10, h, "profile:ws-a/p1:profile_hour.proposal"}}},
		{"scaffold task-spawn", sub(gateway.TierScaffold, LimitKindTaskSpawn, "p1"), []slotView{
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
			p, err := r.Plan(tc.sub, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if got := view(p.Slots); !slices.Equal(got, tc.want) {
				t.Errorf("Plan =\n %v\nwant\n %v", got, tc.want)
			}
		})
	}
}

func TestPlanRefusesUnknownShapes(t *testing.T) {
	r := NewRules(DefaultLimits())
	for _, tc := range []struct {
		note string
		sub  Subject
	}{
		{"unknown tier", Subject{WorkspaceID: "w", TaskID: "t", Tool: "x", Tier: "admin"}},
		{"scaffold without limit kind", Subject{WorkspaceID: "w", TaskID: "t", Tool: "x", Tier: gateway.TierScaffold}},
	} {
		t.Run(tc.note, func(t *testing.T) {
			if _, err := r.Plan(tc.sub, time.Now()); gateway.ErrorCodeOf(err) != gateway.EInternal {
				t.Errorf("Plan = %v, want EInternal (fail closed)", err)
			}
		})
	}
}

// A plan fixes every slot's window at its instant, and Counters are the
// store's slots in Plan order: prefixed keys, limits, and the task of the
// per-task slot only.
func TestPlanCounters(t *testing.T) {
	now := time.Date(2025, 3, 4, 13, 30, 0, 0, time.UTC)
	limits := DefaultLimits()
	limits.WorkspaceOpsDaily = 2
	sub := Subject{WorkspaceID: "ws-a", TaskID: "t1", ProfileID: "p1", Tool: "schedule.pause", Tier: gateway.TierOps}
	p, err := NewRules(limits).Plan(sub, now)
	if err != nil {
		t.Fatal(err)
	}
	day, hour := time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC), time.Date(2025, 3, 4, 13, 0, 0, 0, time.UTC)
	want := []gateway.Slot{
		{Bucket: "task.ops", Key: "mcpgate:task:ws-a/t1:task.ops", Window: epoch, Limit: 10, WorkspaceID: "ws-a", TaskID: "t1"},
		{Bucket: "workspace_day.ops", Key: "mcpgate:workspace:ws-a:workspace_day.ops", Window: day, Expires: day.Add(24 * time.Hour), Limit: 2},
		{Bucket: "profile_hour.ops", Key: "mcpgate:profile:ws-a/p1:profile_hour.ops", Window: hour, Expires: hour.Add(time.Hour), Limit: 30},
	}
	if got := p.Counters(); !slices.Equal(got, want) {
		t.Errorf("Counters =\n %+v\nwant\n %+v", got, want)
	}
	if got := (Plan{}).Counters(); got != nil {
		t.Errorf("Counters of an empty plan = %+v, want nil", got)
	}
}

// Plan.Refusal turns the store's answer into the seed's refusal.
func TestPlanRefusal(t *testing.T) {
	sub := Subject{WorkspaceID: "ws-a", TaskID: "t1", ProfileID: "p1", Tool: "schedule.pause", Tier: gateway.TierOps}
	p, err := NewRules(DefaultLimits()).Plan(sub, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		note   string
		res    gateway.ReservationResult
		code   gateway.ErrorCode
		msg    string
		bucket string
	}{
		{"room everywhere", gateway.ReservationResult{AuditID: 7}, "", "", ""},
		{"per task", gateway.ReservationResult{Full: 1, Used: 10}, gateway.ERateLimited, "Rate limit exceeded for tool 'schedule.pause'", "task.ops"},
		{"workspace", gateway.ReservationResult{Full: 2, Used: 100}, gateway.ERateLimited, "Workspace daily limit reached for this MCP tool tier (100/100)", "workspace_day.ops"},
		{"profile", gateway.ReservationResult{Full: 3, Used: 31}, gateway.ERateLimited, "Profile hourly limit reached for this MCP tool tier (31/30)", "profile_hour.ops"},
		{"no such slot", gateway.ReservationResult{Full: 4}, gateway.EInternal, "", ""},
	} {
		t.Run(tc.note, func(t *testing.T) {
			err := p.Refusal(tc.res)
			if gateway.ErrorCodeOf(err) != tc.code {
				t.Fatalf("Refusal = %v, want code %q", err, tc.code)
			}
			var ge *gateway.Error
			if tc.msg != "" && (!errors.As(err, &ge) || ge.Message != tc.msg || ge.Bucket != tc.bucket) {
				t.Errorf("Refusal = %+v, want %q in bucket %s", err, tc.msg, tc.bucket)
			}
		})
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
			b := Bucket{Name: "b", Scope: tc.scope, Rate: Rate{Limit: map[Scope]int64{ScopeTask: 5, ScopeWorkspaceDay: 20, ScopeProfileHour: 10}[tc.scope]}}
			err := refusal(sub, Slot{Bucket: b}, tc.used)
			if err.Code != gateway.ERateLimited || err.Message != tc.want || err.Bucket != "b" {
				t.Errorf("refusal = %+v, want ERateLimited %q in bucket b", err, tc.want)
			}
			// On the wire (docs/http.md, Errors) the refusal is a tool
			// execution error whose denial has the class and status the
			// error code stands for: Forbidden, 403, never a JSON-RPC
			// error code (the transport's reply: pipeline's
			// TestReservationStep, gateway/mcp's TestToolCallRefusals).
			if err.Code.Class() != "Forbidden" || wire.HTTPStatus(err.Code) != 403 {
				t.Errorf("wire shape %s/%d, want Forbidden/403 (docs/http.md)", err.Code.Class(), wire.HTTPStatus(err.Code))
			}
		})
	}
}

// TestWindowEnds: a rate's window ends at the next calendar hour or UTC
// day; a rate without a period has one window that never ends.
func TestWindowEnds(t *testing.T) {
	now := time.Date(2025, 3, 4, 23, 59, 59, 0, time.UTC)
	for _, tc := range []struct {
		note string
		rate Rate
		want time.Time
	}{
		{"hour", Rate{Limit: 3, Period: time.Hour}, time.Date(2025, 3, 5, 0, 0, 0, 0, time.UTC)},
		{"day", Rate{Limit: 3, Period: 24 * time.Hour}, time.Date(2025, 3, 5, 0, 0, 0, 0, time.UTC)},
		{"per task", Rate{Limit: 3}, time.Time{}},
	} {
		t.Run(tc.note, func(t *testing.T) {
			if got := windowAt(tc.rate, now).end; !got.Equal(tc.want) {
				t.Errorf("window end = %v, want %v", got, tc.want)
			}
		})
	}
}

// Coordinators (docs/requirements.md#external-limits): per token, reads per tool per hour and
// ops per hour, then the workspace-wide ops/day cap shared with agents; no
// per-task or profile bucket.
func TestPlanCoordinator(t *testing.T) {
	r := NewRules(DefaultLimits())
	const h = time.Hour
	ten, zero := 10, 0
	for _, tc := range []struct {
		note string
		sub  Subject
		want []slotView
	}{
		{"read: per token and tool", Subject{WorkspaceID: "ws-a", Token: "fp1", Tool: "run.list", Tier: gateway.TierRead}, []slotView{
			{"token_hour.read", 50, h, "token:ws-a/fp1/run.list:token_hour.read"}}},
		{"baseline read: per token and tool", Subject{WorkspaceID: "ws-a", Token: "fp1", Tool: "memory.get", Tier: gateway.TierBaseline}, []slotView{
			{"token_hour.read", 50, h, "token:ws-a/fp1/memory.get:token_hour.read"}}},
		{"ops: per token, then the shared workspace day", Subject{WorkspaceID: "ws-a", Token: "fp1", Tool: "task.create", Tier: gateway.TierOps}, []slotView{
			{"token_hour.ops", 30, h, "token:ws-a/fp1:token_hour.ops"},
			{"workspace_day.ops", 100, 24 * h, "workspace:ws-a:workspace_day.ops"}}},
		{"workspace limits", Subject{WorkspaceID: "ws-a", Token: "fp1", Tool: "task.create", Tier: gateway.TierOps,
			External: &gateway.ExternalLimits{ReadsPerToolHourly: &ten, OpsPerTokenHourly: &zero}}, []slotView{
			{"token_hour.ops", 0, h, "token:ws-a/fp1:token_hour.ops"},
			{"workspace_day.ops", 100, 24 * h, "workspace:ws-a:workspace_day.ops"}}},
		{"workspace read limit, ops left at default", Subject{WorkspaceID: "ws-a", Token: "fp1", Tool: "run.get", Tier: gateway.TierRead,
			External: &gateway.ExternalLimits{ReadsPerToolHourly: &ten}}, []slotView{
			{"token_hour.read", 10, h, "token:ws-a/fp1/run.get:token_hour.read"}}},
	} {
		t.Run(tc.note, func(t *testing.T) {
			p, err := r.Plan(tc.sub, time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC))
			if err != nil {
				t.Fatal(err)
			}
			if got := view(p.Slots); !slices.Equal(got, tc.want) {
				t.Fatalf("slots\n got %v\nwant %v", got, tc.want)
			}
		})
	}
	p, _ := r.Plan(Subject{WorkspaceID: "ws-a", Token: "fp1", Tool: "task.create", Tier: gateway.TierOps}, time.Now())
	for full, want := range map[int]string{
		1: "Token hourly limit reached for this MCP tool tier (30/30)",
		2: "Workspace daily limit reached for this MCP tool tier (30/100)",
	} {
		used := int64(30)
		err := p.Refusal(gateway.ReservationResult{Full: full, Used: used})
		var ge *gateway.Error
		if !errors.As(err, &ge) || ge.Message != want || ge.Code != gateway.ERateLimited {
			t.Errorf("full %d: %v, want %q", full, err, want)
		}
	}
	p, _ = r.Plan(Subject{WorkspaceID: "ws-a", Token: "fp1", Tool: "run.list", Tier: gateway.TierRead}, time.Now())
	if err := p.Refusal(gateway.ReservationResult{Full: 1, Used: 50}); gateway.ErrorMessageOf(err) != "Token hourly limit reached for MCP tool 'run.list' (50/50)" {
		t.Errorf("read refusal: %v", err)
	}
}
