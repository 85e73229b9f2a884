package pipeline_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
)

// Issue 8, point 5: denied calls wrote audit rows without bound (1,820
// rows/s from one session). One principal's refusals are audited at most
// at the refusal rate (burst 4 × rate); above it a refused call is
// answered as rate limited in bucket principal.refusals and writes
// nothing; another principal keeps its own budget.
func TestRefusedCallsAreAuditedAtABoundedRate(t *testing.T) {
	f := newFixture(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.pl.Now = func() time.Time { return now }
	f.pl.Refusals = pipeline.NewRefusalLimiter(2) // 2 a second, burst 8
	rows := func() int {
		t.Helper()
		evs, err := f.store.ListAuditEvents(context.Background(), gateway.AuditFilter{WorkspaceID: "ws-a", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	limited := 0
	for range 100 {
		err := f.call("t1", "app.pause", nil) // denied by the fixture's decider
		var ge *gateway.Error
		switch {
		case errors.As(err, &ge) && ge.Code == gateway.ERateLimited && ge.Bucket == pipeline.RefusalBucket:
			limited++
		case gateway.ErrorCodeOf(err) != gateway.EForbidden:
			t.Fatalf("refused call: %v", err)
		}
	}
	if n := rows(); n != 8 || limited != 92 {
		t.Fatalf("100 denied calls at once: %d audit rows and %d refused as %s; want 8 (the burst) and 92", n, limited, pipeline.RefusalBucket)
	}
	if err := f.call("t2", "app.pause", nil); gateway.ErrorCodeOf(err) != gateway.EForbidden {
		t.Errorf("another task's first denied call: %v; want its own denial", err)
	}
	now = now.Add(time.Second)
	for range 3 {
		_ = f.call("t1", "app.pause", nil)
	}
	if n := rows(); n != 8+1+2 {
		t.Errorf("after 1 s: %d audit rows, want 11 (two more for t1)", n)
	}
	// Allowed calls are not limited by it.
	if err := f.call("t1", "schedule.pause", pause); err != nil {
		t.Errorf("an allowed call after the refusals: %v", err)
	}
}
