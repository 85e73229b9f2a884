package postgres_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auditchain"
	"github.com/mcpgate/mcpgate/gateway/postgres"
	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
)

// Only the holder of the sealing lease seals: while another session (a
// replica mid-round) holds it, a round seals nothing and returns at once;
// once that session dies (its backend ends, as when a replica is
// SIGKILLed), the next round of this replica takes over and seals.
func TestSealingLeaseTakenOverWhenTheHolderDies(t *testing.T) {
	ctx := context.Background()
	s, url := pgtest.NewWithURL(t)
	other, err := postgres.Open(ctx, url) // a second replica on the same schema
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	for range 3 {
		if err := s.RecordAudit(ctx, &gateway.AuditEvent{WorkspaceID: "ws-a", Tool: "app.list", Status: gateway.AuditDenied}); err != nil {
			t.Fatal(err)
		}
	}
	holder, err := other.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Close() }()
	var pid int
	if err := holder.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	var held bool
	if err := holder.QueryRowContext(ctx, `SELECT pg_try_advisory_xact_lock(hashtext('mcpgate audit chain ' || current_schema()))`).Scan(&held); err != nil || !held {
		t.Fatalf("the other replica could not take the lease: %v %v", held, err)
	}
	if n, err := s.SealAudit(ctx); err != nil || n != 0 {
		t.Fatalf("round while another replica holds the lease = %d, %v; want 0", n, err)
	}
	if _, err := s.DB().ExecContext(ctx, `SELECT pg_terminate_backend($1, 5000)`, pid); err != nil {
		t.Fatal(err)
	}
	if n, err := s.SealAudit(ctx); err != nil || n != 3 {
		t.Fatalf("round after the holder died = %d, %v; want the 3 rows sealed", n, err)
	}
	rep, err := s.VerifyAuditChain(ctx)
	if err != nil || rep.Problem != nil || rep.Verified != 3 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

// The sealer vacuums its queue (audit_unsealed) after a round that sealed
// rows, at most once every sqlcore.SealVacuumEvery: the deleted entries
// would otherwise stay until autovacuum comes, and every round would read
// past them.
func TestSealerVacuumsItsQueue(t *testing.T) {
	ctx := context.Background()
	s := pgtest.New(t)
	vacuums := func() int { return vacuumCount(t, s) }
	sealOne := func() {
		t.Helper()
		if err := s.RecordAudit(ctx, &gateway.AuditEvent{WorkspaceID: "ws-a", Tool: "app.list", Status: gateway.AuditDenied}); err != nil {
			t.Fatal(err)
		}
		if n, err := s.SealAudit(ctx); err != nil || n != 1 {
			t.Fatalf("round = %d, %v; want 1 sealed", n, err)
		}
	}
	if n, err := s.SealAudit(ctx); err != nil || n != 0 || vacuums() != 0 {
		t.Fatalf("a round with nothing to seal = %d, %v, %d vacuums; want 0 sealed, no vacuum", n, err, vacuums())
	}
	sealOne()
	// A vacuum's count is public as it ends (PostgreSQL 15 and later);
	// a short wait for older servers.
	for deadline := time.Now().Add(5 * time.Second); vacuums() == 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if got := vacuums(); got != 1 {
		t.Fatalf("vacuums of audit_unsealed after the first round that sealed = %d; want 1", got)
	}
	sealOne()
	if got := vacuums(); got != 1 {
		t.Fatalf("vacuums within SealVacuumEvery of the last = %d; want still 1", got)
	}
}

// vacuumCount is how many times audit_unsealed was vacuumed by a VACUUM
// (not autovacuum) in s's schema.
func vacuumCount(t *testing.T, s *postgres.Store) int {
	t.Helper()
	var n int
	err := s.DB().QueryRowContext(context.Background(), `SELECT vacuum_count FROM pg_stat_user_tables
	    WHERE schemaname = current_schema() AND relname = 'audit_unsealed'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A gateway whose role does not own the queue seals all the same; the
// first round that would vacuum reports, once, that the role may not
// (PostgreSQL would only warn in its own log), and no round tries again.
func TestSealerNotOwningItsQueueSaysSoOnce(t *testing.T) {
	ctx := context.Background()
	owner, dsn := pgtest.NewWithURL(t)
	role := "mcpgate_test_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	db := owner.DB()
	for _, q := range []string{
		`CREATE ROLE ` + role + ` NOLOGIN`,
		`GRANT USAGE ON SCHEMA ` + schemaOf(t, owner) + ` TO ` + role,
		`GRANT ALL ON ALL TABLES IN SCHEMA ` + schemaOf(t, owner) + ` TO ` + role,
		`GRANT ALL ON ALL SEQUENCES IN SCHEMA ` + schemaOf(t, owner) + ` TO ` + role,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_, _ = db.Exec(`DROP OWNED BY ` + role)
		_, _ = db.Exec(`DROP ROLE ` + role)
	})
	// The test's login is a superuser; the role parameter makes each
	// session act as the role that does not own the tables.
	s, err := postgres.Open(ctx, dsn+"&role="+role)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	var current string
	if err := s.DB().QueryRowContext(ctx, `SELECT current_user`).Scan(&current); err != nil || current != role {
		t.Fatalf("session role = %q, %v; want %s", current, err, role)
	}
	for i := range 2 {
		if err := s.RecordAudit(ctx, &gateway.AuditEvent{WorkspaceID: "ws-a", Tool: "app.list", Status: gateway.AuditDenied}); err != nil {
			t.Fatal(err)
		}
		n, err := s.SealAudit(ctx)
		if n != 1 {
			t.Fatalf("round %d sealed %d rows (%v); want 1", i, n, err)
		}
		switch {
		case i == 0 && (!errors.Is(err, auditchain.ErrQueueUpkeep) || !strings.Contains(err.Error(), "does not own audit_unsealed")):
			t.Fatalf("first round's error = %v; want the queue upkeep's, saying the role does not own audit_unsealed", err)
		case i == 1 && err != nil:
			t.Fatalf("second round's error = %v; want none (the refusal is told once)", err)
		}
	}
	if got := vacuumCount(t, owner); got != 0 {
		t.Fatalf("vacuums of audit_unsealed = %d; want none", got)
	}
}

// schemaOf is the schema s's sessions use (pgtest gives each store one).
func schemaOf(t *testing.T, s *postgres.Store) string {
	t.Helper()
	var schema string
	if err := s.DB().QueryRowContext(context.Background(), `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	return schema
}

// A sealing round looks each queued row up a bounded number of times,
// whatever PostgreSQL's statistics say of the queue. A vacuum of the
// queue while it is empty (the sealer's own, or autovacuum's) records it
// as holding no rows; the claim, planned on that, once became a nested
// loop that ran the candidate scan again for each queued row: 80,000
// lookups of audit_events for 400 rows, in a benchmark 200 ms a round.
func TestSealRoundLooksEachRowUpOnce(t *testing.T) {
	ctx := context.Background()
	s := pgtest.New(t)
	db := s.DB()
	db.SetMaxOpenConns(1)
	// Autovacuum's analyze would give the queue statistics of its own.
	for _, table := range []string{"audit_unsealed", "audit_events"} {
		if _, err := db.ExecContext(ctx, `ALTER TABLE `+table+` SET (autovacuum_enabled = false)`); err != nil {
			t.Fatal(err)
		}
	}
	const rows = 400
	queue := func(n int) {
		t.Helper()
		if _, err := db.ExecContext(ctx, `INSERT INTO audit_events (request_id, workspace_id, tool, tier, status, reason_codes, open)
SELECT 'req-' || i, 'ws-a', 'app.list', 'read', 'allowed', '[]', false FROM generate_series(1, $1) i`, n); err != nil {
			t.Fatal(err)
		}
	}
	// The queue's pages stay, its rows are gone: the statistics then say
	// it holds none, in pages enough to be read by its index.
	queue(20 * rows)
	if n, err := s.SealAudit(ctx); err != nil || n != 20*rows {
		t.Fatalf("rounds = %d, %v; want %d sealed", n, err, 20*rows)
	}
	if _, err := db.ExecContext(ctx, `VACUUM (TRUNCATE false) audit_unsealed`); err != nil {
		t.Fatal(err)
	}
	lookups := func() int64 {
		t.Helper()
		var n int64
		err := db.QueryRowContext(ctx, `SELECT idx_scan FROM pg_stat_user_indexes
		    WHERE schemaname = current_schema() AND indexrelname = 'audit_events_pkey'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// One session does all the work, and asks for its counters to be
	// published as it goes idle, before the next statement is read.
	settled := func() int64 {
		t.Helper()
		if _, err := db.ExecContext(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		return lookups()
	}
	before := settled()
	queue(rows)
	if n, err := s.SealAudit(ctx); err != nil || n != rows {
		t.Fatalf("round = %d, %v; want %d sealed", n, err, rows)
	}
	after := settled()
	if got := after - before; got == 0 || got > 4*rows {
		t.Fatalf("the round looked audit_events up %d times for %d rows; want at least one and at most %d", got, rows, 4*rows)
	}
}
