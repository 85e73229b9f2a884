package ratelimit_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
)

// EnvEndToEndLoad turns on TestEndToEndLoad; its value is the offered load
// in calls per second (e.g. 1000).
const EnvEndToEndLoad = "MCPGATE_E2E_LOAD"

// readTool is a read-tier tool of the demo backend.
const readTool = "projects.list"

// TestEndToEndLoad is the load generator for the whole request path: a
// real `mcpgate serve` process on PostgreSQL with the demo backend, 64 MCP
// sessions (one per task, each over HTTP with its own JWT) sending
// projects.list — a read call: authentication, LoadCaller, the policy
// decision, the per-task rate-limit slot and the audit row in one
// reservation, dispatch and FinishAudit — open loop at MCPGATE_E2E_LOAD
// calls/s for 10 s. (An ops call would meet its per-task cap of 10, which
// docs/requirements.md#rate-limits gives no variable to lift.) It logs the achieved rate and
// p50/p99/max from each call's scheduled start, and the p99 of the
// gateway's own latency (audit_events.latency_us: receipt to reply, without
// HTTP and the client). The generator, the gateway and PostgreSQL share
// this machine's cores. Run with `make bench-e2e`.
func TestEndToEndLoad(t *testing.T) {
	rate, _ := strconv.Atoi(os.Getenv(EnvEndToEndLoad))
	if rate <= 0 {
		t.Skip("set " + EnvEndToEndLoad + "=1000 (calls/s) to run the end-to-end load test; `make bench-e2e` does")
	}
	const callers, duration = 64, 10 * time.Second
	dbURL := pgtest.SchemaURL(t)
	env := baseEnv(dbURL, "")
	env["AGENT_MCP_TOOL_RATE_LIMIT"] = "1000000000"
	gw := startProcess(t, env)
	clients := loadSessions(t, gw.url, callers)

	measured := time.Now()
	run := openLoop(t, rate, duration, callers, func(c int) error {
		r, err := clients[c].callTool(context.Background(), readTool, map[string]any{})
		switch {
		case err != nil:
		case r.err != nil:
			err = fmt.Errorf("%s: JSON-RPC %d %s", readTool, r.err.Code, r.err.Message)
		case r.refusal != nil:
			err = fmt.Errorf("%s: refused: %s", readTool, r.refusal.Text)
		}
		return err
	})
	t.Logf("end to end, read call: offered %d calls/s, %s; inside the gateway p99 %.2f ms", rate, run, gatewayP99(t, dbURL, measured))
}

// loadSessions opens n sessions, one per running task, and warms them all
// at once, so that the HTTP client keeps one connection per session and
// the gateway's pool, prepared statements and decision cache are ready:
// the measurement is of a gateway that has been serving them a while.
func loadSessions(t *testing.T, base string, n int) []*client {
	t.Helper()
	tasks := make([]string, n)
	for i := range tasks {
		tasks[i] = fmt.Sprintf("load-%d", i)
	}
	seed(t, base, tasks...)
	clients := make([]*client, n)
	for i, task := range tasks {
		clients[i] = connect(t, base, agentToken(t, "u1", task, "operator"))
	}
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			for range 5 {
				if r, err := c.callTool(context.Background(), readTool, map[string]any{}); err != nil || r.err != nil || r.refusal != nil {
					t.Errorf("warm-up call: %v %+v %+v", err, r.err, r.refusal)
					return
				}
			}
		})
	}
	wg.Wait()
	return clients
}

// gatewayP99 is the p99 of the gateway's own latency of the calls audited
// since from, in milliseconds.
func gatewayP99(t *testing.T, dbURL string, from time.Time) float64 {
	t.Helper()
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var p99 float64
	const q = `SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY latency_us) FROM audit_events WHERE time >= $1`
	if err := db.QueryRow(q, from.UTC()).Scan(&p99); err != nil {
		t.Fatal(err)
	}
	return p99 / 1000
}
