package storetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ulule/limiter/v3"
	limitertests "github.com/ulule/limiter/v3/drivers/store/tests"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
	"github.com/mcpgate/mcpgate/tools"
)

// RunRateLimits runs the rate-limit part of the suite (seed 001, Rate
// limits; DESIGN.md §6) as parallel subtests of t: ulule/limiter's own
// store conformance test over ratelimit.Store, the counters, the
// reservation transaction, exact limits under concurrency, refunds and
// calendar windows. newStore must return an empty, migrated store of its
// own for each call.
func RunRateLimits(t *testing.T, newStore func(t *testing.T) Store) {
	for _, tc := range rateTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newStore(t))
		})
	}
}

// EnvFullConformance, when set, makes RunRateLimits also run ulule's
// concurrent store test (500 goroutines × 500 Gets).
const EnvFullConformance = "MCPGATE_RATELIMIT_FULL"

// Clock is a settable clock for window tests; safe for concurrent use.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a clock showing t.
func NewClock(t time.Time) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// opsCall is an ops-tier call of task in ws-a with profile p1.
func opsCall(task string) ratelimit.Subject {
	return ratelimit.Subject{WorkspaceID: "ws-a", TaskID: task, ProfileID: "p1", Tool: "schedule.pause", Tier: gateway.TierOps}
}

// reserve runs one reservation as the pipeline does: audit row and slots in
// one transaction.
func reserve(ctx context.Context, s Store, l *ratelimit.Limiter, sub ratelimit.Subject) error {
	ev := &gateway.AuditEvent{WorkspaceID: sub.WorkspaceID, TaskID: sub.TaskID, ProfileID: sub.ProfileID,
		Tool: sub.Tool, Tier: sub.Tier, Status: gateway.AuditAllowed}
	err := s.ReserveAndRecord(ctx, ev, func(ctx context.Context) error { return l.Reserve(ctx, sub) })
	if (err == nil) != (ev.ID != 0) {
		return fmt.Errorf("ReserveAndRecord returned %v with ev.ID %d; want an id exactly when it succeeds", err, ev.ID)
	}
	return err
}

// usage returns the used counts of sub's buckets by bucket name.
func usage(t *testing.T, l *ratelimit.Limiter, sub ratelimit.Subject) map[string]int64 {
	t.Helper()
	us, err := l.Usage(ctx(t), sub)
	must(t, err, "Usage")
	out := map[string]int64{}
	for _, u := range us {
		out[u.Slot.Bucket.Name] = u.Used
	}
	return out
}

// wantUsage fails t unless sub's buckets hold want.
func wantUsage(t *testing.T, l *ratelimit.Limiter, sub ratelimit.Subject, want map[string]int64) {
	t.Helper()
	got := usage(t, l, sub)
	for name, n := range want {
		if got[name] != n {
			t.Errorf("bucket %s of task %s holds %d calls, want %d (all: %v)", name, sub.TaskID, got[name], n, got)
		}
	}
}

// wantRefusal fails t unless err is the ERateLimited error with message msg
// and bucket.
func wantRefusal(t *testing.T, err error, msg, bucket string) {
	t.Helper()
	var ge *gateway.Error
	if !errors.As(err, &ge) || ge.Code != gateway.ERateLimited || ge.Message != msg || ge.Bucket != bucket {
		t.Fatalf("got %#v, want ERateLimited %q in bucket %s", err, msg, bucket)
	}
}

var rateTests = []test{
	{"LimiterStoreConformance", func(t *testing.T, s Store) {
		// A frozen clock keeps the test inside one minute window however
		// slowly it runs; Reset is still within 60 s of the real now.
		limitertests.TestStoreSequentialAccess(t, ratelimit.NewStore(s, "conformance", NewClock(time.Now()).Now))
	}},
	{"LimiterStoreConcurrentConformance", func(t *testing.T, s Store) {
		if os.Getenv(EnvFullConformance) == "" {
			t.Skip("ulule's concurrent test makes 250,000 counter updates (80 s on PostgreSQL); set " +
				EnvFullConformance + "=1 or run `make test-ratelimit-full` (ConcurrentGets below runs always)")
		}
		limitertests.TestStoreConcurrentAccess(t, ratelimit.NewStore(s, "concurrent", nil))
	}},
	{"ConcurrentGets", func(t *testing.T, s Store) {
		// ulule's concurrent test, scaled down, and checking what it does
		// not: that no increment is lost.
		st := ratelimit.NewStore(s, "gets", NewClock(time.Now()).Now)
		rate := limiter.Rate{Limit: 100000, Period: time.Minute}
		lim := limiter.New(st, rate)
		var wg sync.WaitGroup
		for range 40 {
			wg.Go(func() {
				for range 25 {
					if _, err := lim.Get(ctx(t), "foo"); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		lctx, err := lim.Peek(ctx(t), "foo")
		must(t, err, "Peek")
		if used := rate.Limit - lctx.Remaining; used != 1000 {
			t.Errorf("1000 concurrent Gets counted %d", used)
		}
	}},
	{"Counters", testCounters},
	{"ReserveCountsAllOrNothing", testReserveCounts},
	{"ReserveAndRecordCommitsOrRollsBack", testReserveAndRecord},
	{"RefundsAndMessages", testRefunds},
	{"CalendarWindows", testWindows},
	{"SweepEndedTasks", testSweepEndedTasks},
	{"ExactUnderConcurrency", func(t *testing.T, s Store) { ConcurrentReservations(t, []Store{s}) }},
}

func testCounters(t *testing.T, s Store) {
	c := ctx(t)
	hour := time.Date(2025, 3, 4, 5, 0, 0, 0, time.UTC)
	for _, step := range []struct {
		name   string
		window time.Time
		delta  int64
		want   int64
	}{
		{"create", hour, 1, 1},
		{"add", hour, 2, 3},
		{"refund", hour, -1, 2},
		{"next window is separate", hour.Add(time.Hour), 5, 5},
		{"no window", time.Unix(0, 0), 7, 7},
	} {
		n, err := s.AddRateCount(c, "k", step.window, step.window.Add(time.Hour), step.delta)
		must(t, err, step.name)
		if n != step.want {
			t.Errorf("%s: AddRateCount = %d, want %d", step.name, n, step.want)
		}
	}
	_, err := s.AddRateCount(c, "forever", time.Unix(0, 0), time.Time{}, 4)
	must(t, err, "add without expiry")
	for _, tc := range []struct {
		key    string
		window time.Time
		want   int64
	}{{"k", hour, 2}, {"k", hour.Add(time.Hour), 5}, {"k", hour.Add(2 * time.Hour), 0}, {"missing", hour, 0}, {"forever", time.Unix(0, 0), 4}} {
		n, err := s.RateCount(c, tc.key, tc.window)
		must(t, err, "RateCount")
		if n != tc.want {
			t.Errorf("RateCount(%s, %v) = %d, want %d", tc.key, tc.window, n, tc.want)
		}
	}
	deleted, err := s.DeleteExpiredRateCounts(c, hour.Add(time.Hour+time.Minute))
	must(t, err, "DeleteExpiredRateCounts")
	if deleted != 2 { // "k"@hour and "k"@epoch expired; "k"@hour+1 and "forever" stay
		t.Errorf("swept %d counters, want 2", deleted)
	}
	if n, _ := s.RateCount(c, "k", hour.Add(time.Hour)); n != 5 {
		t.Errorf("a window that has not ended was swept (count %d)", n)
	}
	if n, _ := s.RateCount(c, "forever", time.Unix(0, 0)); n != 4 {
		t.Errorf("a counter without expiry was swept (count %d)", n)
	}
	must(t, s.DeleteRateCount(c, "forever", time.Unix(0, 0)), "DeleteRateCount")
	must(t, s.DeleteRateCount(c, "forever", time.Unix(0, 0)), "DeleteRateCount of a missing counter")
	if n, _ := s.RateCount(c, "forever", time.Unix(0, 0)); n != 0 {
		t.Errorf("deleted counter reads %d", n)
	}
}

func testReserveAndRecord(t *testing.T, s Store) {
	c := ctx(t)
	w := time.Unix(0, 0)
	boom := gateway.Errorf(gateway.ERateLimited, "full")
	var ev *gateway.AuditEvent // the current case's row
	for _, tc := range []struct {
		name    string
		reserve func(ctx context.Context) error
		code    gateway.ErrorCode
		rows    int
		count   int64
	}{
		{"commit", func(ctx context.Context) error { _, err := s.AddRateCount(ctx, "r", w, time.Time{}, 1); return err }, "", 1, 1},
		{"error rolls back row and counter", func(ctx context.Context) error {
			if _, err := s.AddRateCount(ctx, "r", w, time.Time{}, 1); err != nil {
				return err
			}
			return boom
		}, gateway.ERateLimited, 1, 1},
		{"reads its own writes", func(ctx context.Context) error {
			if _, err := s.AddRateCount(ctx, "r", w, time.Time{}, 1); err != nil {
				return err
			}
			if n, err := s.RateCount(ctx, "r", w); err != nil || n != 2 {
				return fmt.Errorf("inside the transaction the counter reads %d (%v), want 2", n, err)
			}
			return nil
		}, "", 2, 2},
		{"error after ReserveCounts rolls back its row and counters", func(ctx context.Context) error {
			if _, err := s.ReserveCounts(ctx, []ratelimit.CountRequest{{Key: "r", Window: w, Limit: 100}}); err != nil {
				return err
			}
			return boom
		}, gateway.ERateLimited, 2, 2},
		{"ReserveCounts with its audit row commits both", func(ctx context.Context) error {
			if _, err := s.ReserveCounts(ctx, []ratelimit.CountRequest{{Key: "r", Window: w, Limit: 100}}); err != nil {
				return err
			}
			// The row is written by now (with the slots, or before them),
			// not after the reservation.
			if ev.ID == 0 {
				return fmt.Errorf("after ReserveCounts the audit row has no id yet")
			}
			return nil
		}, "", 3, 3},
		{"plain errors become EInternal", func(context.Context) error { return errors.New("bug") }, gateway.EInternal, 3, 3},
	} {
		ev = &gateway.AuditEvent{WorkspaceID: "ws-a", TaskID: "t1", Tool: "schedule.pause", Status: gateway.AuditAllowed}
		err := s.ReserveAndRecord(c, ev, tc.reserve)
		wantCode(t, err, tc.code, tc.name)
		if (tc.code == "") != (ev.ID != 0) {
			t.Errorf("%s: ev.ID = %d after error %v", tc.name, ev.ID, err)
		}
		list, lerr := s.ListAuditEvents(c, gateway.AuditFilter{WorkspaceID: "ws-a"})
		must(t, lerr, "list")
		if n, _ := s.RateCount(c, "r", w); len(list) != tc.rows || n != tc.count {
			t.Errorf("%s: %d audit rows and count %d, want %d and %d", tc.name, len(list), n, tc.rows, tc.count)
		}
	}
}

// testReserveCounts checks Counters.ReserveCounts on its own (outside a
// reservation): in order, all or nothing, and the counts it reports.
func testReserveCounts(t *testing.T, s Store) {
	c := ctx(t)
	w := time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC)
	reqs := []ratelimit.CountRequest{
		{Key: "task", Window: time.Unix(0, 0), Limit: 3},
		{Key: "day", Window: w, Expires: w.Add(24 * time.Hour), Limit: 2},
		{Key: "hour", Window: w, Expires: w.Add(time.Hour), Limit: 5},
	}
	read := func() []int64 {
		out := make([]int64, len(reqs))
		for i, q := range reqs {
			n, err := s.RateCount(c, q.Key, q.Window)
			must(t, err, "RateCount")
			out[i] = n
		}
		return out
	}
	for _, step := range []struct {
		name       string
		want, held []int64
	}{
		{"first", []int64{1, 1, 1}, []int64{1, 1, 1}},
		{"second", []int64{2, 2, 2}, []int64{2, 2, 2}},
		{"day full: task refunded, hour untouched", []int64{3, 3}, []int64{2, 2, 2}},
		{"still full", []int64{3, 3}, []int64{2, 2, 2}},
	} {
		got, err := s.ReserveCounts(c, reqs)
		must(t, err, step.name)
		if fmt.Sprint(got) != fmt.Sprint(step.want) || fmt.Sprint(read()) != fmt.Sprint(step.held) {
			t.Errorf("%s: ReserveCounts = %v and the counters hold %v, want %v and %v", step.name, got, read(), step.want, step.held)
		}
	}
	if got, err := s.ReserveCounts(c, nil); err != nil || len(got) != 0 {
		t.Errorf("ReserveCounts(nil) = %v, %v; want nothing", got, err)
	}
	// The first counter full: nothing else is reached.
	got, err := s.ReserveCounts(c, []ratelimit.CountRequest{{Key: "task", Window: time.Unix(0, 0), Limit: 2}, reqs[2]})
	must(t, err, "ReserveCounts")
	if fmt.Sprint(got) != "[3]" || fmt.Sprint(read()) != "[2 2 2]" {
		t.Errorf("full first counter: ReserveCounts = %v and the counters hold %v, want [3] and [2 2 2]", got, read())
	}
	// A counter whose window never ends is kept by the sweep; the others go.
	n, err := s.DeleteExpiredRateCounts(c, w.Add(25*time.Hour))
	must(t, err, "DeleteExpiredRateCounts")
	if n != 2 || fmt.Sprint(read()) != "[2 0 0]" {
		t.Errorf("sweep removed %d and left %v, want 2 and [2 0 0]", n, read())
	}
}

// testRefunds walks the order rule of seed 001: per task first, then
// workspace/day, then profile/hour; a refusal refunds what the call took.
func testRefunds(t *testing.T, s Store) {
	limits := config.DefaultLimits()
	limits.OpsPerTask, limits.WorkspaceOpsDaily, limits.ProfileOpsHourly = 2, 3, 4
	l := ratelimit.New(s, limits, NewClock(time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)).Now)
	c := ctx(t)
	t1, t2, t3 := opsCall("t1"), opsCall("t2"), opsCall("t3")
	steps := []struct {
		name   string
		sub    ratelimit.Subject
		msg    string // "" means allowed
		bucket string
	}{
		{"t1 first", t1, "", ""},
		{"t1 second", t1, "", ""},
		{"t1 over its per-task cap", t1, "Rate limit exceeded for tool 'schedule.pause'", "task.ops"},
		{"t2 takes the last workspace slot", t2, "", ""},
		{"t2 over the workspace cap", t2, "Workspace daily limit reached for this MCP tool tier (3/3)", "workspace_day.ops"},
	}
	for _, st := range steps {
		err := reserve(c, s, l, st.sub)
		if st.msg == "" {
			must(t, err, st.name)
			continue
		}
		wantRefusal(t, err, st.msg, st.bucket)
	}
	wantUsage(t, l, t1, map[string]int64{"task.ops": 2, "workspace_day.ops": 3, "profile_hour.ops": 3})
	wantUsage(t, l, t2, map[string]int64{"task.ops": 1}) // the refused call's slot was refunded

	// A profile refusal refunds the per-task and the workspace slot.
	limits.WorkspaceOpsDaily = 10
	l = ratelimit.New(s, limits, NewClock(time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)).Now)
	must(t, reserve(c, s, l, t3), "t3 takes the last profile slot")
	wantRefusal(t, reserve(c, s, l, t3), "Profile hourly limit reached for this MCP tool tier (4/4)", "profile_hour.ops")
	wantUsage(t, l, t3, map[string]int64{"task.ops": 1, "workspace_day.ops": 4, "profile_hour.ops": 4})

	// Without a profile (the read-only fallback) there is no profile bucket.
	noProfile := t3
	noProfile.TaskID, noProfile.ProfileID = "t4", ""
	must(t, reserve(c, s, l, noProfile), "no profile bucket")
	wantUsage(t, l, noProfile, map[string]int64{"task.ops": 1, "workspace_day.ops": 5})
}

// testWindows crosses the UTC hour and day boundaries with a fake clock:
// workspace/day and profile/hour buckets start again, per-task ones do not.
func testWindows(t *testing.T, s Store) {
	limits := config.DefaultLimits()
	limits.ScaffoldPerTask, limits.WorkspaceTaskSpawnDaily, limits.ProfileTaskSpawnHourly = 100, 3, 2
	clock := NewClock(time.Date(2025, 3, 4, 22, 59, 59, 999999000, time.UTC))
	l := ratelimit.New(s, limits, clock.Now)
	c := ctx(t)
	spawn := func(task, profile string) ratelimit.Subject {
		return ratelimit.Subject{WorkspaceID: "ws-a", TaskID: task, ProfileID: profile,
			Tool: "task.create_for_app_scaffold", Tier: gateway.TierScaffold, LimitKind: tools.LimitKindTaskSpawn}
	}
	const hourFull = "Profile hourly limit reached for this MCP tool tier (2/2)"
	const dayFull = "Workspace daily limit reached for this MCP tool tier (3/3)"
	for _, st := range []struct {
		name    string
		at      time.Time
		sub     ratelimit.Subject
		msg     string
		buckets string
	}{
		{"22:59:59.999999 first", clock.Now(), spawn("t1", "p1"), "", ""},
		{"same hour second", clock.Now(), spawn("t1", "p1"), "", ""},
		{"same hour third: profile full", clock.Now(), spawn("t1", "p1"), hourFull, "profile_hour.task_spawn"},
		{"23:00:00 new hour", time.Date(2025, 3, 4, 23, 0, 0, 0, time.UTC), spawn("t1", "p1"), "", ""},
		{"23:30 workspace day full", time.Date(2025, 3, 4, 23, 30, 0, 0, time.UTC), spawn("t2", "p2"), dayFull, "workspace_day.task_spawn"},
		{"23:59:59.999999 still full", time.Date(2025, 3, 4, 23, 59, 59, 999999000, time.UTC), spawn("t2", "p2"), dayFull, "workspace_day.task_spawn"},
		{"00:00:00 UTC new day", time.Date(2025, 3, 5, 0, 0, 0, 0, time.UTC), spawn("t2", "p2"), "", ""},
	} {
		clock.Set(st.at)
		err := reserve(c, s, l, st.sub)
		if st.msg == "" {
			must(t, err, st.name)
			continue
		}
		wantRefusal(t, err, st.msg, st.buckets)
	}
	// The per-task bucket spans both days: t1 made 3 calls, t2 one.
	wantUsage(t, l, spawn("t1", "p1"), map[string]int64{"task.scaffold": 3, "workspace_day.task_spawn": 1})
	wantUsage(t, l, spawn("t2", "p2"), map[string]int64{"task.scaffold": 1, "profile_hour.task_spawn": 1})
	// Sweeping on the new day removes the ended windows, never a current
	// one; a window that ended less than a minute ago stays a little longer.
	n, err := l.Store().Sweep(c)
	must(t, err, "Sweep at 00:00")
	if n != 1 { // p1's hour 22:00; the day and the hour 23:00 ended just now
		t.Errorf("swept %d counters at 00:00, want 1", n)
	}
	clock.Set(time.Date(2025, 3, 5, 0, 1, 0, 0, time.UTC))
	n, err = l.Store().Sweep(c)
	must(t, err, "Sweep")
	if n != 2 { // workspace day of 03-04, p1's hour 23:00
		t.Errorf("swept %d counters, want 3", n)
	}
	wantUsage(t, l, spawn("t1", "p1"), map[string]int64{"task.scaffold": 3, "workspace_day.task_spawn": 1})
}

// testSweepEndedTasks checks that the sweep deletes a task's per-task
// counters TaskCounterRetention after the task ended, and never those of a
// running or unknown task.
func testSweepEndedTasks(t *testing.T, s Store) {
	c := ctx(t)
	putWorkspace(t, s, "ws-a")
	now := time.Now().UTC()
	clock := NewClock(now)
	l := ratelimit.New(s, config.DefaultLimits(), clock.Now)
	// Task done's counter exists already without its task, as one written
	// before migration 00003 would: the reservation below must name it.
	_, err := s.AddRateCount(c, "mcpgate:task:ws-a/done:task.ops", time.Unix(0, 0), time.Time{}, 1)
	must(t, err, "AddRateCount")
	for _, task := range []string{"done", "running", "unknown"} {
		must(t, reserve(c, s, l, opsCall(task)), "reserve "+task)
	}
	must(t, s.PutTask(c, &gateway.Task{WorkspaceID: "ws-a", ID: "done", Status: gateway.TaskCompleted}), "PutTask done")
	must(t, s.PutTask(c, &gateway.Task{WorkspaceID: "ws-a", ID: "running", Status: gateway.TaskRunning}), "PutTask running")
	// Tasks are read with the real clock, so step the limiter's far ahead.
	clock.Set(time.Now().Add(ratelimit.TaskCounterRetention - time.Hour))
	_, err = l.Store().Sweep(c)
	must(t, err, "Sweep within the retention")
	wantUsage(t, l, opsCall("done"), map[string]int64{"task.ops": 2})
	clock.Set(time.Now().Add(ratelimit.TaskCounterRetention + time.Minute))
	_, err = l.Store().Sweep(c)
	must(t, err, "Sweep after the retention")
	wantUsage(t, l, opsCall("done"), map[string]int64{"task.ops": 0})
	wantUsage(t, l, opsCall("running"), map[string]int64{"task.ops": 1})
	wantUsage(t, l, opsCall("unknown"), map[string]int64{"task.ops": 1})
}

// ConcurrentReservations sends 200 concurrent ops calls of one task,
// spread over stores (which must share one database: replicas), against
// the per-task ops bucket of 10, then 200 calls of 200 tasks against a
// profile/hour bucket of 10. Exactly 10 must pass each time, the other 190
// must be refused with the seed message, and the refused calls' earlier
// slots must all have been refunded.
func ConcurrentReservations(t *testing.T, stores []Store) {
	clock := NewClock(time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC))
	limits := config.DefaultLimits()
	limits.WorkspaceOpsDaily, limits.ProfileOpsHourly = 1000, 1000
	run := func(t *testing.T, limits config.Limits, sub func(i int) ratelimit.Subject, msg, bucket string) *ratelimit.Limiter {
		t.Helper()
		limiters := make([]*ratelimit.Limiter, len(stores))
		for i, s := range stores {
			limiters[i] = ratelimit.New(s, limits, clock.Now)
		}
		var ok, refused atomic.Int64
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Go(func() {
				s, l := stores[i%len(stores)], limiters[i%len(stores)]
				switch err := reserve(ctx(t), s, l, sub(i)); {
				case err == nil:
					ok.Add(1)
				case gateway.ErrorCodeOf(err) == gateway.ERateLimited && gateway.ErrorMessageOf(err) == msg:
					var ge *gateway.Error
					if errors.As(err, &ge) && ge.Bucket == bucket {
						refused.Add(1)
						return
					}
					t.Errorf("call %d: refused from bucket %s, want %s", i, ge.Bucket, bucket)
				default:
					t.Errorf("call %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		if ok.Load() != 10 || refused.Load() != 190 {
			t.Fatalf("%d calls passed and %d were refused, want exactly 10 and 190", ok.Load(), refused.Load())
		}
		return limiters[0]
	}
	t.Run("per-task bucket", func(t *testing.T) {
		l := run(t, limits, func(int) ratelimit.Subject { return opsCall("hot") }, "Rate limit exceeded for tool 'schedule.pause'", "task.ops")
		wantUsage(t, l, opsCall("hot"), map[string]int64{"task.ops": 10, "workspace_day.ops": 10, "profile_hour.ops": 10})
	})
	t.Run("profile bucket with refunds", func(t *testing.T) {
		limits := limits
		limits.ProfileOpsHourly = 10
		sub := func(i int) ratelimit.Subject {
			s := opsCall(fmt.Sprintf("task-%d", i))
			s.ProfileID = "p-hot"
			return s
		}
		l := run(t, limits, sub, "Profile hourly limit reached for this MCP tool tier (10/10)", "profile_hour.ops")
		var tasks int64
		for i := range 200 {
			tasks += usage(t, l, sub(i))["task.ops"]
		}
		wantUsage(t, l, sub(0), map[string]int64{"profile_hour.ops": 10})
		if tasks != 10 {
			t.Errorf("per-task buckets hold %d calls in all, want 10: refused calls were not refunded", tasks)
		}
	})
}
