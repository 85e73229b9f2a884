package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auditchain"
	"github.com/mcpgate/mcpgate/gateway/postgres"
	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
)

// BenchmarkSealerCost measures what the audit sealer costs PostgreSQL:
// 16 goroutines each reserve a call (one slot) and finish its audit row,
// with the sealing loop off and on (auditchain.Loop every
// auditchain.Every, then a last round so that every row is sealed), in
// the same run. pg-cpu-us/op is the CPU time (user+system, from /proc)
// of this benchmark's PostgreSQL backends (its application_name) per
// call; autovacuum and the WAL writer, shared with other databases, are
// not counted.
func BenchmarkSealerCost(b *testing.B) {
	for _, sealer := range []bool{false, true} {
		b.Run(fmt.Sprintf("sealer=%v", sealer), func(b *testing.B) { benchSealerCost(b, sealer) })
	}
}

func benchSealerCost(b *testing.B, sealer bool) {
	const goroutines = 16
	ctx := context.Background()
	app := "mcpgate-sealcost-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	_, dsn := pgtest.NewWithURL(b)
	u, err := url.Parse(dsn)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	s, err := postgres.Open(ctx, u.String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	s.DB().SetMaxOpenConns(goroutines)
	s.DB().SetMaxIdleConns(goroutines)
	limits := gateway.Slot{Key: "day:ws", Window: time.Date(2026, 5, 6, 0, 0, 0, 0, time.UTC), Limit: 1 << 40}
	call := func() error {
		ev := &gateway.AuditEvent{WorkspaceID: "ws", TaskID: "t", Tool: "schedule.pause", Status: gateway.AuditAllowed}
		res, err := s.Reserve(ctx, gateway.Reservation{Event: ev, Slots: []gateway.Slot{limits}})
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
	before := backendCPU(b, s, app)
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
	// The last rounds seal what is left. A round of the loop cancelled
	// mid-way keeps the lease until PostgreSQL has rolled it back; a
	// round meanwhile seals nothing, so try again until nothing is left.
	for deadline := time.Now().Add(30 * time.Second); sealer; {
		if _, err := s.SealAudit(ctx); err != nil {
			b.Fatal(err)
		}
		var left int
		if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM audit_unsealed`).Scan(&left); err != nil {
			b.Fatal(err)
		}
		if left == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.StopTimer()
	after := backendCPU(b, s, app)
	b.ReportMetric(float64(after-before)/float64(b.N), "pg-cpu-us/op")
	if sealer {
		rep, err := s.VerifyAuditChain(ctx)
		if err != nil || rep.Problem != nil || rep.Unsealed != 0 {
			b.Fatalf("verify after the run: %+v %v; want every row sealed", rep, err)
		}
	}
}

// backendCPU is the CPU time in microseconds (user+system) of the
// PostgreSQL backends whose application_name is app, read from /proc
// (PostgreSQL runs on this machine in the tests).
func backendCPU(b *testing.B, s *postgres.Store, app string) int64 {
	b.Helper()
	var pids []int
	rows, err := s.DB().QueryContext(context.Background(), `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			b.Fatal(err)
		}
		pids = append(pids, pid)
	}
	var ticks int64
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Skipf("cannot read PostgreSQL's backend CPU (is it on this machine?): %v", err)
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += utime + stime
	}
	return ticks * 1e6 / 100 // USER_HZ is 100 on Linux
}
