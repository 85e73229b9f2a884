package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
)

// RunRateLimits runs the rate-limit part of the suite (docs/requirements.md#rate-limits,
// kept in the audit store) as parallel subtests of t: the counters, the
// reservation (Store.Reserve), exact limits under concurrency, refunds,
// calendar windows and the sweep (ratelimit.Sweep). newStore must return an empty, migrated store of its
// own for each call.
func RunRateLimits(t *testing.T, newStore func(t *testing.T) Store) {
	for _, tc := range rateTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newStore(t))
		})
	}
}

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

// reserver does what the request path does around a store: plan a call's
// slots at its clock, reserve them with the audit row, and word a full
// slot as the seed's refusal.
type reserver struct {
	s     Store
	rules ratelimit.Rules
	now   func() time.Time
}

// newLimiter is a reserver over s with the buckets of limits and the clock
// now (time.Now when nil).
func newLimiter(s Store, limits ratelimit.Limits, now func() time.Time) *reserver {
	if now == nil {
		now = time.Now
	}
	return &reserver{s: s, rules: ratelimit.NewRules(limits), now: now}
}

// plan is sub's plan at the limiter's now.
func (l *reserver) plan(sub ratelimit.Subject) (ratelimit.Plan, error) {
	return l.rules.Plan(sub, l.now())
}

// reserve runs one reservation as the pipeline does: audit row and slots in
// one store call.
func (l *reserver) reserve(ctx context.Context, sub ratelimit.Subject) error {
	p, err := l.plan(sub)
	if err != nil {
		return err
	}
	ev := &gateway.AuditEvent{WorkspaceID: sub.WorkspaceID, TaskID: sub.TaskID, ProfileID: sub.ProfileID,
		Tool: sub.Tool, Tier: sub.Tier, Status: gateway.AuditAllowed}
	res, err := l.s.Reserve(ctx, gateway.Reservation{Event: ev, Slots: p.Counters()})
	if err != nil {
		return err
	}
	if (res.AuditID != 0) == (res.Full != 0) || res.Prior != nil {
		return fmt.Errorf("Reserve returned %+v; want an audit id or a full slot, not both or neither", res)
	}
	return p.Refusal(res)
}

// sweep is ratelimit.Sweep over l's store at l's clock.
func (l *reserver) sweep(ctx context.Context) (int64, error) {
	return ratelimit.Sweep(ctx, l.s, l.now())
}

// usage returns the used counts of sub's buckets by bucket name.
func usage(t *testing.T, l *reserver, sub ratelimit.Subject) map[string]int64 {
	t.Helper()
	p, err := l.plan(sub)
	must(t, err, "Plan")
	us, err := ratelimit.ReadUsage(ctx(t), l.s, p)
	must(t, err, "Usage")
	out := map[string]int64{}
	for _, u := range us {
		out[u.Slot.Bucket.Name] = u.Used
	}
	return out
}

// wantUsage fails t unless sub's buckets hold want.
func wantUsage(t *testing.T, l *reserver, sub ratelimit.Subject, want map[string]int64) {
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
	{"ConcurrentAdds", func(t *testing.T, s Store) {
		// 40 goroutines add 25 each to one counter: no increment is lost.
		w := time.Now().UTC().Truncate(time.Minute)
		var wg sync.WaitGroup
		for range 40 {
			wg.Go(func() {
				for range 25 {
					if _, err := s.AddRateCount(ctx(t), "gets:foo", w, w.Add(time.Minute), 1); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		used, err := s.RateCount(ctx(t), "gets:foo", w)
		must(t, err, "RateCount")
		if used != 1000 {
			t.Errorf("1000 concurrent adds counted %d", used)
		}
	}},
	{"Counters", testCounters},
	{"ReserveAllOrNothing", testReserve},
	{"ReserveWithClaim", testReserveWithClaim},
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

// testReserve checks Store.Reserve on its own: slots in order, all or
// nothing, the full slot and its count, and the audit row only with the
// slots.
func testReserve(t *testing.T, s Store) {
	c := ctx(t)
	w := time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC)
	epoch := time.Unix(0, 0).UTC()
	slots := []gateway.Slot{
		{Bucket: "task", Key: "task", Window: epoch, Limit: 3, WorkspaceID: "ws-a", TaskID: "t1"},
		{Bucket: "day", Key: "day", Window: w, Expires: w.Add(24 * time.Hour), Limit: 2},
		{Bucket: "hour", Key: "hour", Window: w, Expires: w.Add(time.Hour), Limit: 5},
	}
	read := func() []int64 {
		out := make([]int64, len(slots))
		for i, q := range slots {
			n, err := s.RateCount(c, q.Key, q.Window)
			must(t, err, "RateCount")
			out[i] = n
		}
		return out
	}
	rows := func() int {
		list, err := s.ListAuditEvents(c, gateway.AuditFilter{WorkspaceID: "ws-a"})
		must(t, err, "ListAuditEvents")
		return len(list)
	}
	for _, step := range []struct {
		name  string
		slots []gateway.Slot
		full  int
		used  int64
		held  string
		rows  int
	}{
		{"first", slots, 0, 0, "[1 1 1]", 1},
		{"second", slots, 0, 0, "[2 2 2]", 2},
		{"day full: task given back, hour untouched", slots, 2, 2, "[2 2 2]", 2},
		{"still full", slots, 2, 2, "[2 2 2]", 2},
		{"first slot full: nothing else is reached", []gateway.Slot{{Key: "task", Window: epoch, Limit: 2}, slots[2]}, 1, 2, "[2 2 2]", 2},
		{"no slots: the audit row alone", nil, 0, 0, "[2 2 2]", 3},
	} {
		ev := &gateway.AuditEvent{WorkspaceID: "ws-a", TaskID: "t1", Tool: "schedule.pause", Status: gateway.AuditAllowed}
		res, err := s.Reserve(c, gateway.Reservation{Event: ev, Slots: step.slots})
		must(t, err, step.name)
		if res.Full != step.full || res.Used != step.used || (res.AuditID != 0) != (step.full == 0) || res.Prior != nil {
			t.Errorf("%s: Reserve = %+v, want full slot %d with %d used", step.name, res, step.full, step.used)
		}
		if got := fmt.Sprint(read()); got != step.held || rows() != step.rows {
			t.Errorf("%s: the counters hold %s and %d audit rows exist, want %s and %d", step.name, got, rows(), step.held, step.rows)
		}
	}
	// Arguments that are not JSON refuse the whole reservation.
	bad := &gateway.AuditEvent{WorkspaceID: "ws-a", Tool: "schedule.pause", Status: gateway.AuditAllowed,
		Arguments: json.RawMessage(`{"unterminated`)}
	_, err := s.Reserve(c, gateway.Reservation{Event: bad, Slots: slots[2:]})
	wantCode(t, err, gateway.EInvalid, "arguments that are not JSON")
	if got := fmt.Sprint(read()); got != "[2 2 2]" || rows() != 3 {
		t.Errorf("a refused reservation left the counters at %s with %d rows", got, rows())
	}
	// A counter whose window never ends is kept by the sweep; the others go.
	n, err := s.DeleteExpiredRateCounts(c, w.Add(25*time.Hour))
	must(t, err, "DeleteExpiredRateCounts")
	if n != 2 || fmt.Sprint(read()) != "[2 0 0]" {
		t.Errorf("sweep removed %d and left %v, want 2 and [2 0 0]", n, read())
	}
}

// testReserveWithClaim checks the idempotency claim of Store.Reserve: it
// commits with the slots and the row, a key claimed before is answered
// with nothing written, and a full slot rolls the claim back.
func testReserveWithClaim(t *testing.T, s Store) {
	c := ctx(t)
	putWorkspace(t, s, "ws-a")
	slot := gateway.Slot{Bucket: "task.deploy", Key: "deploy", Window: time.Unix(0, 0).UTC(), Limit: 2}
	call := func(k string, slots ...gateway.Slot) gateway.ReservationResult {
		t.Helper()
		ev := &gateway.AuditEvent{WorkspaceID: "ws-a", TaskID: "t1", Tool: "app.deploy", Status: gateway.AuditAllowed}
		res, err := s.Reserve(c, gateway.Reservation{Event: ev, Slots: slots, Claim: key(k, "h1")})
		must(t, err, "Reserve "+k)
		return res
	}
	count := func() int64 {
		n, err := s.RateCount(c, "deploy", slot.Window)
		must(t, err, "RateCount")
		return n
	}
	if res := call("k1", slot); res.AuditID == 0 || res.Prior != nil || count() != 1 {
		t.Fatalf("first claim = %+v (count %d), want committed with one slot", res, count())
	}
	if res := call("k1", slot); res.Prior == nil || res.Prior.InputHash != "h1" || res.Prior.Result != nil || res.AuditID != 0 || count() != 1 {
		t.Fatalf("second claim = %+v (count %d), want the pending record and no slot", res, count())
	}
	if res := call("k2", slot); res.AuditID == 0 || count() != 2 {
		t.Fatalf("claim of k2 = %+v (count %d), want committed", res, count())
	}
	if res := call("k3", slot); res.Full != 1 || res.Used != 2 || count() != 2 {
		t.Fatalf("claim of k3 with the bucket full = %+v (count %d), want slot 1 full", res, count())
	}
	if res := call("k3"); res.AuditID == 0 || res.Prior != nil {
		t.Fatalf("claim of k3 after its refused reservation = %+v, want a fresh claim (the refused one rolled back)", res)
	}
	list, err := s.ListAuditEvents(c, gateway.AuditFilter{WorkspaceID: "ws-a"})
	must(t, err, "ListAuditEvents")
	if len(list) != 3 {
		t.Errorf("%d audit rows, want 3 (k1, k2, k3 without slots)", len(list))
	}
	// A claim in a workspace the store does not know.
	ev := &gateway.AuditEvent{WorkspaceID: "ws-x", TaskID: "t1", Tool: "app.deploy", Status: gateway.AuditAllowed}
	rec := key("k1", "h1")
	rec.WorkspaceID = "ws-x"
	_, err = s.Reserve(c, gateway.Reservation{Event: ev, Claim: rec})
	wantCode(t, err, gateway.ENotFound, "claim in an unknown workspace")
}

// testRefunds walks the order rule of docs/requirements.md#limit-order: per task first, then
// workspace/day, then profile/hour; a refusal refunds what the call took.
func testRefunds(t *testing.T, s Store) {
	limits := ratelimit.DefaultLimits()
	limits.OpsPerTask, limits.WorkspaceOpsDaily, limits.ProfileOpsHourly = 2, 3, 4
	l := newLimiter(s, limits, NewClock(time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)).Now)
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
		err := l.reserve(c, st.sub)
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
	l = newLimiter(s, limits, NewClock(time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)).Now)
	must(t, l.reserve(c, t3), "t3 takes the last profile slot")
	wantRefusal(t, l.reserve(c, t3), "Profile hourly limit reached for this MCP tool tier (4/4)", "profile_hour.ops")
	wantUsage(t, l, t3, map[string]int64{"task.ops": 1, "workspace_day.ops": 4, "profile_hour.ops": 4})

	// Without a profile (the read-only fallback) there is no profile bucket.
	noProfile := t3
	noProfile.TaskID, noProfile.ProfileID = "t4", ""
	must(t, l.reserve(c, noProfile), "no profile bucket")
	wantUsage(t, l, noProfile, map[string]int64{"task.ops": 1, "workspace_day.ops": 5})
}

// testWindows crosses the UTC hour and day boundaries with a fake clock:
// workspace/day and profile/hour buckets start again, per-task ones do not.
func testWindows(t *testing.T, s Store) {
	limits := ratelimit.DefaultLimits()
	limits.ScaffoldPerTask, limits.WorkspaceTaskSpawnDaily, limits.ProfileTaskSpawnHourly = 100, 3, 2
	clock := NewClock(time.Date(2025, 3, 4, 22, 59, 59, 999999000, time.UTC))
	l := newLimiter(s, limits, clock.Now)
	c := ctx(t)
	spawn := func(task, profile string) ratelimit.Subject {
		return ratelimit.Subject{WorkspaceID: "ws-a", TaskID: task, ProfileID: profile,
			Tool: "task.create_for_app_scaffold", Tier: gateway.TierScaffold, LimitKind: ratelimit.LimitKindTaskSpawn}
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
		err := l.reserve(c, st.sub)
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
	n, err := l.sweep(c)
	must(t, err, "Sweep at 00:00")
	if n != 1 { // p1's hour 22:00; the day and the hour 23:00 ended just now
		t.Errorf("swept %d counters at 00:00, want 1", n)
	}
	clock.Set(time.Date(2025, 3, 5, 0, 1, 0, 0, time.UTC))
	n, err = l.sweep(c)
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
	l := newLimiter(s, ratelimit.DefaultLimits(), clock.Now)
	// Task done's counter exists already without its task, as one written
	// before migration 00003 would: the reservation below must name it.
	_, err := s.AddRateCount(c, "mcpgate:task:ws-a/done:task.ops", time.Unix(0, 0), time.Time{}, 1)
	must(t, err, "AddRateCount")
	for _, task := range []string{"done", "running", "unknown"} {
		must(t, l.reserve(c, opsCall(task)), "reserve "+task)
	}
	must(t, s.PutTask(c, &gateway.Task{WorkspaceID: "ws-a", ID: "done", Status: gateway.TaskCompleted}), "PutTask done")
	must(t, s.PutTask(c, &gateway.Task{WorkspaceID: "ws-a", ID: "running", Status: gateway.TaskRunning}), "PutTask running")
	// Tasks are read with the real clock, so step the limiter's far ahead.
	clock.Set(time.Now().Add(ratelimit.TaskCounterRetention - time.Hour))
	_, err = l.sweep(c)
	must(t, err, "Sweep within the retention")
	wantUsage(t, l, opsCall("done"), map[string]int64{"task.ops": 2})
	clock.Set(time.Now().Add(ratelimit.TaskCounterRetention + time.Minute))
	_, err = l.sweep(c)
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
	limits := ratelimit.DefaultLimits()
	limits.WorkspaceOpsDaily, limits.ProfileOpsHourly = 1000, 1000
	run := func(t *testing.T, limits ratelimit.Limits, sub func(i int) ratelimit.Subject, msg, bucket string) *reserver {
		t.Helper()
		limiters := make([]*reserver, len(stores))
		for i, s := range stores {
			limiters[i] = newLimiter(s, limits, clock.Now)
		}
		var ok, refused atomic.Int64
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Go(func() {
				l := limiters[i%len(stores)]
				switch err := l.reserve(ctx(t), sub(i)); {
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
