package ratelimit_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// scenario is one bucket of 10 that 200 concurrent calls race for.
type scenario struct {
	note   string
	env    map[string]string // limit overrides
	tasks  int               // calls are spread round-robin over this many tasks
	msg    string            // the refusal every losing call must get
	bucket string
}

var scenarios = []scenario{
	{note: "per-task ops bucket (default 10)", tasks: 1,
		msg: "Rate limit exceeded for tool 'schedule.pause'", bucket: "task.ops"},
	{note: "workspace/day ops bucket of 10 over 20 tasks (refunds)", tasks: 20,
		env: map[string]string{"AGENT_MCP_WORKSPACE_OPS_DAILY_LIMIT": "10"},
		msg: "Workspace daily limit reached for this MCP tool tier (10/10)", bucket: "workspace_day.ops"},
}

// Issue 3, point 5: two gateway processes on one PostgreSQL (and one
// process on the embedded store), 200 concurrent calls against a bucket of
// 10: exactly 10 dispatched, 190 refused with the seed message, 200 audit
// rows; after a restart of every process the counts are unchanged and the
// next call is still refused.
func TestConcurrentCallsAcrossProcesses(t *testing.T) {
	for _, st := range []struct {
		store     string
		processes int
	}{{"postgres", 2}, {"sqlite", 1}} {
		for _, sc := range scenarios {
			t.Run(fmt.Sprintf("%s/%d processes/%s", st.store, st.processes, sc.note), func(t *testing.T) {
				runScenario(t, storeURLs()[st.store](t), st.processes, sc)
			})
		}
	}
}

func runScenario(t *testing.T, dbURL string, n int, sc scenario) {
	up := startUpstream(t)
	env := baseEnv(dbURL, up.url())
	for k, v := range sc.env {
		env[k] = v
	}
	tasks := make([]string, sc.tasks)
	for i := range tasks {
		tasks[i] = fmt.Sprintf("task-%d", i)
	}
	procs := startAll(t, env, n)
	seed(t, procs[0].url, tasks...)
	clients := sessions(t, procs, tasks)

	var mu sync.Mutex
	outcomes := map[string]int{}
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			c := clients[i%n][i%len(tasks)]
			r, err := c.callTool(context.Background(), opsTool, opsArgs)
			mu.Lock()
			defer mu.Unlock()
			outcomes[classify(r, err, sc)]++
		})
	}
	wg.Wait()
	if outcomes["dispatched"] != 10 || outcomes["refused"] != 190 || up.calls.Load() != 10 {
		t.Fatalf("outcomes %v, upstream saw %d calls; want exactly 10 dispatched and 190 refused", outcomes, up.calls.Load())
	}
	want := map[string]int{"total": 200, "allowed": 10, "rate_limited": 190}
	wantAudit(t, procs[0].url, want)
	if sc.tasks > 1 {
		wantTaskSlots(t, dbURL, tasks, 10) // the 190 refused calls' per-task slots were refunded
	}

	// Restart every process: the counters are in the database.
	for _, p := range procs {
		p.stop(t)
	}
	procs = startAll(t, env, n)
	wantAudit(t, procs[0].url, want)
	c := connect(t, procs[n-1].url, agentToken(t, "u1", tasks[0], "operator"))
	r, err := c.callTool(context.Background(), opsTool, opsArgs)
	if got := classify(r, err, sc); got != "refused" {
		t.Fatalf("the 11th call after the restart: %s (%+v, %v), want refused", got, r.err, err)
	}
	if up.calls.Load() != 10 {
		t.Errorf("upstream saw %d calls after the restart, want still 10", up.calls.Load())
	}
	want["total"], want["rate_limited"] = 201, 191
	wantAudit(t, procs[0].url, want)
}

// startAll starts n gateway processes on env, one after the other (each
// migrates the shared schema at start).
func startAll(t *testing.T, env map[string]string, n int) []*process {
	t.Helper()
	procs := make([]*process, n)
	for i := range procs {
		procs[i] = startProcess(t, env)
	}
	return procs
}

// sessions opens one MCP session per process and task.
func sessions(t *testing.T, procs []*process, tasks []string) [][]*client {
	t.Helper()
	out := make([][]*client, len(procs))
	for i, p := range procs {
		for _, task := range tasks {
			out[i] = append(out[i], connect(t, p.url, agentToken(t, "u1", task, "operator")))
		}
	}
	return out
}

// classify names a tools/call outcome: "dispatched" (a result that is not
// an error), "refused" (exactly the rate-limit refusal of sc: a tool
// execution error with the seed message as its text, class Forbidden,
// status 403, sc's bucket) or a description of anything else.
func classify(r reply, err error, sc scenario) string {
	switch {
	case err != nil:
		return "transport error: " + err.Error()
	case r.err != nil:
		return fmt.Sprintf("JSON-RPC error %d %q %+v", r.err.Code, r.err.Message, r.err.Data)
	case r.refusal != nil && r.refusal.Text == sc.msg && r.refusal.Class == "Forbidden" &&
		r.refusal.Status == 403 && r.refusal.Bucket == sc.bucket:
		return "refused"
	case r.refusal != nil:
		return fmt.Sprintf("other refusal %+v", *r.refusal)
	case strings.Contains(string(r.result), `"isError":true`):
		return "tool error: " + string(r.result)
	}
	return "dispatched"
}

// wantAudit fails t unless ws-rl's audit rows count as want (by status, and
// "total").
func wantAudit(t *testing.T, base string, want map[string]int) {
	t.Helper()
	got := auditCounts(t, base, "")
	for k, n := range want {
		if got[k] != n {
			t.Errorf("audit rows: %v, want %v", got, want)
			return
		}
	}
}

// wantTaskSlots reads the per-task ops counters straight from the store
// and fails t unless they add up to want.
func wantTaskSlots(t *testing.T, dbURL string, tasks []string, want int64) {
	t.Helper()
	s, err := server.OpenStore(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rules := ratelimit.NewRules(ratelimit.DefaultLimits())
	var sum int64
	for _, task := range tasks {
		plan, err := rules.Plan(ratelimit.Subject{WorkspaceID: workspace, TaskID: task, ProfileID: "operator",
			Tool: opsTool, Tier: gateway.TierOps}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		us, err := ratelimit.ReadUsage(context.Background(), s, plan)
		if err != nil {
			t.Fatal(err)
		}
		sum += us[0].Used
	}
	if sum != want {
		t.Errorf("per-task ops slots add up to %d, want %d", sum, want)
	}
}

// The embedded store's one process must also hold its counters when the
// process is stopped hard (no graceful shutdown).
func TestCountersSurviveKill(t *testing.T) {
	up := startUpstream(t)
	env := baseEnv(storeURLs()["sqlite"](t), up.url())
	p := startProcess(t, env)
	seed(t, p.url, "task-0")
	c := connect(t, p.url, agentToken(t, "u1", "task-0", "operator"))
	for range 10 {
		if r, err := c.callTool(context.Background(), opsTool, opsArgs); err != nil || r.err != nil {
			t.Fatalf("call: %v %+v", err, r.err)
		}
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("killed process did not exit")
	}
	p = startProcess(t, env)
	c = connect(t, p.url, agentToken(t, "u1", "task-0", "operator"))
	r, err := c.callTool(context.Background(), opsTool, opsArgs)
	if got := classify(r, err, scenarios[0]); got != "refused" {
		t.Fatalf("11th call after kill -9: %s", got)
	}
}
