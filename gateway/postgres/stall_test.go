package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/postgres"
	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
)

// stalledStore is a migrated store that reaches PostgreSQL through a
// proxy the test can stall, with warm connections (so that the stall hits
// open connections, not only new ones).
func stalledStore(t *testing.T) (*postgres.Store, *pgtest.Proxy) {
	t.Helper()
	px, dsn := pgtest.ProxyURL(t, pgtest.SchemaURL(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		px.Stall(false)
		_ = s.Close()
	})
	s.DB().SetMaxOpenConns(4)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// Warm the pool and the prepared statements.
	if err := s.RecordAudit(ctx, &gateway.AuditEvent{WorkspaceID: "ws", Tool: "t", Status: "allowed"}); err != nil {
		t.Fatal(err)
	}
	return s, px
}

// within runs op and fails t unless it returns within limit; it returns
// op's error and how long it took.
func within(t *testing.T, name string, limit time.Duration, op func() error) (error, time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- op() }()
	select {
	case err := <-done:
		return err, time.Since(start)
	case <-time.After(limit):
		t.Errorf("%s: still waiting for a stalled PostgreSQL after %v", name, limit)
		return nil, limit
	}
}

// Issue 8, point 4: PostgreSQL keeps the connection open and sends nothing.
// Every store operation returns at its context's deadline or cancellation
// (lib/pq's own CancelRequest goes to the same stalled server and would
// not end it), Ping has a short deadline of its own, and the store serves
// again once the server answers.
func TestStalledDatabaseOperationsReturnAtTheirDeadline(t *testing.T) {
	s, px := stalledStore(t)
	px.Stall(true)

	deadlineCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 500*time.Millisecond)
	}
	ops := []struct {
		name string
		op   func(ctx context.Context) error
	}{
		{"RecordAudit", func(ctx context.Context) error {
			return s.RecordAudit(ctx, &gateway.AuditEvent{WorkspaceID: "ws", Tool: "t", Status: "allowed"})
		}},
		{"LoadCaller", func(ctx context.Context) error {
			_, err := s.LoadCaller(ctx, &gateway.Principal{WorkspaceID: "ws"})
			return err
		}},
		{"Reserve", func(ctx context.Context) error {
			_, err := s.Reserve(ctx, gateway.Reservation{Event: &gateway.AuditEvent{WorkspaceID: "ws", Tool: "t", Status: "allowed"},
				Slots: []gateway.Slot{{Key: "k", Window: time.Unix(0, 0), Limit: 1}}})
			return err
		}},
	}
	for _, o := range ops {
		t.Run(o.name+"/deadline", func(t *testing.T) {
			ctx, cancel := deadlineCtx()
			defer cancel()
			err, took := within(t, o.name, 3*time.Second, func() error { return o.op(ctx) })
			if err == nil || took > 1500*time.Millisecond {
				t.Errorf("%s on a stalled database: err %v after %v; want an error at the 500 ms deadline", o.name, err, took)
			}
			if code := gateway.ErrorCodeOf(err); err != nil && code != gateway.EUnavailable {
				t.Errorf("%s: code %s, want Unavailable: %v", o.name, code, err)
			}
		})
		t.Run(o.name+"/cancelled", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			err, took := within(t, o.name, 3*time.Second, func() error { return o.op(ctx) })
			if err == nil || took > 1500*time.Millisecond {
				t.Errorf("%s on a stalled database, cancelled at 300 ms: err %v after %v; want an error at once", o.name, err, took)
			}
		})
	}
	// The pipeline finishes a row with a deadline (a lone finish runs on
	// the connection itself, not through database/sql's statement).
	t.Run("FinishAudit/deadline", func(t *testing.T) {
		ctx, cancel := deadlineCtx()
		defer cancel()
		err, took := within(t, "FinishAudit", 3*time.Second, func() error {
			return s.FinishAudit(ctx, &gateway.AuditEvent{ID: 1, WorkspaceID: "ws", Tool: "t", Status: "allowed"})
		})
		if gateway.ErrorCodeOf(err) != gateway.EUnavailable || took > 1500*time.Millisecond {
			t.Errorf("FinishAudit on a stalled database: err %v after %v; want Unavailable at the 500 ms deadline", err, took)
		}
	})
	t.Run("Ping", func(t *testing.T) {
		err, took := within(t, "Ping", 5*time.Second, func() error { return s.Ping(context.Background()) })
		if err == nil || took > 3*time.Second {
			t.Errorf("Ping on a stalled database: err %v after %v; want not ready within its 2 s deadline", err, took)
		}
	})

	px.Stall(false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.RecordAudit(ctx, &gateway.AuditEvent{WorkspaceID: "ws", Tool: "t", Status: "allowed"}); err != nil {
		t.Fatalf("after the stall: %v", err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping after the stall: %v", err)
	}
}

// An operation whose context has no deadline still has one: the store's
// OperationTimeout.
func TestStalledDatabaseOperationWithoutDeadline(t *testing.T) {
	px, dsn := pgtest.ProxyURL(t, pgtest.SchemaURL(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := postgres.OpenWith(ctx, dsn, postgres.Options{MaxConns: 2, OperationTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Stall(false); _ = s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	px.Stall(true)
	err, took := within(t, "ListAuditEvents", 5*time.Second, func() error {
		_, err := s.ListAuditEvents(context.Background(), gateway.AuditFilter{})
		return err
	})
	if err == nil || took < 900*time.Millisecond || took > 2500*time.Millisecond {
		t.Errorf("ListAuditEvents without a deadline on a stalled database: err %v after %v; want an error after the 1 s OperationTimeout", err, took)
	}
	// A new connection cannot be opened either: the connect timeout.
	s.DB().SetMaxIdleConns(0) // no idle connection left to reuse
	err, took = within(t, "Ping", 5*time.Second, func() error { return s.Ping(context.Background()) })
	if err == nil || took > 3*time.Second {
		t.Errorf("Ping over a new connection to a stalled database: err %v after %v", err, took)
	}
}

// Issue 8, point 4: with 10 idle connections for 16 busy callers, the
// pool closed every connection above 10 on return and opened a new
// PostgreSQL backend for the next call. The pool keeps what it opened.
func TestPoolKeepsBusyConnections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := postgres.Open(ctx, pgtest.SchemaURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 20 {
				if _, err := s.DB().ExecContext(ctx, "SELECT pg_sleep(0.002)"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	st := s.DB().Stats()
	if st.MaxIdleClosed != 0 {
		t.Errorf("16 busy callers: the pool closed %d connections for want of idle slots (open %d); it should reuse them",
			st.MaxIdleClosed, st.OpenConnections)
	}
	if st.MaxOpenConnections != postgres.DefaultMaxConns {
		t.Errorf("MaxOpenConnections %d, want %d", st.MaxOpenConnections, postgres.DefaultMaxConns)
	}
}
