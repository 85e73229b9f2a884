package postgres_test

import (
	"context"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
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
