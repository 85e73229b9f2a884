package ratelimit_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/postgres"
	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
)

// replicaPool is a gateway replica's PostgreSQL pool size (gateway/postgres).
const replicaPool = 20

// loadShape is how the benchmark's callers map onto buckets.
type loadShape struct {
	name string
	tier gateway.Tier
	tool string
	// shared: every caller uses one workspace and one profile, so that an
	// ops call's workspace/day and profile/hour counters are hot rows that
	// every reservation locks in turn (the worst case). Otherwise each
	// caller has its own workspace, profile and task.
	shared bool
}

var shapes = []loadShape{
	{"read", gateway.TierRead, "projects.list", false},    // one per-task bucket
	{"ops", gateway.TierOps, opsTool, false},              // three buckets, no shared row
	{"ops-one-workspace", gateway.TierOps, opsTool, true}, // three buckets, two hot rows
}

// subject is caller c's call in shape sh.
func (sh loadShape) subject(c int) ratelimit.Subject {
	ws, profile := fmt.Sprintf("ws-%d", c), fmt.Sprintf("profile-%d", c)
	if sh.shared {
		ws, profile = workspace, "operator"
	}
	return ratelimit.Subject{WorkspaceID: ws, TaskID: fmt.Sprintf("task-%d", c), ProfileID: profile, Tool: sh.tool, Tier: sh.tier}
}

// reserveOnce is what the request path adds per allowed call: the plan of
// its slots and one Reserve (audit row plus the call's counters in one
// transaction).
func reserveOnce(s *postgres.Store, l *ratelimit.Rules, sub ratelimit.Subject) error {
	plan, err := l.Plan(sub, time.Now())
	if err != nil {
		return err
	}
	ev := &gateway.AuditEvent{WorkspaceID: sub.WorkspaceID, TaskID: sub.TaskID, ProfileID: sub.ProfileID,
		Tool: sub.Tool, Tier: sub.Tier, Status: gateway.AuditAllowed, ArgumentsHash: "sha256:x", ReasonCodes: []string{"allowlist.match"}}
	res, err := s.Reserve(context.Background(), gateway.Reservation{Event: ev, Slots: plan.Counters()})
	if err != nil {
		return err
	}
	return plan.Refusal(res)
}

// benchStore is a migrated store with a replica's pool and no caps in the way.
func benchStore(tb testing.TB) (*postgres.Store, *ratelimit.Rules) {
	s := pgtest.New(tb)
	s.DB().SetMaxOpenConns(replicaPool)
	s.DB().SetMaxIdleConns(replicaPool)
	rules := ratelimit.NewRules(unlimited())
	return s, &rules
}

// BenchmarkReservation is the closed-loop benchmark: 1, 16 and 64 callers
// each reserve as fast as they can through one replica's pool of 20
// connections. Besides ns/op it reports calls/s and the p50 and p99
// latency of one reservation. With n callers always busy, the mean latency
// is n divided by the throughput (Little's law), so at 64 callers latency
// mostly measures the queue for the pool; TestReservationLoad measures
// latency at a fixed offered load instead. Run both with
// `make bench-ratelimit`.
func BenchmarkReservation(b *testing.B) {
	for _, sh := range shapes {
		for _, callers := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/callers=%d", sh.name, callers), func(b *testing.B) {
				s, l := benchStore(b)
				warmUp(b, s, l, sh, callers)
				lat := make([]time.Duration, b.N)
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for c := range callers {
					sub := sh.subject(c)
					wg.Go(func() {
						for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
							t0 := time.Now()
							err := reserveOnce(s, l, sub)
							lat[i] = time.Since(t0)
							if err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
				b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
				b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
			})
		}
	}
}

// EnvLoad turns on TestReservationLoad; its value is the offered load in
// calls per second (e.g. 2000).
const EnvLoad = "MCPGATE_RATELIMIT_LOAD"

// TestReservationLoad is the open-loop benchmark: 64 callers receive calls
// at a fixed rate (MCPGATE_RATELIMIT_LOAD calls/s, for 10 s per shape) and
// it logs the achieved rate and the p50/p99/max latency of a call measured
// from its scheduled start, so a call that waited for a busy caller counts
// its wait (no coordinated omission). Run with `make bench-ratelimit`.
func TestReservationLoad(t *testing.T) {
	rate, _ := strconv.Atoi(os.Getenv(EnvLoad))
	if rate <= 0 {
		t.Skip("set " + EnvLoad + "=2000 (calls/s) to run the open-loop load test; `make bench-ratelimit` does")
	}
	const callers, duration = 64, 10 * time.Second
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			s, l := benchStore(t)
			warmUp(t, s, l, sh, callers)
			run := openLoop(t, rate, duration, callers, func(c int) error { return reserveOnce(s, l, sh.subject(c)) })
			t.Logf("%-20s offered %d calls/s, %s", sh.name, rate, run)
		})
	}
}

// loadRun is the outcome of one open-loop run: every call's latency from
// its scheduled start, sorted, and the time the run took.
type loadRun struct {
	lat     []time.Duration
	elapsed time.Duration
	callers int
}

// String reports the achieved rate and p50/p99/max.
func (r loadRun) String() string {
	return fmt.Sprintf("achieved %6.0f calls/s over %d calls, %d callers: p50 %.2f ms, p99 %.2f ms, max %.1f ms",
		float64(len(r.lat))/r.elapsed.Seconds(), len(r.lat), r.callers,
		ms(r.lat[len(r.lat)/2]), ms(r.lat[len(r.lat)*99/100]), ms(r.lat[len(r.lat)-1]))
}

// openLoop offers rate calls/s for duration to callers goroutines; caller
// c makes a call with call(c). A call's latency counts from its scheduled
// start, so a call that waited for a busy caller counts its wait (no
// coordinated omission). A failed call fails t.
func openLoop(t *testing.T, rate int, duration time.Duration, callers int, call func(c int) error) loadRun {
	t.Helper()
	total := int(duration.Seconds()) * rate
	jobs := make(chan time.Time, total)
	lat := make([]time.Duration, 0, total)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for due := range jobs {
				if d := time.Until(due); d > 0 {
					time.Sleep(d)
				}
				err := call(c)
				took := time.Since(due)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				lat = append(lat, took)
				mu.Unlock()
			}
		})
	}
	start := time.Now().Add(50 * time.Millisecond)
	interval := time.Second / time.Duration(rate)
	for i := range total {
		jobs <- start.Add(time.Duration(i) * interval)
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(lat)
	return loadRun{lat: lat, elapsed: elapsed, callers: callers}
}

// warmUp makes every caller reserve a few times before the measurement, so
// that the pool's connections are open and each has prepared the
// statements and compiled mcpgate_reserve_counts: a replica that has been
// serving for a while is in that state, and the measurement is of that
// steady state. (The first calls of a new replica pay about 100 ms once.)
func warmUp(tb testing.TB, s *postgres.Store, l *ratelimit.Rules, sh loadShape, callers int) {
	var wg sync.WaitGroup
	for c := range callers {
		sub := sh.subject(c)
		wg.Go(func() {
			for range 5 {
				if err := reserveOnce(s, l, sub); err != nil {
					tb.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// unlimited lifts every cap out of the benchmark's way.
func unlimited() ratelimit.Limits {
	const n = 1 << 30
	return ratelimit.Limits{ToolPerTask: n, OpsPerTask: n, ScaffoldPerTask: n, DeployPerTask: n,
		WorkspaceOpsDaily: n, WorkspaceDeployDaily: n, WorkspaceProposalDaily: n, WorkspaceTaskSpawnDaily: n,
		ProfileOpsHourly: n, ProfileDeployHourly: n, ProfileProposalHourly: n, ProfileTaskSpawnHourly: n}
}
