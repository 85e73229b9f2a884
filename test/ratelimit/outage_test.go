package ratelimit_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
)

// Issue 3, point 6: PostgreSQL goes away mid-run. The gateway reaches it
// through a TCP proxy that the test cuts (closing every connection and
// refusing new ones) and restores; the shared PostgreSQL server keeps
// running for everybody else. TestPostgresStopped does the same with a
// real server stop.
func TestDatabaseOutage(t *testing.T) {
	u, err := url.Parse(pgtest.SchemaURL(t))
	if err != nil {
		t.Fatal(err)
	}
	px := startProxy(t, u.Host)
	u.Host = px.addr()
	q := u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	outage(t, u.String(), px.setCut)
}

// TestPostgresStopped is issue 3, point 6 to the letter: a PostgreSQL
// server of the test's own (initdb in a temporary directory) is stopped
// mid-run with pg_ctl and started again.
func TestPostgresStopped(t *testing.T) {
	pg := startCluster(t)
	outage(t, pg.url(), func(down bool) {
		if down {
			pg.stop(t)
		} else {
			pg.start(t)
		}
	})
}

// outage runs one gateway on dbURL and takes its database away with
// down(true) and back with down(false). While it is away every call is
// refused with -32603 and nothing is dispatched; once it is back, calls
// succeed again without a restart of the gateway, and the counters are
// intact.
func outage(t *testing.T, dbURL string, down func(bool)) {
	up := startUpstream(t)
	base, _ := inProcess(t, baseEnv(dbURL, up.url()))
	seed(t, base, "task-0")
	c := connect(t, base, agentToken(t, "u1", "task-0", "operator"))
	call := func() reply {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		start := time.Now()
		r, err := c.callTool(ctx, opsTool, opsArgs)
		if err != nil {
			t.Fatalf("transport error after %v: %v", time.Since(start), err)
		}
		return r
	}
	if r := call(); r.err != nil {
		t.Fatalf("before the outage: %+v", r.err)
	}

	down(true)
	for i := range 5 {
		start := time.Now()
		r := call()
		if r.err == nil || r.err.Code != -32603 || r.err.Data.Class != "Internal" {
			t.Fatalf("call %d during the outage: %+v, result %s; want -32603 class Internal", i, r.err, r.result)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("call %d took %v to be refused", i, d)
		}
	}
	if n := up.calls.Load(); n != 1 {
		t.Fatalf("upstream saw %d calls, want 1: a call was dispatched while the store was down", n)
	}

	down(false)
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := call()
		if r.err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still refused 15 s after the database came back: %+v", r.err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := up.calls.Load(); n != 2 {
		t.Errorf("upstream saw %d calls after recovery, want 2", n)
	}
	// The counters are intact: 2 ops slots used of task-0's 10.
	for range 8 {
		if r := call(); r.err != nil {
			t.Fatalf("after recovery: %+v", r.err)
		}
	}
	if r := call(); r.err == nil || r.err.Code != -32003 {
		t.Fatalf("11th dispatched call: %+v, want the per-task refusal", r.err)
	}
}
