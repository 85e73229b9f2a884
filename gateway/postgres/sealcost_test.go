package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

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
			app := "mcpgate-sealcost-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			_, dsn := pgtest.NewWithURL(b)
			u, err := url.Parse(dsn)
			if err != nil {
				b.Fatal(err)
			}
			q := u.Query()
			q.Set("application_name", app)
			u.RawQuery = q.Encode()
			s, err := postgres.Open(context.Background(), u.String())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			s.DB().SetMaxOpenConns(conns)
			s.DB().SetMaxIdleConns(conns)
			apps[s] = app
			return s
		},
		CPU: func(b *testing.B, s storetest.Store) time.Duration {
			return backendCPU(b, s.(*postgres.Store), apps[s])
		},
		Metric: "pg-cpu-us/op",
	})
}

// backendCPU is the CPU time (user+system) of the PostgreSQL backends
// whose application_name is app, read from /proc (PostgreSQL runs on this
// machine in the tests).
func backendCPU(b *testing.B, s *postgres.Store, app string) time.Duration {
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
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}
