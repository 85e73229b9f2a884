package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auditchain"
)

// SealerCost is what BenchSealerCost measures with: Open returns an
// empty, migrated store whose pool holds Conns connections; CPU returns
// the CPU time its database has used so far (the process's own for the
// embedded store, the store's backends for PostgreSQL), reported per
// call under Metric.
type SealerCost struct {
	Open   func(b *testing.B, conns int) Store
	CPU    func(b *testing.B, s Store) time.Duration
	Metric string
}

// BenchSealerCost measures what the audit sealer costs a store: 16
// goroutines each reserve a call (one slot) and finish its audit row,
// with the sealing loop off and on (auditchain.Loop every
// auditchain.Every, then rounds until every row is sealed), in the same
// run; the CPU per call is reported under m.Metric, without the chain
// verifications that check every row is sealed (sealAll).
func BenchSealerCost(b *testing.B, m SealerCost) {
	for _, sealer := range []bool{false, true} {
		b.Run(fmt.Sprintf("sealer=%v", sealer), func(b *testing.B) { benchSealerCost(b, m, sealer) })
	}
}

func benchSealerCost(b *testing.B, m SealerCost, sealer bool) {
	const goroutines = 16
	ctx := context.Background()
	s := m.Open(b, goroutines)
	slot := gateway.Slot{Bucket: "task.read", Key: "day:ws", Window: time.Date(2026, 5, 6, 0, 0, 0, 0, time.UTC),
		Limit: 1 << 40, WorkspaceID: "ws", TaskID: "t"}
	call := func() error {
		ev := &gateway.AuditEvent{Time: time.Now(), WorkspaceID: "ws", TaskID: "t", Tool: "schedule.pause",
			Status: gateway.AuditAllowed, ReasonCodes: []string{}}
		res, err := s.Reserve(ctx, gateway.Reservation{Event: ev, Slots: []gateway.Slot{slot}})
		if err != nil {
			return err
		}
		ev.ID, ev.LatencyMicros = res.AuditID, 1000
		return s.FinishAudit(ctx, ev)
	}
	for range goroutines * 4 { // open the pool's connections
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.SealAudit(ctx); err != nil {
		b.Fatal(err)
	}
	loopCtx, stop := context.WithCancel(ctx)
	var loop sync.WaitGroup
	if sealer {
		loop.Go(func() {
			auditchain.Loop(loopCtx, s, nil, auditchain.Every, func(err error) { b.Error(err) })
		})
	}
	before := m.CPU(b, s)
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ResetTimer()
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := call(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	stop()
	loop.Wait()
	var checks time.Duration
	if sealer {
		checks = sealAll(b, m, s)
	}
	b.StopTimer()
	b.ReportMetric(float64((m.CPU(b, s)-before-checks).Microseconds())/float64(b.N), m.Metric)
	if sealer {
		rep, err := s.VerifyAuditChain(ctx)
		if err != nil || rep.Problem != nil || rep.Unsealed != 0 {
			b.Fatalf("verify after the run: %+v %v; want every row sealed", rep, err)
		}
	}
}

// sealAll seals what the loop left. A round of the loop cancelled
// mid-way keeps PostgreSQL's lease until its rollback; a round meanwhile
// seals nothing, so it tries again until verify finds nothing unsealed.
// It returns the CPU (m.CPU) those verifies took: each recomputes the
// whole chain (as long as the run), which is the check's cost, not the
// sealer's, so the benchmark leaves it out.
func sealAll(b *testing.B, m SealerCost, s Store) (checks time.Duration) {
	ctx := context.Background()
	for deadline := time.Now().Add(30 * time.Second); ; {
		n, err := s.SealAudit(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if n > 0 {
			continue
		}
		start := m.CPU(b, s)
		rep, err := s.VerifyAuditChain(ctx)
		if err != nil {
			b.Fatal(err)
		}
		checks += m.CPU(b, s) - start
		if rep.Unsealed == 0 || time.Now().After(deadline) {
			return checks
		}
		time.Sleep(10 * time.Millisecond)
	}
}
