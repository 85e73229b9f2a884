package pipeline_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/sqlite"
)

// countingTasks counts EnsureTask calls, failing them when down is set.
type countingTasks struct {
	*sqlite.Store
	ensured atomic.Int64
	down    bool
}

func (s *countingTasks) EnsureTask(ctx context.Context, ws, task string) (*gateway.Task, error) {
	s.ensured.Add(1)
	if s.down {
		return nil, gateway.Errorf(gateway.EUnavailable, "audit store unavailable: PostgreSQL did not answer")
	}
	return s.Store.EnsureTask(ctx, ws, task)
}

// TestTaskRegistration: a task the store has never seen is registered as
// running when a member's session first loads its caller, and the call
// goes on with it; later loads find the row, so the registration runs
// only while the task is missing (in the wiring the caller cache, in front
// of RegisterTasks, holds the registered task as well). A task a
// non-member names, or a coordinator's empty task, is not registered.
func TestTaskRegistration(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	if err := f.store.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: "member", SeatType: "developer"}); err != nil {
		t.Fatal(err)
	}
	s := &countingTasks{Store: f.store}
	f.pl.Store = s // no Callers: each call loads through RegisterTasks(Store)

	for range 3 {
		if err := f.call("t-new", "projects.list", nil); err != nil {
			t.Fatalf("first calls of t-new: %v", err)
		}
	}
	if n := s.ensured.Load(); n != 1 {
		t.Errorf("EnsureTask ran %d times for 3 calls, want once (only while the task is missing)", n)
	}
	c, err := f.store.LoadCaller(ctx, &gateway.Principal{Subject: "u1", WorkspaceID: "ws-a", TaskID: "t-new"})
	if err != nil || c.Task == nil || c.Task.Status != gateway.TaskRunning {
		t.Fatalf("stored task of t-new = %+v (%v), want running", c, err)
	}

	p := *f.p
	p.Subject, p.TaskID = "stranger", "t-stranger"
	if _, err := pipeline.RegisterTasks(s).LoadCaller(ctx, &p); err != nil {
		t.Fatal(err)
	}
	p = gateway.Principal{Kind: gateway.PrincipalCoordinator, Subject: "token:fp", WorkspaceID: "ws-a"}
	if _, err := pipeline.RegisterTasks(s).LoadCaller(ctx, &p); err != nil {
		t.Fatal(err)
	}
	if n := s.ensured.Load(); n != 1 {
		t.Errorf("EnsureTask ran for a non-member or a coordinator (%d calls)", n)
	}
}

// A store that cannot register the task refuses the call as an internal
// error (-32603), nothing dispatched.
func TestTaskRegistrationStoreDown(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	if err := f.store.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: "member", SeatType: "developer"}); err != nil {
		t.Fatal(err)
	}
	s := &countingTasks{Store: f.store, down: true}
	f.pl.Store = s
	err := f.call("t-new", "projects.list", nil)
	if wire.RPCCode(gateway.ErrorCodeOf(err)) != wire.RPCInternalError || f.up.calls.Load() != 0 {
		t.Fatalf("call = %v (dispatched %d), want -32603 and nothing dispatched", err, f.up.calls.Load())
	}
}
