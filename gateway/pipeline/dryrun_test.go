package pipeline_test

import (
	"context"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
)

// A dry run takes the first steps of a call and no other: it returns the
// catalog entry and the caller, and writes no audit row, takes no
// rate-limit slot and dispatches nothing (the policy explanation's dry
// run). With a loader that registers nothing, no task is registered.
func TestDryRunWritesNothing(t *testing.T) {
	f := newFixture(t)
	f.pl.Callers = f.store // reads only: no task registration
	ctx := context.Background()
	c, err := f.pl.DryRun(ctx, f.p, "schedule.pause", map[string]any{"schedule_id": "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Tool == nil || c.Tool.Name != "schedule.pause" || c.Caller == nil || c.Caller.Workspace == nil || c.Caller.Workspace.ID != "ws-a" {
		t.Fatalf("dry run state: tool %+v, caller %+v", c.Tool, c.Caller)
	}
	if c.Decision != nil || c.Event.ID != 0 {
		t.Fatalf("a dry run decided (%+v) or wrote its row (%d)", c.Decision, c.Event.ID)
	}
	if n := f.up.calls.Load(); n != 0 {
		t.Fatalf("a dry run dispatched %d calls", n)
	}
	evs, err := f.store.ListAuditEvents(ctx, gateway.AuditFilter{WorkspaceID: "ws-a"})
	if err != nil || len(evs) != 0 {
		t.Fatalf("a dry run wrote audit rows: %d (%v)", len(evs), err)
	}
	for _, u := range f.usage(t, ratelimit.Subject{WorkspaceID: "ws-a", TaskID: "t1", ProfileID: "p1", Tool: "schedule.pause", Tier: gateway.TierOps}) {
		if u.Used != 0 {
			t.Fatalf("a dry run took a slot of %s", u.Slot.Bucket.Name)
		}
	}
	if _, err := f.store.Task(ctx, "ws-a", "t1"); gateway.ErrorCodeOf(err) != gateway.ENotFound {
		t.Fatalf("task t1 after a dry run: %v, want not found", err)
	}
	if _, err := f.pl.DryRun(ctx, f.p, "no.such", nil); gateway.ErrorCodeOf(err) != gateway.EInvalid {
		t.Fatalf("dry run of an unknown tool: %v, want EInvalid (the request path's refusal)", err)
	}
}
