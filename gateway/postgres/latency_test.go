package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
)

// BenchmarkCallSerial measures the two statements of one read call on the
// path of its reply, as at c=1: Reserve (one per-task slot and the audit
// row, synchronous commit) and then FinishAudit (asynchronous commit),
// one call after another from one goroutine. It reports each one's median
// and 99th percentile in µs.
func BenchmarkCallSerial(b *testing.B) {
	s := pgtest.New(b)
	ctx := context.Background()
	epoch := time.Unix(0, 0).UTC()
	var reserve, finish []time.Duration
	for b.Loop() {
		ev := &gateway.AuditEvent{Time: time.Now().UTC(), RequestID: "req-1", WorkspaceID: "ws", TaskID: "task-1",
			ProfileID: "p", Actor: "agent", PrincipalKind: gateway.PrincipalAgent, TokenFP: "fp", Tool: "supacloud.read.echo",
			Tier: "read", Status: gateway.AuditAllowed, ArgumentsHash: "h", Surface: "mcp", Mode: "agent"}
		t0 := time.Now()
		res, err := s.Reserve(ctx, gateway.Reservation{Event: ev, Slots: []gateway.Slot{
			{Bucket: "tool", Key: "task:ws:task-1", Window: epoch, Limit: 1 << 40, WorkspaceID: "ws", TaskID: "task-1"}}})
		t1 := time.Now()
		if err != nil || res.AuditID == 0 {
			b.Fatalf("Reserve: %+v, %v", res, err)
		}
		ev.ID, ev.LatencyMicros = res.AuditID, 300
		if err := s.FinishAudit(ctx, ev); err != nil {
			b.Fatalf("FinishAudit: %v", err)
		}
		reserve, finish = append(reserve, t1.Sub(t0)), append(finish, time.Since(t1))
	}
	b.StopTimer()
	report := func(name string, d []time.Duration) {
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2])/1e3, name+"-p50-µs")
		b.ReportMetric(float64(d[len(d)*99/100])/1e3, name+"-p99-µs")
	}
	report("reserve", reserve)
	report("finish", finish)
}
