package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
	"github.com/mcpgate/mcpgate/gateway/sqlite"
	"github.com/mcpgate/mcpgate/tools"
)

// decider allows every tool except those in deny.
type decider struct{ deny map[string]bool }

func (d decider) Decide(_ context.Context, _ *gateway.Principal, _ *gateway.Caller, tool policy.ToolRef, _ map[string]any) (*gateway.Decision, error) {
	if d.deny[tool.Name] {
		return &gateway.Decision{ID: "d-deny", Tier: tool.Tier, Reasons: []gateway.Reason{{Code: "allowlist.missing_grant", Message: "no grant"}}}, nil
	}
	return &gateway.Decision{ID: "d-allow", Allow: true, Visible: true, Tier: tool.Tier}, nil
}

func (decider) Visible(context.Context, *gateway.Principal, *gateway.Caller) (map[string]bool, error) {
	return nil, nil
}

// adapter counts dispatches and fails when err is set.
type adapter struct {
	calls atomic.Int64
	err   error
}

func (a *adapter) CallTool(context.Context, gateway.ToolCall) (*gateway.ToolResult, error) {
	a.calls.Add(1)
	if a.err != nil {
		return nil, a.err
	}
	return &gateway.ToolResult{StructuredContent: map[string]any{"ok": true}}, nil
}

// brokenReservations is a store whose reservations fail as an unreachable
// database does, while everything else works.
type brokenReservations struct{ *sqlite.Store }

func (brokenReservations) Reserve(context.Context, gateway.Reservation) (gateway.ReservationResult, error) {
	return gateway.ReservationResult{}, gateway.Errorf(gateway.EUnavailable, "audit store unavailable: PostgreSQL did not answer")
}

type fixture struct {
	pl    *pipeline.Pipeline
	store *sqlite.Store
	up    *adapter
	p     *gateway.Principal
}

// newFixture is a pipeline on an in-memory store with workspace ws-a,
// profile p1 and limits lowered so that buckets fill quickly.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-a", Name: "A"}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutProfile(ctx, &gateway.Profile{WorkspaceID: "ws-a", ID: "p1", Name: "p1", Allowlist: []string{"supacloud.full"}}); err != nil {
		t.Fatal(err)
	}
	cat, err := tools.Load()
	if err != nil {
		t.Fatal(err)
	}
	limits := ratelimit.DefaultLimits()
	limits.OpsPerTask, limits.WorkspaceOpsDaily = 2, 3
	rules := ratelimit.NewRules(limits)
	up := &adapter{}
	return &fixture{
		pl: &pipeline.Pipeline{Store: s, Decider: decider{deny: map[string]bool{"app.pause": true}}, Catalog: cat, Adapter: up,
			Logger: zap.NewNop(), RateLimits: &rules},
		store: s, up: up,
		p: &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "u1", WorkspaceID: "ws-a", TaskID: "t1", ProfileID: "p1"},
	}
}

func (f *fixture) call(task, tool string, args map[string]any) error {
	raw, _ := json.Marshal(args)
	p := *f.p
	p.TaskID = task
	_, err := f.pl.CallTool(context.Background(), &p, &gateway.CallRequest{Name: tool, Arguments: args, RawArguments: raw})
	return err
}

// used returns the ops-tier bucket counts of task.
func (f *fixture) used(t *testing.T, task string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, u := range f.usage(t, ratelimit.Subject{WorkspaceID: "ws-a", TaskID: task, ProfileID: "p1", Tool: "schedule.pause", Tier: gateway.TierOps}) {
		out[u.Slot.Bucket.Name] = u.Used
	}
	return out
}

// usage reads the buckets of sub now from the fixture's store.
func (f *fixture) usage(t *testing.T, sub ratelimit.Subject) []ratelimit.Usage {
	t.Helper()
	plan, err := f.pl.RateLimits.Plan(sub, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	us, err := ratelimit.ReadUsage(context.Background(), f.store, plan)
	if err != nil {
		t.Fatal(err)
	}
	return us
}

// last returns the newest audit row.
func (f *fixture) last(t *testing.T) gateway.AuditEvent {
	t.Helper()
	evs, err := f.store.ListAuditEvents(context.Background(), gateway.AuditFilter{WorkspaceID: "ws-a", Limit: 1})
	if err != nil || len(evs) != 1 {
		t.Fatalf("no audit row (%v)", err)
	}
	return evs[0]
}

var pause = map[string]any{"schedule_id": "s1"}

func TestReservationStep(t *testing.T) {
	type want struct {
		code       gateway.ErrorCode
		msg        string
		status     string
		bucket     string
		dispatched int64
		task, ws   int64 // ops slots of the call's task and of the workspace afterwards
		// decision is the refusal's DecisionID, input its ToolInput: the
		// transport's reply reads both (mcp.ToolError).
		decision string
		input    bool
	}
	for _, tc := range []struct {
		note  string
		setup func(f *fixture)
		task  string
		tool  string
		args  map[string]any
		want  want
	}{
		{note: "allowed call takes a slot, then is dispatched", task: "t1", tool: "schedule.pause", args: pause,
			want: want{status: "allowed", dispatched: 1, task: 1, ws: 1}},
		{note: "denied by policy: no slot", task: "t1", tool: "app.pause", args: map[string]any{"app_id": "a1"},
			want: want{code: gateway.EForbidden, msg: "no grant", status: "denied", decision: "d-deny"}},
		{note: "invalid arguments: no slot", task: "t1", tool: "schedule.pause", args: map[string]any{},
			want: want{code: gateway.EInvalid, status: "error", decision: "d-allow", input: true}},
		{note: "per-task cap", task: "t1", tool: "schedule.pause", args: pause,
			setup: func(f *fixture) { _, _ = f.call("t1", "schedule.pause", pause), f.call("t1", "schedule.pause", pause) },
			want: want{code: gateway.ERateLimited, msg: "Rate limit exceeded for tool 'schedule.pause'", status: "rate_limited",
				bucket: "task.ops", dispatched: 2, task: 2, ws: 2, decision: "d-allow"}},
		{note: "workspace cap refunds the per-task slot", task: "t2", tool: "schedule.pause", args: pause,
			setup: func(f *fixture) {
				_, _, _ = f.call("t1", "schedule.pause", pause), f.call("t1", "schedule.pause", pause), f.call("t3", "schedule.pause", pause)
			},
			want: want{code: gateway.ERateLimited, msg: "Workspace daily limit reached for this MCP tool tier (3/3)", status: "rate_limited",
				bucket: "workspace_day.ops", dispatched: 3, task: 0, ws: 3, decision: "d-allow"}},
		{note: "an adapter error after dispatch still used its slot", task: "t1", tool: "schedule.pause", args: pause,
			setup: func(f *fixture) { f.up.err = gateway.Errorf(gateway.EUnavailable, "upstream down") },
			want:  want{code: gateway.EUnavailable, msg: "upstream down", status: "error", dispatched: 1, task: 1, ws: 1}},
		{note: "store cannot reserve: refused with -32603, not dispatched", task: "t1", tool: "schedule.pause", args: pause,
			setup: func(f *fixture) { f.pl.Store = brokenReservations{f.store} },
			want:  want{code: gateway.EUnavailable, status: "error"}},
	} {
		t.Run(tc.note, func(t *testing.T) {
			f := newFixture(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			err := f.call(tc.task, tc.tool, tc.args)
			if gateway.ErrorCodeOf(err) != tc.want.code {
				t.Fatalf("error %v, want code %q", err, tc.want.code)
			}
			if tc.want.msg != "" && gateway.ErrorMessageOf(err) != tc.want.msg {
				t.Errorf("message %q, want %q", gateway.ErrorMessageOf(err), tc.want.msg)
			}
			if err != nil && wire.RPCCode(tc.want.code) != wire.RPCCode(gateway.ErrorCodeOf(err)) {
				t.Errorf("JSON-RPC code %d", wire.RPCCode(gateway.ErrorCodeOf(err)))
			}
			var ge *gateway.Error
			if errors.As(err, &ge) && ge.Bucket != tc.want.bucket {
				t.Errorf("error bucket %q, want %q", ge.Bucket, tc.want.bucket)
			}
			if ge != nil && (ge.DecisionID != tc.want.decision || ge.ToolInput != tc.want.input) {
				t.Errorf("error decision %q, input %v; want %q, %v", ge.DecisionID, ge.ToolInput, tc.want.decision, tc.want.input)
			}
			// A rate limit is a tool execution error at every protocol
			// version: the seed's text verbatim, the denial with class
			// Forbidden, status 403 and the bucket.
			if tc.want.code == gateway.ERateLimited {
				for _, v := range []string{mcp.Version20241105, mcp.Version20250326, mcp.Version20251125, mcp.Version20260728} {
					te := mcp.ToolError(err, v)
					if te == nil || !te.IsError || len(te.Content) != 1 || te.Content[0].Text != tc.want.msg {
						t.Fatalf("at %s: reply %+v, want a tool execution error with the text %q", v, te, tc.want.msg)
					}
					if d := te.Meta[mcp.DenialMetaKey]; d.Class != "Forbidden" || d.Status != 403 || d.Bucket != tc.want.bucket ||
						d.Code != "rate_limit.exceeded" || d.DecisionID != "d-allow" {
						t.Errorf("at %s: denial %+v, want class Forbidden, status 403, bucket %s, decision d-allow", v, d, tc.want.bucket)
					}
				}
			}
			if ev := f.last(t); ev.Status != tc.want.status || ev.Bucket != tc.want.bucket || ev.Tool != tc.tool {
				t.Errorf("audit row %s/%s/%s, want %s/%s/%s", ev.Tool, ev.Status, ev.Bucket, tc.tool, tc.want.status, tc.want.bucket)
			}
			if n := f.up.calls.Load(); n != tc.want.dispatched {
				t.Errorf("dispatched %d calls, want %d", n, tc.want.dispatched)
			}
			f.pl.Store = f.store
			if u := f.used(t, tc.task); u["task.ops"] != tc.want.task || u["workspace_day.ops"] != tc.want.ws {
				t.Errorf("slots used %v, want task.ops %d and workspace_day.ops %d", u, tc.want.task, tc.want.ws)
			}
		})
	}
}

// The store-failure row cannot carry -32603 on its own; check the wire code.
func TestStoreFailureIsInternalOnTheWire(t *testing.T) {
	f := newFixture(t)
	f.pl.Store = brokenReservations{f.store}
	err := f.call("t1", "projects.list", nil)
	if code := gateway.ErrorCodeOf(err); wire.RPCCode(code) != wire.RPCInternalError || code.Class() != "Internal" {
		t.Fatalf("error %v maps to %d/%s, want -32603/Internal", err, wire.RPCCode(code), code.Class())
	}
	if f.up.calls.Load() != 0 {
		t.Error("a call was dispatched although its slot could not be reserved")
	}
}

// The reservation uses the pipeline's clock: a new UTC day frees the
// workspace bucket.
func TestReservationClock(t *testing.T) {
	f := newFixture(t)
	var now atomic.Int64
	now.Store(time.Date(2025, 3, 4, 23, 59, 59, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	limits := ratelimit.DefaultLimits()
	limits.WorkspaceOpsDaily = 1
	rules := ratelimit.NewRules(limits)
	f.pl.RateLimits, f.pl.Now = &rules, clock
	if err := f.call("t1", "schedule.pause", pause); err != nil {
		t.Fatal(err)
	}
	if err := f.call("t2", "schedule.pause", pause); gateway.ErrorCodeOf(err) != gateway.ERateLimited {
		t.Fatalf("second call of the day: %v, want ERateLimited", err)
	}
	now.Store(time.Date(2025, 3, 5, 0, 0, 0, 0, time.UTC).UnixNano())
	if err := f.call("t2", "schedule.pause", pause); err != nil {
		t.Fatalf("first call of the next UTC day: %v", err)
	}
}
