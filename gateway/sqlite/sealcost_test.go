package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auditchain"
)

// BenchmarkSealerCost measures what the audit sealer costs the embedded
// store: 16 goroutines each reserve a call (one slot) and finish its
// audit row, with the sealing loop off and on (auditchain.Loop every
// auditchain.Every, then a last round so that every row is sealed), in
// the same run. cpu-us/op is this process's CPU time (user+system, from
// getrusage) per call: the embedded store runs in the process, so it is
// the store's whole cost, sealing included.
func BenchmarkSealerCost(b *testing.B) {
	for _, sealer := range []bool{false, true} {
		b.Run(fmt.Sprintf("sealer=%v", sealer), func(b *testing.B) { benchSealerCost(b, sealer) })
	}
}

func benchSealerCost(b *testing.B, sealer bool) {
	const goroutines = 16
	ctx := context.Background()
	s := newStore(b, filepath.Join(b.TempDir(), "seal.db"))
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
	for range goroutines * 4 {
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
	before := selfCPU(b)
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
	if sealer {
		for {
			n, err := s.SealAudit(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((selfCPU(b)-before).Microseconds())/float64(b.N), "cpu-us/op")
	if sealer {
		rep, err := s.VerifyAuditChain(ctx)
		if err != nil || rep.Problem != nil || rep.Unsealed != 0 {
			b.Fatalf("verify after the run: %+v %v; want every row sealed", rep, err)
		}
	}
}

// selfCPU is the CPU time (user and system) this process has used.
func selfCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
