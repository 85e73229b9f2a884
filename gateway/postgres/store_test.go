package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/postgres"
	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
	"github.com/mcpgate/mcpgate/gateway/storetest"
	"github.com/mcpgate/mcpgate/migrations"
)

// The store passes the shared suite; its consumers (gateway/server,
// gateway/admin) check that it serves them where they use it.
var _ storetest.Store = (*postgres.Store)(nil)

func TestStore(t *testing.T) {
	pgtest.URL(t) // skip once, not per subtest, when no database is configured
	storetest.Run(t, func(t *testing.T) storetest.Store { return pgtest.New(t) })
}

// Tampering with the tables directly is caught.
func TestAuditChainTamper(t *testing.T) {
	storetest.Tamper(t, func(t *testing.T) storetest.Store { return pgtest.New(t) })
}

// An export of a tampered store is refused offline at the exact seq.
func TestAuditExportTamper(t *testing.T) {
	storetest.ExportTamper(t, func(t *testing.T) storetest.Store { return pgtest.New(t) })
}

// BenchmarkVerifyAuditChain: rows/s of mcpgate audit verify's work
// (MCPGATE_BENCH_AUDIT_ROWS rows, default 100,000).
func BenchmarkVerifyAuditChain(b *testing.B) { storetest.BenchVerify(b, pgtest.New(b)) }

func TestMigrateConcurrentReplicas(t *testing.T) {
	url := pgtest.SchemaURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const replicas = 5
	stores := make([]*postgres.Store, replicas)
	for i := range stores {
		s, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		stores[i] = s
	}
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() { errs[i] = s.Migrate(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: Migrate: %v", i, err)
		}
	}
	// Idempotent: a second run on a migrated schema is a no-op.
	if err := stores[0].Migrate(ctx); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	if err := stores[1].RecordAudit(ctx, &gateway.AuditEvent{WorkspaceID: "ws-a", Tool: "x"}); err != nil {
		t.Fatalf("migrated schema refuses an audit row: %v", err)
	}
}

func TestMigrationsGoDownAndUpAgain(t *testing.T) {
	s := pgtest.New(t)
	ctx := context.Background()
	p, err := goose.NewProvider(goose.DialectPostgres, s.DB().DB, migrations.Postgres, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 0); err != nil {
		t.Fatalf("down: %v", err)
	}
	var tables int
	if err := s.DB().GetContext(ctx, &tables,
		`SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name <> 'goose_db_version'`); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("%d tables left after migrating down to 0", tables)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
}

func TestUnavailable(t *testing.T) {
	ctx := context.Background()
	t.Run("nothing listens", func(t *testing.T) {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := postgres.Open(c, "postgres://u:secret-pw@127.0.0.1:1/db?sslmode=disable&connect_timeout=2")
		if gateway.ErrorCodeOf(err) != gateway.EUnavailable {
			t.Fatalf("Open of a closed port: %v, want EUnavailable", err)
		}
		if msg := gateway.ErrorMessageOf(err); strings.Contains(msg, "secret-pw") || !strings.Contains(msg, "MCPGATE_DATABASE_URL") {
			t.Errorf("message %q must name MCPGATE_DATABASE_URL and never the password", msg)
		}
	})
	t.Run("closed store", func(t *testing.T) {
		_, url := pgtest.NewWithURL(t)
		s, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		// Use the hot-path statements first: closed ones must not turn into EInternal.
		_, _ = s.LoadCaller(ctx, &gateway.Principal{WorkspaceID: "ws"})
		_ = s.RecordAudit(ctx, &gateway.AuditEvent{})
		_ = s.Close()
		for name, err := range map[string]error{
			"Ping":        s.Ping(ctx),
			"LoadCaller":  func() error { _, err := s.LoadCaller(ctx, &gateway.Principal{WorkspaceID: "ws"}); return err }(),
			"RecordAudit": s.RecordAudit(ctx, &gateway.AuditEvent{}),
		} {
			if gateway.ErrorCodeOf(err) != gateway.EUnavailable {
				t.Errorf("%s on a closed store: %v, want EUnavailable", name, err)
			}
		}
	})
}

func BenchmarkLoadCaller(b *testing.B) { storetest.BenchLoadCaller(b, pgtest.New(b)) }

func BenchmarkRecordAudit(b *testing.B) { storetest.BenchRecordAudit(b, pgtest.New(b)) }

func BenchmarkRecordAuditParallel(b *testing.B) {
	s := pgtest.New(b)
	s.DB().SetMaxOpenConns(16) // pgtest keeps pools small; a replica's is 20
	storetest.BenchRecordAuditParallel(b, s)
}

func BenchmarkCallWrites(b *testing.B) {
	s := pgtest.New(b)
	s.DB().SetMaxOpenConns(16) // pgtest keeps pools small; a replica's is 20
	s.DB().SetMaxIdleConns(16)
	storetest.BenchCallWrites(b, s)
}

// Close lets the finishes under way (FinishAudit's group commit) land.
func TestCloseDrainsFinishes(t *testing.T) {
	s, url := pgtest.NewWithURL(t)
	storetest.CloseDrains(t, s, s.Close, func() storetest.Store {
		r, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		return r
	})
}

// The finish commits asynchronously for its own transaction only: the
// connection it ran on keeps synchronous_commit on, so the reservation
// that next uses it stays durable before dispatch.
func TestFinishLeavesCommitsSynchronous(t *testing.T) {
	s := pgtest.New(t)
	s.DB().SetMaxOpenConns(1)
	ctx := context.Background()
	ev := &gateway.AuditEvent{WorkspaceID: "ws", Tool: "app.list", Status: gateway.AuditAllowed}
	if err := s.RecordAudit(ctx, ev); err != nil {
		t.Fatal(err)
	}
	ev.Status, ev.LatencyMicros = gateway.AuditError, 77
	if err := s.FinishAudit(ctx, ev); err != nil {
		t.Fatal(err)
	}
	var mode string
	if err := s.DB().QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "on" {
		t.Fatalf("synchronous_commit after a finish: %q, want on", mode)
	}
	list, err := s.ListAuditEvents(ctx, gateway.AuditFilter{WorkspaceID: "ws"})
	if err != nil || len(list) != 1 || list[0].Status != gateway.AuditError || list[0].LatencyMicros != 77 {
		t.Fatalf("finished row: %+v, %v", list, err)
	}
	// Inside its own transaction the finish function (migration 00015)
	// does turn synchronous_commit off, and reports only the ids it found.
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	var found string
	err = tx.QueryRowContext(ctx, `SELECT mcpgate_finish_audits($1::bigint[], '{ok,ok}', '{"",""}', '{1,2}', '{[],[]}', '{"",""}')::text`,
		fmt.Sprintf("{%d,%d}", ev.ID, ev.ID+1000)).Scan(&found)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("{%d}", ev.ID); found != want {
		t.Fatalf("mcpgate_finish_audits found %s, want %s", found, want)
	}
	if err := tx.QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "off" {
		t.Fatalf("synchronous_commit inside a finish's transaction: %q, want off", mode)
	}
	// So does the statement that finishes a lone row (the finish of every
	// call that finishes while no other does), for the row it found.
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	tx2, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx2.Rollback() }()
	var id int64
	if err := tx2.QueryRowContext(ctx, postgres.FinishOneAudit, ev.ID, "ok", "", 3, "[]", "").Scan(&id); err != nil || id != ev.ID {
		t.Fatalf("lone finish of row %d: id %d, %v", ev.ID, id, err)
	}
	if err := tx2.QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "off" {
		t.Fatalf("synchronous_commit inside a lone finish's transaction: %q, want off", mode)
	}
}
