package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/mcpgate/mcpgate/gateway"
)

// TestRefusedReservationNeverCommitsAfterStall: a reservation whose
// deadline passed while PostgreSQL did not answer (a proxy holds the
// statement's bytes, as a stalled backend's socket does; lib/pq's
// CancelRequest cannot get through either) is refused to the client, and
// it must not commit once the stall ends: no allowed audit row (latency 0
// would read "dispatched") and no used slot.
func TestRefusedReservationNeverCommitsAfterStall(t *testing.T) {
	s, px := stalledStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	epoch := time.Unix(0, 0).UTC()
	for _, tc := range []struct {
		note  string
		slots []gateway.Slot
	}{
		{"one slot", []gateway.Slot{{Key: "stall-one", Window: epoch, Limit: 5}}},
		{"several slots", []gateway.Slot{{Key: "stall-a", Window: epoch, Limit: 5}, {Key: "stall-b", Window: epoch, Limit: 5}}},
	} {
		t.Run(tc.note, func(t *testing.T) {
			// One connection, its statements prepared: the stall holds
			// the reservation itself, not a Parse before it.
			s.DB().SetMaxOpenConns(1)
			if _, err := s.Reserve(ctx, gateway.Reservation{Event: &gateway.AuditEvent{WorkspaceID: "ws", Tool: "t", Status: gateway.AuditAllowed, RequestID: "warm"},
				Slots: []gateway.Slot{{Key: "warm-" + tc.note, Window: epoch, Limit: 5}, {Key: "warm2-" + tc.note, Window: epoch, Limit: 5}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Reserve(ctx, gateway.Reservation{Event: &gateway.AuditEvent{WorkspaceID: "ws", Tool: "t", Status: gateway.AuditAllowed, RequestID: "warm"},
				Slots: []gateway.Slot{{Key: "warm-" + tc.note, Window: epoch, Limit: 5}}}); err != nil {
				t.Fatal(err)
			}
			px.Stall(true)
			rctx, rcancel := context.WithTimeout(ctx, 400*time.Millisecond)
			_, err := s.Reserve(rctx, gateway.Reservation{Event: &gateway.AuditEvent{WorkspaceID: "ws", Tool: "t", Status: gateway.AuditAllowed, RequestID: "refused-" + tc.note},
				Slots: tc.slots})
			rcancel()
			if err == nil {
				px.Stall(false)
				t.Fatal("the reservation succeeded while PostgreSQL stalled")
			}
			time.Sleep(100 * time.Millisecond)
			px.Stall(false)                    // the held statement reaches its backend now
			time.Sleep(500 * time.Millisecond) // give it the time to run and commit, as it did
			var rows, used int
			if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM audit_events WHERE request_id = $1`, "refused-"+tc.note).Scan(&rows); err != nil {
				t.Fatal(err)
			}
			if rows != 0 {
				t.Errorf("the refused reservation left %d audit rows", rows)
			}
			keys := make([]string, len(tc.slots))
			for i, sl := range tc.slots {
				keys[i] = sl.Key
			}
			if err := s.DB().QueryRowContext(ctx, `SELECT coalesce(sum(count), 0) FROM rate_limit_counters WHERE bucket_key = ANY($1)`, pq.Array(keys)).Scan(&used); err != nil {
				t.Fatal(err)
			}
			if used != 0 {
				t.Errorf("%d slots used by the refused reservation; want 0", used)
			}
		})
	}
}
