package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/auditchain"
	"github.com/mcpgate/mcpgate/gateway/postgres"
	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
	"github.com/mcpgate/mcpgate/gateway/storetest"
)

// BenchmarkSealerCost (storetest.BenchSealerCost): pg-cpu-us/op is the
// CPU time (user+system, from /proc) of this benchmark's PostgreSQL
// backends (its application_name) per call; autovacuum and the WAL
// writer, shared with other databases, are not counted.
func BenchmarkSealerCost(b *testing.B) {
	apps := map[storetest.Store]string{}
	storetest.BenchSealerCost(b, storetest.SealerCost{
		Open: func(b *testing.B, conns int) storetest.Store {
			s, app, _ := openNamed(b, conns)
			apps[s] = app
			return s
		},
		CPU: func(b *testing.B, s storetest.Store) time.Duration {
			return backendCPU(b, s.(*postgres.Store), apps[s])
		},
		Metric: "pg-cpu-us/op",
	})
}

// BenchmarkSealRound measures sealing rounds of sealRoundRows finished
// rows each (about a quarter second of calls at 1,600 calls/s, what a
// round of the sealing loop finds under load), seeded before each round
// with the timer stopped, through another connection, a round every
// auditchain.Every as the sealing loop runs them: pg-cpu-us/row is
// the CPU of the sealer's PostgreSQL backend per sealed row (from /proc,
// 10 ms ticks: run enough rounds), cpu-us/row this process's.
func BenchmarkSealRound(b *testing.B) {
	const sealRoundRows = 400
	ctx := context.Background()
	s, app, dsn := openNamed(b, 1)
	seeder, err := postgres.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = seeder.Close() })
	seed := `INSERT INTO audit_events (time, request_id, workspace_id, task_id, actor, tool, tier, status, reason_codes, latency_us, arguments_hash, open)
SELECT now(), 'req-' || i, 'ws-a', 't1', 'u1', 'app.list', 'read', 'allowed', '["allowlist.match"]', i, 'sha256:' || md5(i::text), false
FROM generate_series(1, $1) i`
	// The sealer's one session, opened now and looked up once: the
	// lookup is not the sealer's work.
	if _, err := s.DB().ExecContext(ctx, `SELECT 1`); err != nil {
		b.Fatal(err)
	}
	pids := backendPIDs(b, s, app)
	var pg, self time.Duration
	sealed := 0
	tick := time.NewTicker(auditchain.Every)
	defer tick.Stop()
	for b.Loop() {
		b.StopTimer()
		<-tick.C
		if _, err := seeder.DB().ExecContext(ctx, seed, sealRoundRows); err != nil {
			b.Fatal(err)
		}
		pg0, self0 := pidsCPU(b, pids), processCPU(b)
		b.StartTimer()
		n, err := s.SealAudit(ctx)
		if err != nil || n != sealRoundRows {
			b.Fatalf("round sealed %d rows, %v; want %d", n, err, sealRoundRows)
		}
		b.StopTimer()
		self += processCPU(b) - self0
		pg += pidsCPU(b, pids) - pg0
		sealed += n
		b.StartTimer()
	}
	b.ReportMetric(float64(pg.Microseconds())/float64(sealed), "pg-cpu-us/row")
	b.ReportMetric(float64(self.Microseconds())/float64(sealed), "cpu-us/row")
}

// openNamed opens a store on a schema of its own whose connections (at
// most conns, kept open) carry an application_name of their own, which
// it returns with the schema's URL (without the name).
func openNamed(b *testing.B, conns int) (s *postgres.Store, app, dsn string) {
	app = "mcpgate-sealcost-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	_, dsn = pgtest.NewWithURL(b)
	u, err := url.Parse(dsn)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	s, err = postgres.Open(context.Background(), u.String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	s.DB().SetMaxOpenConns(conns)
	s.DB().SetMaxIdleConns(conns)
	return s, app, dsn
}

// processCPU is this process's CPU time (user and system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backendCPU is the CPU time (user+system) of the PostgreSQL backends
// whose application_name is app, read from /proc (PostgreSQL runs on this
// machine in the tests).
func backendCPU(b *testing.B, s *postgres.Store, app string) time.Duration {
	b.Helper()
	return pidsCPU(b, backendPIDs(b, s, app))
}

// backendPIDs are the process ids of the PostgreSQL backends whose
// application_name is app.
func backendPIDs(b *testing.B, s *postgres.Store, app string) []int {
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
	return pids
}

// pidsCPU is the CPU time (user+system) of processes pids, from /proc.
func pidsCPU(b *testing.B, pids []int) time.Duration {
	b.Helper()
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
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}
