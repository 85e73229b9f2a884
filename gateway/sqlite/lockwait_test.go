package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/sqlite"
)

// openMigrated opens and migrates a file store in a temporary folder.
func openMigrated(t *testing.T) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcpgate.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return s, path
}

// TestLockWaitEndsByTheDeadline: while another process holds the write
// lock, a reservation and a finish fail with EUnavailable by their
// deadline, not after the connection's busy_timeout (10 s): a store that
// does not answer must not hold the call. A change that begins the
// hot-path transactions without watching the deadline (to save the
// driver's goroutine per statement) must keep this.
func TestLockWaitEndsByTheDeadline(t *testing.T) {
	s, path := openMigrated(t)
	ev := &gateway.AuditEvent{Time: time.Now(), WorkspaceID: "ws-a", TaskID: "t1", Tool: "app.list",
		Status: gateway.AuditAllowed, ReasonCodes: []string{}}
	slot := gateway.Slot{Bucket: "task.read", Key: "lock:t1", Window: time.Unix(0, 0).UTC(), Limit: 10}
	res, err := s.Reserve(context.Background(), gateway.Reservation{Event: ev, Slots: []gateway.Slot{slot}})
	if err != nil {
		t.Fatalf("Reserve before the lock: %v", err)
	}
	ev.ID = res.AuditID

	other, err := sql.Open("sqlite", path+"?_busy_timeout=0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	lock, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatalf("the other process's BEGIN IMMEDIATE: %v", err)
	}
	defer func() { _, _ = lock.ExecContext(context.Background(), "ROLLBACK") }()

	for _, budget := range []time.Duration{300 * time.Millisecond, 1500 * time.Millisecond} {
		for _, op := range []struct {
			name string
			run  func(ctx context.Context) error
		}{
			{"Reserve", func(ctx context.Context) error {
				next := *ev
				next.ID = 0
				_, err := s.Reserve(ctx, gateway.Reservation{Event: &next, Slots: []gateway.Slot{slot}})
				return err
			}},
			{"FinishAudit", func(ctx context.Context) error { return s.FinishAudit(ctx, ev) }},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), budget)
			start := time.Now()
			err := op.run(ctx)
			took := time.Since(start)
			cancel()
			if gateway.ErrorCodeOf(err) != gateway.EUnavailable {
				t.Errorf("%s with %v while another process holds the lock: %v, want EUnavailable", op.name, budget, err)
			}
			if took > budget+250*time.Millisecond {
				t.Errorf("%s with %v while another process holds the lock took %v: the wait outlived the deadline", op.name, budget, took)
			}
		}
	}
}
