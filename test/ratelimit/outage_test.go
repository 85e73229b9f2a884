package ratelimit_test

import (
	"context"
	"net/http"
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
	px := pgtest.NewProxy(t, u.Host)
	u.Host = px.Addr()
	q := u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	outage(t, u.String(), px.Cut)
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
	if r := call(); r.refusal == nil || r.refusal.Bucket != "task.ops" {
		t.Fatalf("11th dispatched call: %s %+v, want the per-task refusal", r.result, r.err)
	}
}

// Issue 8, point 4: PostgreSQL stops answering but keeps its connections
// open (the proxy accepts and holds every byte). Calls are refused with
// -32603 within the 5 s store deadline instead of hanging, /readyz says
// not ready within its 2 s, and a call whose client gave up during the
// stall (its deadline passed, or it was cancelled) is not dispatched when
// the database answers again.
func TestDatabaseStalled(t *testing.T) {
	px, dbURL := pgtest.ProxyURL(t, pgtest.SchemaURL(t))
	up := startUpstream(t)
	base, _ := inProcess(t, baseEnv(dbURL, up.url()))
	seed(t, base, "task-0")
	c := connect(t, base, agentToken(t, "u1", "task-0", "operator"))
	call := func(timeout time.Duration) (reply, time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		r, err := c.callTool(ctx, opsTool, opsArgs)
		return r, time.Since(start), err
	}
	if r, _, err := call(20 * time.Second); err != nil || r.err != nil {
		t.Fatalf("before the stall: %v %+v", err, r.err)
	}

	px.Stall(true)
	for i := range 2 {
		r, took, err := call(30 * time.Second)
		if err != nil {
			t.Fatalf("call %d during the stall: transport error after %v: %v", i, took, err)
		}
		if r.err == nil || r.err.Code != -32603 || r.err.Data.Class != "Internal" {
			t.Fatalf("call %d during the stall: %+v, result %s; want -32603 class Internal", i, r.err, r.result)
		}
		if took > 6*time.Second {
			t.Errorf("call %d during the stall was refused after %v (%s); want within the 5 s store deadline", i, took, r.err.Message)
		}
	}
	start := time.Now()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusServiceUnavailable || took > 3*time.Second {
		t.Errorf("/readyz during the stall: HTTP %d after %v; want 503 within 3 s", resp.StatusCode, took)
	}
	// A client that gives up after 1 s while the store does not answer:
	// the call ends at its store deadline and is never dispatched.
	if r, took, err := call(time.Second); err == nil {
		t.Errorf("a call with a 1 s client timeout answered after %v during the stall: %+v", took, r.err)
	}
	time.Sleep(5 * time.Second)
	// A client that cancels its call (notifications/cancelled, MCP's way
	// to give up: a disconnect is not a cancellation) while the store does
	// not answer, and the store answers right after: the call is not
	// dispatched.
	id := c.ids.Load() + 1
	abandoned := make(chan error, 1)
	go func() { _, _, err := call(30 * time.Second); abandoned <- err }()
	time.Sleep(time.Second)
	if _, err := c.post(context.Background(), "notifications/cancelled", map[string]any{"requestId": id, "reason": "gave up"}, false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	px.Stall(false)
	select {
	case <-abandoned:
	case <-time.After(10 * time.Second):
		t.Error("the cancelled call did not end within 10 s")
	}

	deadline := time.Now().Add(15 * time.Second)
	for {
		r, _, err := call(20 * time.Second)
		if err == nil && r.err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still refused 15 s after the database answered again: %v %+v", err, r.err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // room for a late dispatch of the abandoned call
	if n := up.calls.Load(); n != 2 {
		t.Errorf("upstream saw %d calls, want 2 (before and after the stall): a refused or abandoned call was dispatched", n)
	}
}
