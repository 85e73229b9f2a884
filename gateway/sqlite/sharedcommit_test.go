package sqlite_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// Finishes queue with the reservations that wait for the write connection
// and share their commit; each caller still gets its own outcome: a
// finish of a missing row ENotFound, a reservation over its limit its
// full slot with nothing written, while the others of the batch are
// written.
func TestFinishesShareReservationCommit(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, filepath.Join(t.TempDir(), "shared.db"))
	ev := func(task string) *gateway.AuditEvent {
		return &gateway.AuditEvent{Time: time.Now().UTC(), WorkspaceID: "ws-a", TaskID: task, Tool: "app.list",
			Tier: gateway.TierRead, Status: gateway.AuditAllowed, ReasonCodes: []string{}}
	}
	slot := func(task string) gateway.Slot {
		return gateway.Slot{Bucket: "task.read", Key: "k:" + task, Window: time.Unix(0, 0).UTC(), Limit: 1,
			WorkspaceID: "ws-a", TaskID: task}
	}
	// A row to finish, and a full slot for task "full".
	done := ev("t0")
	r, err := s.Reserve(ctx, gateway.Reservation{Event: done, Slots: []gateway.Slot{slot("full")}})
	if err != nil || r.AuditID == 0 {
		t.Fatalf("Reserve: %+v, %v", r, err)
	}
	done.ID, done.Status, done.LatencyMicros = r.AuditID, gateway.AuditError, 42

	tx, err := s.DB().BeginTxx(ctx, nil) // holds the write connection: what follows queues
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var finErr, missErr, fullErr, okErr error
	var fullRes, okRes gateway.ReservationResult
	wg.Go(func() { finErr = s.FinishAudit(ctx, done) })
	wg.Go(func() { missErr = s.FinishAudit(ctx, &gateway.AuditEvent{ID: 1 << 40, Status: gateway.AuditError}) })
	wg.Go(func() {
		fullRes, fullErr = s.Reserve(ctx, gateway.Reservation{Event: ev("full"), Slots: []gateway.Slot{slot("full")}})
	})
	wg.Go(func() {
		okRes, okErr = s.Reserve(ctx, gateway.Reservation{Event: ev("t1"), Slots: []gateway.Slot{slot("t1")}})
	})
	time.Sleep(100 * time.Millisecond)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if finErr != nil {
		t.Errorf("FinishAudit of a recorded row: %v", finErr)
	}
	if gateway.ErrorCodeOf(missErr) != gateway.ENotFound {
		t.Errorf("FinishAudit of a missing row: %v, want ENotFound", missErr)
	}
	if fullErr != nil || fullRes.Full != 1 || fullRes.AuditID != 0 {
		t.Errorf("Reserve over the limit: %+v, %v; want slot 1 full, nothing recorded", fullRes, fullErr)
	}
	if okErr != nil || okRes.AuditID == 0 {
		t.Errorf("Reserve within the limit: %+v, %v", okRes, okErr)
	}
	list, err := s.ListAuditEvents(ctx, gateway.AuditFilter{WorkspaceID: "ws-a", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]string{}
	for _, e := range list {
		got[e.ID] = e.Status
	}
	if len(got) != 2 || got[done.ID] != gateway.AuditError || got[okRes.AuditID] != gateway.AuditAllowed {
		t.Errorf("rows %v; want %d %s and %d %s only", got, done.ID, gateway.AuditError, okRes.AuditID, gateway.AuditAllowed)
	}
}
