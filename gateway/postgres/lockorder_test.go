package postgres_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/postgres"
	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
)

// ownDatabase creates a database of its own for t (dropped when t ends)
// and returns its URL: pg_stat_database counts deadlocks per database, and
// the shared test database also holds the deadlocks other tests make on
// purpose. It skips t when the test role may not create databases.
func ownDatabase(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatalf("%s is not a URL: %v", pgtest.EnvURL, err)
	}
	admin, err := sql.Open("postgres", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "mcpgate_lock_" + hex.EncodeToString(b)
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Skipf("cannot create a database of its own (grant the test role CREATEDB): %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP DATABASE " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// deadlocks is pg_stat_database.deadlocks of the database db is connected to.
func deadlocks(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(`SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// lockCall is one kind of call of the crossed-order test: a task of a
// workspace, with the slots the planner gives an ops call (per task,
// workspace day, profile hour).
type lockCall struct{ ws, task string }

func (c lockCall) slots(day time.Time, limits map[string]int64) []gateway.Slot {
	hour := day.Add(12 * time.Hour)
	return []gateway.Slot{
		{Key: "task:" + c.task, Window: time.Unix(0, 0).UTC(), Limit: limits["task:"+c.task], WorkspaceID: c.ws, TaskID: c.task},
		{Key: "day:" + c.ws, Window: day, Expires: day.Add(24 * time.Hour), Limit: limits["day:"+c.ws]},
		{Key: "hour:" + c.ws, Window: hour, Expires: hour.Add(time.Hour), Limit: limits["hour:"+c.ws]},
	}
}

// flow is the record of c's call in its task's flow session: no labels,
// so every call is decided on the history as it stays.
func (c lockCall) flow() *gateway.FlowRecord {
	return &gateway.FlowRecord{Key: "flow-" + c.task, WorkspaceID: c.ws, TaskID: c.task, Tool: "schedule.pause"}
}

// Issue 9: two replicas' batches whose calls name the same counters in
// crossed order ([ws1 call, ws2 call] and [ws2 call, ws1 call]), with and
// without flow records (issue 28), and claims' transactions among them,
// never deadlock (each transaction locks
// its counters in one global order before it decides), and every limit
// stays exact: each counter holds exactly the calls written against it,
// and a call is refused only by a counter at its limit.
func TestCrossedReservationsNeverDeadlock(t *testing.T) {
	dsn := ownDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stores := make([]*postgres.Store, 2)
	for i := range stores {
		s, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		s.DB().SetMaxOpenConns(6)
		stores[i] = s
	}
	closed := false
	closeAll := func() {
		if !closed {
			closed = true
			for _, s := range stores {
				_ = s.Close()
			}
		}
	}
	t.Cleanup(closeAll)
	if err := stores[0].Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := stores[0].DB().ExecContext(ctx, `INSERT INTO workspaces (id) VALUES ('ws1'), ('ws2')`); err != nil {
		t.Fatal(err)
	}
	stat, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stat.Close() }()
	stat.SetMaxOpenConns(1)
	before := deadlocks(t, stat)

	day := time.Date(2026, 5, 6, 0, 0, 0, 0, time.UTC)
	calls := []lockCall{{"ws1", "t1"}, {"ws2", "t3"}, {"ws1", "t2"}, {"ws2", "t4"}}
	// ws2's hour fills during the run, so refusals are checked too.
	limits := map[string]int64{"task:t1": 1 << 40, "task:t2": 1 << 40, "task:t3": 1 << 40, "task:t4": 1 << 40,
		"day:ws1": 1 << 40, "day:ws2": 1 << 40, "hour:ws1": 1 << 40, "hour:ws2": 60}
	ev := func(c lockCall) *gateway.AuditEvent {
		return &gateway.AuditEvent{WorkspaceID: c.ws, TaskID: c.task, Tool: "schedule.pause", Status: gateway.AuditAllowed}
	}

	var mu sync.Mutex
	taken := map[string]int64{} // calls written, per counter
	written, refused := 0, 0
	var errs []error
	record := func(c lockCall, res gateway.ReservationResult, err error) {
		mu.Lock()
		defer mu.Unlock()
		sl := c.slots(day, limits)
		switch {
		case err != nil:
			errs = append(errs, err)
		case res.AuditID != 0:
			written++
			for _, s := range sl {
				taken[s.Key]++
			}
		case res.Full >= 1 && res.Full <= len(sl):
			refused++
			if s := sl[res.Full-1]; res.Used != s.Limit {
				errs = append(errs, fmt.Errorf("%s refused by %s at %d of %d", c.task, s.Key, res.Used, s.Limit))
			}
		default:
			errs = append(errs, fmt.Errorf("%s: reservation result %+v", c.task, res))
		}
	}

	stop := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for i, s := range stores {
		order := slices.Clone(calls)
		if i == 1 {
			slices.Reverse(order) // the other replica names the counters in crossed order
		}
		for g := range 3 {
			wg.Go(func() {
				for time.Now().Before(stop) {
					evs := make([]*gateway.AuditEvent, len(order))
					slots := make([][]gateway.Slot, len(order))
					flows := make([]*gateway.FlowRecord, len(order))
					for j, c := range order {
						evs[j], slots[j], flows[j] = ev(c), c.slots(day, limits), c.flow()
					}
					// Batches whose calls record in flow sessions lock
					// those rows (in key order) before any counter.
					var res []gateway.ReservationResult
					var err error
					if g == 0 {
						res, err = postgres.ReserveBatch(ctx, s, evs, slots)
					} else {
						res, err = postgres.ReserveBatchFlows(ctx, s, evs, slots, flows)
					}
					if err == nil && len(res) != len(order) {
						err = fmt.Errorf("batch of %d answered %d", len(order), len(res))
					}
					for j, c := range order {
						var r gateway.ReservationResult
						if err == nil {
							r = res[j]
						}
						record(c, r, err)
					}
				}
			})
		}
		// A confirmed call claims its idempotency key and takes its slots
		// in a transaction of its own (the first one recording in its flow
		// session first), among the batches.
		for g, c := range []lockCall{order[0], order[len(order)-1]} {
			wg.Go(func() {
				for n := 0; time.Now().Before(stop); n++ {
					var flow *gateway.FlowRecord
					if g == 0 {
						flow = c.flow()
					}
					res, err := s.Reserve(ctx, gateway.Reservation{Event: ev(c), Slots: c.slots(day, limits), Flow: flow,
						Claim: &gateway.IdempotencyRecord{WorkspaceID: c.ws, TaskID: c.task, Tool: "schedule.pause",
							Key: fmt.Sprintf("k-%d-%d-%d", i, g, n), InputHash: "h"}})
					record(c, res, err)
				}
			})
		}
	}
	wg.Wait()
	for _, err := range errs[:min(len(errs), 5)] {
		t.Errorf("reservation: %v", err)
	}
	if len(errs) > 5 {
		t.Errorf("… and %d more failed reservations", len(errs)-5)
	}
	t.Logf("%d calls written, %d refused in 3 s", written, refused)

	for key, limit := range limits {
		n, err := stores[0].RateCount(ctx, key, slotWindow(key, day))
		if err != nil {
			t.Fatal(err)
		}
		if n != taken[key] || n > limit {
			t.Errorf("counter %s holds %d, want the %d calls written against it (limit %d)", key, n, taken[key], limit)
		}
	}
	var rows int
	if err := stores[0].DB().QueryRowContext(ctx, `SELECT count(*) FROM audit_events`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != written {
		t.Errorf("%d audit rows, want one per call written (%d)", rows, written)
	}
	if refused == 0 {
		t.Errorf("no call was refused: the run never reached hour:ws2's limit of %d", limits["hour:ws2"])
	}

	// A backend reports the deadlocks it was aborted for when it goes idle
	// (at most once a second) or exits: close the pools and wait for their
	// backends to be gone.
	closeAll()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var others int
		if err := stat.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).
			Scan(&others); err != nil {
			t.Fatal(err)
		}
		if others == 0 || time.Now().After(deadline) {
			break
		}
	}
	time.Sleep(300 * time.Millisecond) // a backend leaves pg_stat_activity just before it flushes its counts
	if got := deadlocks(t, stat) - before; got != 0 {
		t.Errorf("PostgreSQL broke %d deadlocks between the reservations; want none", got)
	}
}

// slotWindow is the window of a counter of lockCall.slots.
func slotWindow(key string, day time.Time) time.Time {
	switch key[:4] {
	case "task":
		return time.Unix(0, 0).UTC()
	case "hour":
		return day.Add(12 * time.Hour)
	}
	return day
}

// BenchmarkReserve measures Reserve of an ops call (three slots: its own
// task, its workspace's day, its workspace's hour; four workspaces) from 16
// goroutines, on one store and on two stores (replicas, 8 goroutines
// each), on the schema of every migration (since 00016 a call's counters
// are locked in one order first). A deadlock would cost its call
// deadlock_timeout: calls>900ms counts them.
func BenchmarkReserve(b *testing.B) {
	for _, replicas := range []int{1, 2} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			benchReserve(b, replicas)
		})
	}
}

// BenchmarkReserveBatch measures one mcpgate_reserve_batch statement of 16
// ops calls (16 tasks in 4 workspaces: 24 distinct counters), one after
// another, on the schema of every migration.
func BenchmarkReserveBatch(b *testing.B) {
	s := pgtest.New(b)
	day := time.Date(2026, 5, 6, 0, 0, 0, 0, time.UTC)
	limits := map[string]int64{}
	evs := make([]*gateway.AuditEvent, 16)
	slots := make([][]gateway.Slot, 16)
	for g := range evs {
		c := lockCall{ws: fmt.Sprintf("ws%d", g%4), task: fmt.Sprintf("t%d", g)}
		for _, key := range []string{"task:" + c.task, "day:" + c.ws, "hour:" + c.ws} {
			limits[key] = 1 << 40
		}
		evs[g] = &gateway.AuditEvent{WorkspaceID: c.ws, TaskID: c.task, Tool: "schedule.pause", Status: gateway.AuditAllowed}
		slots[g] = c.slots(day, limits)
	}
	b.ResetTimer()
	for b.Loop() {
		if res, err := postgres.ReserveBatch(context.Background(), s, evs, slots); err != nil || len(res) != 16 || res[15].AuditID == 0 {
			b.Fatalf("batch: %+v, %v", res, err)
		}
	}
}

func benchReserve(b *testing.B, replicas int) {
	const goroutines = 16
	ctx := context.Background()
	first, dsn := pgtest.NewWithURL(b)
	stores := []*postgres.Store{first}
	for len(stores) < replicas {
		s, err := postgres.Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		stores = append(stores, s)
	}
	for _, s := range stores {
		s.DB().SetMaxOpenConns(goroutines / replicas)
		s.DB().SetMaxIdleConns(goroutines / replicas)
	}
	day := time.Date(2026, 5, 6, 0, 0, 0, 0, time.UTC)
	limits := map[string]int64{}
	calls := make([]lockCall, goroutines)
	for g := range calls {
		calls[g] = lockCall{ws: fmt.Sprintf("ws%d", g%4), task: fmt.Sprintf("t%d", g)}
		for _, key := range []string{"task:" + calls[g].task, "day:" + calls[g].ws, "hour:" + calls[g].ws} {
			limits[key] = 1 << 40
		}
	}
	var left atomic.Int64
	left.Store(int64(b.N))
	took := make([][]time.Duration, goroutines)
	b.ResetTimer()
	var wg sync.WaitGroup
	for g, c := range calls {
		s := stores[g%replicas]
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				ev := &gateway.AuditEvent{WorkspaceID: c.ws, TaskID: c.task, Tool: "schedule.pause", Status: gateway.AuditAllowed}
				start := time.Now()
				res, err := s.Reserve(ctx, gateway.Reservation{Event: ev, Slots: c.slots(day, limits)})
				took[g] = append(took[g], time.Since(start))
				if err != nil || res.AuditID == 0 {
					b.Errorf("Reserve: %+v, %v", res, err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	// A deadlock costs its call deadlock_timeout (1 s): it shows in the
	// tail, not in the mean.
	all := slices.Concat(took...)
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)*99/100])/1e6, "p99-ms")
		b.ReportMetric(float64(all[len(all)-1])/1e6, "max-ms")
		slow := len(all) - sort.Search(len(all), func(i int) bool { return all[i] >= 900*time.Millisecond })
		b.ReportMetric(float64(slow), "calls>900ms")
	}
}

// The counters are locked in key order, but a refused call still names
// its first full slot in the call's own order, alone and in a batch.
func TestFullSlotIsFirstInTheCallsOrder(t *testing.T) {
	s := pgtest.New(t)
	ctx := context.Background()
	epoch := time.Unix(0, 0).UTC()
	slots := []gateway.Slot{{Key: "b", Window: epoch, Limit: 0}, {Key: "a", Window: epoch, Limit: 0}}
	ev := func() *gateway.AuditEvent {
		return &gateway.AuditEvent{WorkspaceID: "ws", Tool: "app.deploy", Status: gateway.AuditAllowed}
	}
	res, err := s.Reserve(ctx, gateway.Reservation{Event: ev(), Slots: slots})
	if err != nil || res.Full != 1 || res.Used != 0 {
		t.Errorf("lone call with both slots full: %+v, %v; want Full 1", res, err)
	}
	batch, err := postgres.ReserveBatch(ctx, s, []*gateway.AuditEvent{ev(), ev()}, [][]gateway.Slot{slots, slots[1:]})
	if err != nil || len(batch) != 2 || batch[0].Full != 1 || batch[1].Full != 1 {
		t.Errorf("batch of calls with full slots: %+v, %v; want each Full 1", batch, err)
	}
}
