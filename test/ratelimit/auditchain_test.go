package ratelimit_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
	"github.com/mcpgate/mcpgate/gateway/server"
	"github.com/mcpgate/mcpgate/test/testbin"
)

// Issue 26, point 4: three `mcpgate serve` replicas on one PostgreSQL
// schema under load, and the one seen holding the sealing lease (the one
// running a sealing round) SIGKILLed mid-load. The other two take the
// lease over: every row finished before or after the kill is sealed, the
// seqs run 1 to the head without a gap, and `mcpgate audit verify` exits
// 0. The only rows left unsealed are open ones (calls the dead replica
// never finished); a replica seals them as they are once they are open
// longer than the sealer's bound (an hour; here the test's own sealer
// with a bound of a nanosecond stands for it), and the chain still
// verifies, gap-free, with every row of audit_events in it.
// replicas is how many gateway processes TestAuditChainSurvivesAKilledReplica runs.
const replicas = 3

func TestAuditChainSurvivesAKilledReplica(t *testing.T) {
	dbURL := pgtest.SchemaURL(t)
	env := baseEnv(dbURL, "")
	env["AGENT_MCP_TOOL_RATE_LIMIT"] = "1000000000"
	const tasksPer = 4
	procs := make([]*process, replicas)
	for i := range procs {
		env["MCPGATE_DATABASE_URL"] = withAppName(t, dbURL, replicaName(i))
		procs[i] = startProcess(t, env)
	}
	tasks := make([]string, tasksPer)
	for i := range tasks {
		tasks[i] = fmt.Sprintf("chain-%d", i)
	}
	seed(t, procs[0].url, tasks...)
	clients := sessions(t, procs, tasks)
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	// Load: every session calls in a loop until stopped; a call that
	// fails on a replica still alive fails the test.
	ctx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	var victim atomic.Int64
	victim.Store(-1)
	var answered [replicas]atomic.Int64
	var wg sync.WaitGroup
	for i := range procs {
		for _, c := range clients[i] {
			wg.Go(func() {
				for ctx.Err() == nil {
					r, err := c.callTool(ctx, readTool, map[string]any{})
					switch {
					case ctx.Err() != nil || victim.Load() == int64(i):
						return
					case err != nil || r.err != nil || r.refusal != nil:
						t.Errorf("replica %d: %s: %v %+v %+v", i, readTool, err, r.err, r.refusal)
						return
					}
					answered[i].Add(1)
				}
			})
		}
	}

	time.Sleep(1500 * time.Millisecond)
	v, seen := leaseHolder(t, db, 5*time.Second)
	victim.Store(int64(v))
	_ = procs[v].cmd.Process.Kill()
	<-procs[v].done
	headAtKill := chainHead(t, db)
	t.Logf("SIGKILLed replica %d (seen holding the sealing lease: %v) at chain head %d, after %v calls answered", v, seen, headAtKill, answeredCounts(&answered))
	time.Sleep(1500 * time.Millisecond)
	before := answeredCounts(&answered)
	stopLoad()
	wg.Wait()
	for i := range procs {
		if i != v && before[i] == 0 {
			t.Errorf("replica %d answered no call", i)
		}
	}

	// The survivors seal every finished row, the dead replica's too.
	deadline := time.Now().Add(10 * time.Second)
	for waiting(t, db, false) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d finished rows still unsealed 10 s after the load; the surviving replicas did not take the sealing over", waiting(t, db, false))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if head := chainHead(t, db); head <= headAtKill {
		t.Errorf("chain head %d, %d at the kill: nothing sealed after it", head, headAtKill)
	}
	open := waiting(t, db, true)
	wantVerified(t, dbURL, fmt.Sprintf("; %d rows not sealed yet", open))
	wantGapFree(t, db, open)

	// An hour on (the bound of a row left open), a replica seals the dead
	// replica's open rows as they are.
	s, err := server.OpenStore(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ob, ok := s.(interface{ SetSealOpenAfter(time.Duration) })
	if !ok {
		t.Fatalf("%T has no SetSealOpenAfter", s)
	}
	ob.SetSealOpenAfter(time.Nanosecond)
	for range 2 { // the first round sees the open rows, the second seals them
		if _, err := s.SealAudit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	wantVerified(t, dbURL, "; 0 rows not sealed yet")
	wantGapFree(t, db, 0)
	t.Logf("%d open rows of the dead replica sealed as they were", open)
}

// replicaName is replica i's PostgreSQL application_name.
func replicaName(i int) string { return fmt.Sprintf("audit-replica-%d-%d", os.Getpid(), i) }

// withAppName is dbURL with application_name=name.
func withAppName(t *testing.T, dbURL, name string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// leaseHolder polls PostgreSQL's advisory locks for a replica (by its
// application_name) holding the sealing lease, for up to wait; it
// returns that replica, or replica 0 and false when none was seen (a
// round holds the lease a few milliseconds).
func leaseHolder(t *testing.T, db *sql.DB, wait time.Duration) (int, bool) {
	t.Helper()
	prefix := strings.TrimSuffix(replicaName(0), "0")
	end := time.Now().Add(wait)
	for time.Now().Before(end) {
		var name string
		err := db.QueryRow(`SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND a.application_name LIKE $1 LIMIT 1`, prefix+"%").Scan(&name)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			t.Fatal(err)
		default:
			var i int
			if _, err := fmt.Sscanf(strings.TrimPrefix(name, prefix), "%d", &i); err == nil {
				return i, true
			}
		}
		time.Sleep(time.Millisecond)
	}
	return 0, false
}

// answeredCounts reads the calls each replica answered.
func answeredCounts(a *[replicas]atomic.Int64) [replicas]int64 {
	var out [replicas]int64
	for i := range a {
		out[i] = a[i].Load()
	}
	return out
}

// chainHead is the last sealed seq.
func chainHead(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var seq int64
	if err := db.QueryRow(`SELECT seq FROM audit_chain WHERE id = 1`).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	return seq
}

// waiting counts the rows waiting to be sealed that are open (calls not
// finished) or finished.
func waiting(t *testing.T, db *sql.DB, open bool) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(`SELECT count(*) FROM audit_unsealed u JOIN audit_events e ON e.id = u.id WHERE e.open = $1`, open).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// wantVerified runs `mcpgate audit verify` on dbURL and fails t unless it
// exits 0 with a summary that contains want.
func wantVerified(t *testing.T, dbURL, want string) {
	t.Helper()
	cmd := exec.Command(testbin.Mcpgate(t), "audit", "verify")
	cmd.Env = append(os.Environ(), "MCPGATE_DATABASE_URL="+dbURL)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "audit chain verified: ") || !strings.Contains(string(out), want) {
		t.Fatalf("mcpgate audit verify: %v\n%s\nwant exit 0 and %q", err, out, want)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}

// wantGapFree fails t unless the sealed seqs run from 1 to the chain head
// without a gap and every audit row is sealed but unsealed (open) ones.
func wantGapFree(t *testing.T, db *sql.DB, unsealed int64) {
	t.Helper()
	var n, lo, hi, rows int64
	if err := db.QueryRow(`SELECT count(*), coalesce(min(seq), 0), coalesce(max(seq), 0), (SELECT count(*) FROM audit_events) FROM audit_seals`).Scan(&n, &lo, &hi, &rows); err != nil {
		t.Fatal(err)
	}
	if n == 0 || lo != 1 || hi != n || hi != chainHead(t, db) || rows != n+unsealed {
		t.Fatalf("sealed seqs: %d rows, seq %d to %d, chain head %d; audit_events %d rows, %d waiting open; want seq 1 to the head without a gap and every other row sealed",
			n, lo, hi, chainHead(t, db), rows, unsealed)
	}
}
