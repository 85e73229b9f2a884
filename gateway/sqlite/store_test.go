package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/sqlite"
	"github.com/mcpgate/mcpgate/gateway/storetest"
	"github.com/mcpgate/mcpgate/migrations"
)

// The store passes the shared suite; its consumers (gateway/server,
// gateway/admin) check that it serves them where they use it.
var _ storetest.Store = (*sqlite.Store)(nil)

// newStore opens and migrates a store at path, closed when t ends.
func newStore(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return s
}

func TestStoreInMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store { return newStore(t, ":memory:") })
}

// The file store has a separate read pool; it must pass the suite too.
func TestStoreFile(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store {
		return newStore(t, filepath.Join(t.TempDir(), "mcpgate.db"))
	})
}

// Tampering with the tables directly is caught on the file store (the
// read pool verifies what the write connection sealed).
func TestAuditChainTamper(t *testing.T) {
	storetest.Tamper(t, func(t *testing.T) storetest.Store {
		return newStore(t, filepath.Join(t.TempDir(), "mcpgate.db"))
	})
}

// BenchmarkVerifyAuditChain: rows/s of mcpgate audit verify's work
// (MCPGATE_BENCH_AUDIT_ROWS rows, default 100,000).
func BenchmarkVerifyAuditChain(b *testing.B) {
	storetest.BenchVerify(b, newStore(b, filepath.Join(b.TempDir(), "mcpgate.db")))
}

func TestOpenRefusals(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, path string
		code       gateway.ErrorCode
	}{
		{"empty", "", gateway.EInvalid},
		{"prefix only", "sqlite:", gateway.EInvalid},
		// The URL is config.SQLitePath's to read (issue 30: one reading).
		{"a URL", "sqlite:" + filepath.Join(t.TempDir(), "x.db"), gateway.EInvalid},
		{"missing folder", filepath.Join(t.TempDir(), "no", "such", "dir", "x.db"), gateway.EUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := sqlite.Open(ctx, tc.path)
			if s != nil {
				_ = s.Close()
			}
			if got := gateway.ErrorCodeOf(err); got != tc.code {
				t.Fatalf("Open(%q): %v, want code %s", tc.path, err, tc.code)
			}
		})
	}
}

func TestFileStorePersistsAcrossReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "mcpgate.db")
	s := newStore(t, path)
	if err := s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-a", Name: "A"}); err != nil {
		t.Fatal(err)
	}
	ev := &gateway.AuditEvent{WorkspaceID: "ws-a", Tool: "app.list", Status: gateway.AuditAllowed}
	if err := s.RecordAudit(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again := newStore(t, path) // Migrate on a migrated file is a no-op
	c, err := again.LoadCaller(ctx, &gateway.Principal{WorkspaceID: "ws-a"})
	if err != nil || c.Workspace.Name != "A" {
		t.Fatalf("after reopen LoadCaller = %+v, %v; want workspace A", c, err)
	}
	list, err := again.ListAuditEvents(ctx, gateway.AuditFilter{WorkspaceID: "ws-a"})
	if err != nil || len(list) != 1 || list[0].ID != ev.ID {
		t.Fatalf("after reopen audit events = %+v, %v; want the one row %d", list, err, ev.ID)
	}
	var mode string
	if err := again.DB().GetContext(ctx, &mode, "PRAGMA journal_mode"); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q (%v), want wal", mode, err)
	}
}

func TestMigrationsGoDownAndUpAgain(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, ":memory:")
	p, err := goose.NewProvider(goose.DialectSQLite3, s.DB().DB, migrations.SQLite, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 0); err != nil {
		t.Fatalf("down: %v", err)
	}
	var tables int
	if err := s.DB().GetContext(ctx, &tables, `SELECT count(*) FROM sqlite_schema
WHERE type = 'table' AND name NOT IN ('goose_db_version', 'sqlite_sequence')`); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("%d tables left after migrating down to 0", tables)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
}

func TestClosedStoreIsUnavailable(t *testing.T) {
	ctx := context.Background()
	for _, path := range []string{":memory:", filepath.Join(t.TempDir(), "x.db")} {
		t.Run(path, func(t *testing.T) {
			s := newStore(t, path)
			// Use the hot-path statements first: closed ones must not turn into EInternal.
			_, _ = s.LoadCaller(ctx, &gateway.Principal{WorkspaceID: "ws"})
			_ = s.RecordAudit(ctx, &gateway.AuditEvent{})
			_ = s.Close()
			_, lerr := s.LoadCaller(ctx, &gateway.Principal{WorkspaceID: "ws"})
			for name, err := range map[string]error{
				"Ping":        s.Ping(ctx),
				"LoadCaller":  lerr,
				"RecordAudit": s.RecordAudit(ctx, &gateway.AuditEvent{}),
			} {
				if gateway.ErrorCodeOf(err) != gateway.EUnavailable {
					t.Errorf("%s on a closed store: %v, want EUnavailable", name, err)
				}
			}
		})
	}
}

func BenchmarkLoadCaller(b *testing.B) {
	b.Run("memory", func(b *testing.B) { storetest.BenchLoadCaller(b, newStore(b, ":memory:")) })
	b.Run("file", func(b *testing.B) {
		storetest.BenchLoadCaller(b, newStore(b, filepath.Join(b.TempDir(), "bench.db")))
	})
}

func BenchmarkRecordAudit(b *testing.B) {
	b.Run("memory", func(b *testing.B) { storetest.BenchRecordAudit(b, newStore(b, ":memory:")) })
	b.Run("file", func(b *testing.B) {
		storetest.BenchRecordAudit(b, newStore(b, filepath.Join(b.TempDir(), "bench.db")))
	})
	b.Run("file-parallel", func(b *testing.B) {
		storetest.BenchRecordAuditParallel(b, newStore(b, filepath.Join(b.TempDir(), "bench.db")))
	})
}

// Issue 8, point 4: /readyz's Ping has a short deadline of its own, also
// when the one write connection is held by another writer.
func TestPingHasADeadline(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ping.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tx, err := s.DB().BeginTxx(ctx, nil) // holds the write connection
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- s.Ping(ctx) }()
	select {
	case err := <-done:
		if err == nil || time.Since(start) > 3*time.Second {
			t.Errorf("Ping with the write connection held: %v after %v; want not ready within 2 s", err, time.Since(start))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Ping without a deadline of its own still waits after 5 s")
	}
}

func BenchmarkCallWrites(b *testing.B) {
	storetest.BenchCallWrites(b, newStore(b, filepath.Join(b.TempDir(), "bench.db")))
}

// Close lets the finishes under way (FinishAudit's group commit) land.
func TestCloseDrainsFinishes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drain.db")
	s := newStore(t, path)
	storetest.CloseDrains(t, s, s.Close, func() storetest.Store { return newStore(t, path) })
}

// BenchmarkCallWritesSerial is one client's store writes per call (a
// reservation, then its finish), each under a deadline as the pipeline
// sets one (storeTimeout): what a call waits for in the store at c=1.
func BenchmarkCallWritesSerial(b *testing.B) {
	s := newStore(b, filepath.Join(b.TempDir(), "bench.db"))
	slot := gateway.Slot{Bucket: "task.read", Key: "bench:t1", Window: time.Unix(0, 0).UTC(),
		Limit: 1 << 40, WorkspaceID: "ws-a", TaskID: "t1"}
	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ev := &gateway.AuditEvent{Time: time.Now(), WorkspaceID: "ws-a", TaskID: "t1", Tool: "app.list",
			Status: gateway.AuditAllowed, ReasonCodes: []string{}}
		res, err := s.Reserve(ctx, gateway.Reservation{Event: ev, Slots: []gateway.Slot{slot}})
		if err != nil {
			b.Fatal(err)
		}
		ev.ID = res.AuditID
		if err := s.FinishAudit(ctx, ev); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
}

// An export of a tampered store is refused offline at the exact seq.
func TestAuditExportTamper(t *testing.T) {
	storetest.ExportTamper(t, func(t *testing.T) storetest.Store {
		return newStore(t, filepath.Join(t.TempDir(), "mcpgate.db"))
	})
}
