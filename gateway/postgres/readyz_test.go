package postgres_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
)

// TestReadyzFreshConnectionAfterRestart: after PostgreSQL ended every
// connection of an idle pool (a restart; here pg_terminate_backend on
// each), the next probe is ready: it does not take one dead pooled
// connection per probe (an idle replica stayed 503 for 18 probes).
func TestReadyzFreshConnectionAfterRestart(t *testing.T) {
	s := pgtest.New(t)
	const conns = 6
	s.DB().SetMaxOpenConns(conns)
	s.DB().SetMaxIdleConns(conns)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Open conns connections at once, and note their backends.
	pids := make([]int64, conns)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if err := s.DB().QueryRowContext(ctx, "SELECT pg_backend_pid() FROM pg_sleep(0.2)").Scan(&pids[i]); err != nil {
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if st := s.DB().Stats(); st.Idle != conns {
		t.Fatalf("%d idle connections, want %d", st.Idle, conns)
	}
	admin, err := sql.Open("postgres", pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid", pq.Array(pids)); err != nil {
		t.Fatal(err)
	}
	// Wait until the backends are gone.
	for {
		var n int
		if err := admin.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1::int[])", pq.Array(pids)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("the first probe after the restart: %v; want ready (a fresh connection)", err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("the second probe: %v", err)
	}
}
