package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/postgres"
	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
	"github.com/mcpgate/mcpgate/gateway/storetest"
)

func TestRateLimits(t *testing.T) {
	pgtest.URL(t)
	storetest.RunRateLimits(t, func(t *testing.T) storetest.Store { return pgtest.New(t) })
}

// Two stores on one schema are two gateway replicas: their reservations
// must share the buckets exactly.
func TestRateLimitsAcrossReplicas(t *testing.T) {
	a, url := pgtest.NewWithURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	b.DB().SetMaxOpenConns(4)
	storetest.ConcurrentReservations(t, []storetest.Store{a, b})
}

// A reservation without a claim is one statement in autocommit: at a full
// counter the statement raises and rolls back entirely, so it leaves no
// counter row it created, no slot taken before the full one and no audit
// row — not even counters at zero.
func TestFullReservationWritesNothing(t *testing.T) {
	s := pgtest.New(t)
	ctx := context.Background()
	epoch := time.Unix(0, 0).UTC()
	ev := &gateway.AuditEvent{WorkspaceID: "ws", Tool: "app.deploy", Status: gateway.AuditAllowed}
	res, err := s.Reserve(ctx, gateway.Reservation{Event: ev, Slots: []gateway.Slot{
		{Key: "new-task", Window: epoch, Limit: 5, WorkspaceID: "ws", TaskID: "t"},
		{Key: "new-day", Window: epoch, Expires: epoch.Add(24 * time.Hour), Limit: 0},
	}})
	if err != nil || res.Full != 2 || res.Used != 0 || res.AuditID != 0 {
		t.Fatalf("Reserve with a full second slot: %+v, %v; want Full 2, Used 0", res, err)
	}
	var counters, rows int
	if err := s.DB().QueryRowContext(ctx, `SELECT (SELECT count(*) FROM rate_limit_counters), (SELECT count(*) FROM audit_events)`).
		Scan(&counters, &rows); err != nil {
		t.Fatal(err)
	}
	if counters != 0 || rows != 0 {
		t.Fatalf("after a full reservation: %d counter rows, %d audit rows; want none", counters, rows)
	}
	// A counter that exists keeps its count; the full one reports it.
	for i := range 2 {
		res, err = s.Reserve(ctx, gateway.Reservation{Event: ev, Slots: []gateway.Slot{{Key: "k", Window: epoch, Limit: 2}}})
		if err != nil || res.AuditID == 0 {
			t.Fatalf("reservation %d: %+v, %v", i, res, err)
		}
	}
	res, err = s.Reserve(ctx, gateway.Reservation{Event: ev, Slots: []gateway.Slot{{Key: "k", Window: epoch, Limit: 2}}})
	if err != nil || res.Full != 1 || res.Used != 2 {
		t.Fatalf("third reservation of a bucket of 2: %+v, %v; want Full 1, Used 2", res, err)
	}
	if n, err := s.RateCount(ctx, "k", epoch); err != nil || n != 2 {
		t.Fatalf("count after the refusal: %d, %v; want 2", n, err)
	}
}
