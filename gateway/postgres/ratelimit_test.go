package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/postgres"
	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
	"github.com/mcpgate/mcpgate/gateway/storetest"
)

func TestRateLimits(t *testing.T) {
	pgtest.URL(t)
	storetest.RunRateLimits(t, func(t *testing.T) storetest.Store { return pgtest.New(t) })
}

// Two stores on one schema are two gateway replicas: their reservations
// must share the buckets exactly.
func TestRateLimitsAcrossReplicas(t *testing.T) {
	a, b := twoReplicas(t)
	b.DB().SetMaxOpenConns(4)
	storetest.ConcurrentReservations(t, []storetest.Store{a, b})
}

// twoReplicas returns two stores on one fresh schema, as two gateway
// replicas on one database are.
func twoReplicas(t *testing.T) (a, b *postgres.Store) {
	t.Helper()
	a, url := pgtest.NewWithURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return a, b
}

// A reservation without a claim is one statement in autocommit: at a full
// counter the statement raises and rolls back entirely, so it leaves no
// counter row it created, no slot taken before the full one and no audit
// row — not even counters at zero.
func TestFullReservationWritesNothing(t *testing.T) {
	s := pgtest.New(t)
	ctx := context.Background()
	epoch := time.Unix(0, 0).UTC()
	ev := &gateway.AuditEvent{WorkspaceID: "ws", Tool: "app.deploy", Status: gateway.AuditAllowed}
	res, err := s.Reserve(ctx, gateway.Reservation{Event: ev, Slots: []gateway.Slot{
		{Key: "new-task", Window: epoch, Limit: 5, WorkspaceID: "ws", TaskID: "t"},
		{Key: "new-day", Window: epoch, Expires: epoch.Add(24 * time.Hour), Limit: 0},
	}})
	if err != nil || res.Full != 2 || res.Used != 0 || res.AuditID != 0 {
		t.Fatalf("Reserve with a full second slot: %+v, %v; want Full 2, Used 0", res, err)
	}
	var counters, rows int
	if err := s.DB().QueryRowContext(ctx, `SELECT (SELECT count(*) FROM rate_limit_counters), (SELECT count(*) FROM audit_events)`).
		Scan(&counters, &rows); err != nil {
		t.Fatal(err)
	}
	if counters != 0 || rows != 0 {
		t.Fatalf("after a full reservation: %d counter rows, %d audit rows; want none", counters, rows)
	}
	// A counter that exists keeps its count; the full one reports it.
	for i := range 2 {
		res, err = s.Reserve(ctx, gateway.Reservation{Event: ev, Slots: []gateway.Slot{{Key: "k", Window: epoch, Limit: 2}}})
		if err != nil || res.AuditID == 0 {
			t.Fatalf("reservation %d: %+v, %v", i, res, err)
		}
	}
	res, err = s.Reserve(ctx, gateway.Reservation{Event: ev, Slots: []gateway.Slot{{Key: "k", Window: epoch, Limit: 2}}})
	if err != nil || res.Full != 1 || res.Used != 2 {
		t.Fatalf("third reservation of a bucket of 2: %+v, %v; want Full 1, Used 2", res, err)
	}
	if n, err := s.RateCount(ctx, "k", epoch); err != nil || n != 2 {
		t.Fatalf("count after the refusal: %d, %v; want 2", n, err)
	}
}

// A batch of reservations (mcpgate_reserve_batch, the group commit of
// concurrent ones) is all or nothing per call: a full call leaves nothing
// of its own, the calls around it are written, a later call sees the
// slots of the earlier ones, and each written row holds its call's
// columns exactly.
func TestReserveBatchIsAllOrNothingPerCall(t *testing.T) {
	s := pgtest.New(t)
	ctx := context.Background()
	epoch := time.Unix(0, 0).UTC()
	at := time.Date(2026, 12, 1, 12, 0, 0, 123456000, time.UTC)
	ev := func(req string) *gateway.AuditEvent {
		return &gateway.AuditEvent{Time: at, RequestID: req, WorkspaceID: "ws", Tool: "app.deploy", Status: gateway.AuditAllowed}
	}
	rich := ev("r2")
	rich.DecisionID, rich.TaskID, rich.ProfileID, rich.Actor = "d-1", "t", "p", "agent-7"
	rich.PrincipalKind, rich.TokenFP, rich.Tier, rich.Bucket = gateway.PrincipalKind("agent"), "fp", gateway.Tier("deploy"), "k"
	rich.ReasonCodes, rich.ArgumentsHash, rich.Arguments = []string{"policy.allow"}, "sha256-x", []byte(`{"n":9007199254740993}`)
	rich.PolicyRevision, rich.Surface, rich.Mode, rich.ApprovalID = "rev-1", gateway.SurfaceCCServer, "plan", "ap-1"
	k := []gateway.Slot{{Key: "k", Window: epoch, Limit: 2}}
	res, err := postgres.ReserveBatch(ctx, s, []*gateway.AuditEvent{ev("r1"), rich, ev("r3"), ev("r4")}, [][]gateway.Slot{
		{{Key: "new-task", Window: epoch, Limit: 5, WorkspaceID: "ws", TaskID: "t"},
			{Key: "new-day", Window: epoch, Expires: epoch.Add(24 * time.Hour), Limit: 0}},
		k, k, k,
	})
	if err != nil || len(res) != 4 {
		t.Fatalf("batch: %+v, %v", res, err)
	}
	if r := res[0]; r.Full != 2 || r.Used != 0 || r.AuditID != 0 {
		t.Errorf("call with a full second slot: %+v; want Full 2, Used 0", r)
	}
	if res[1].AuditID == 0 || res[2].AuditID == 0 || res[1].Full != 0 || res[2].Full != 0 {
		t.Errorf("calls 2 and 3 of a bucket of 2: %+v, %+v; want both written", res[1], res[2])
	}
	if r := res[3]; r.Full != 1 || r.Used != 2 || r.AuditID != 0 {
		t.Errorf("third call of a bucket of 2 in the same batch: %+v; want Full 1, Used 2", r)
	}
	var counters int
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM rate_limit_counters`).Scan(&counters); err != nil {
		t.Fatal(err)
	}
	if n, err := s.RateCount(ctx, "k", epoch); err != nil || n != 2 || counters != 1 {
		t.Errorf("counters after the batch: k = %d (%v), %d rows; want k = 2, one row", n, err, counters)
	}
	list, err := s.ListAuditEvents(ctx, gateway.AuditFilter{WorkspaceID: "ws"})
	if err != nil || len(list) != 2 {
		t.Fatalf("audit rows after the batch: %+v, %v; want 2", list, err)
	}
	got := list[1] // oldest last: same time, so by id
	if got.ID != res[1].AuditID {
		got = list[0]
	}
	want := *rich
	want.ID = res[1].AuditID
	// The column defaults: a reservation's row is a tool call, open
	// until FinishAudit.
	want.Kind, want.Open = gateway.AuditKindToolCall, true
	if got.Arguments == nil || string(got.Arguments) != `{"n": 9007199254740993}` && string(got.Arguments) != string(rich.Arguments) {
		t.Errorf("arguments: %s, want %s", got.Arguments, rich.Arguments)
	}
	got.Arguments, want.Arguments = nil, nil
	if !got.Time.Equal(want.Time) {
		t.Errorf("time: %v, want %v", got.Time, want.Time)
	}
	got.Time, want.Time = time.Time{}, time.Time{}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Errorf("batched audit row:\n got %+v\nwant %+v", got, want)
	}
}

// A batch whose calls record in flow sessions (issue 28: flow
// reservations join the group commit) decides each call as its own
// statement would: a call decided on fewer labels than its key holds, or
// on a key whose history ended, and a call at a full slot write nothing,
// not even their flow rows; the others are written and recorded, the
// labels of a read merged in byte order with the call's audit id and
// time; a key named twice in one batch is refused as a whole.
func TestReserveFlowBatchIsAllOrNothingPerCall(t *testing.T) {
	s := pgtest.New(t)
	ctx := context.Background()
	epoch := time.Unix(0, 0).UTC()
	at := time.Date(2026, 12, 1, 12, 0, 0, 123456789, time.UTC)
	before := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	ev := func(req string) *gateway.AuditEvent {
		return &gateway.AuditEvent{Time: at, RequestID: req, WorkspaceID: "ws", Tool: "app.files.get", Status: gateway.AuditAllowed}
	}
	flow := func(key string, seen int, reads ...string) *gateway.FlowRecord {
		return &gateway.FlowRecord{Key: key, WorkspaceID: "ws", Tool: "app.files.get", Reads: reads, Seen: seen}
	}
	// Key "held" read "private" an hour ago.
	if _, err := s.DB().ExecContext(ctx, `INSERT INTO flow_sessions (flow_key, workspace_id, reads, tools, updated_at)
VALUES ('held', 'ws', '[{"label":"private","tool":"t","audit_id":7,"time":"2026-12-01T11:00:00Z"}]', '["t"]', $1)`, before); err != nil {
		t.Fatal(err)
	}
	k := []gateway.Slot{{Key: "k", Window: epoch, Limit: 10}}
	full := []gateway.Slot{{Key: "full", Window: epoch, Limit: 0}}
	res, err := postgres.ReserveBatchFlows(ctx, s,
		[]*gateway.AuditEvent{ev("read"), ev("plain"), ev("ended"), ev("full"), ev("stale"), ev("held")},
		[][]gateway.Slot{k, k, k, full, k, k},
		[]*gateway.FlowRecord{flow("new", 0, "zeta", "Alpha"), nil, flow("gone", 1), flow("full", 0, "secret"),
			flow("held", 0), flow("held2", 0, "secret")})
	if err != nil || len(res) != 6 {
		t.Fatalf("batch: %+v, %v", res, err)
	}
	// "held2" is a key of its own: written.
	if res[0].AuditID == 0 || res[1].AuditID == 0 || res[5].AuditID == 0 {
		t.Errorf("read, plain call, other key: %+v, %+v, %+v; want each written", res[0], res[1], res[5])
	}
	if !res[2].FlowChanged || res[2].AuditID != 0 || !res[4].FlowChanged || res[4].AuditID != 0 {
		t.Errorf("calls on a history that ended or grew: %+v, %+v; want FlowChanged, nothing written", res[2], res[4])
	}
	if r := res[3]; r.Full != 1 || r.AuditID != 0 || r.FlowChanged {
		t.Errorf("call at a full slot: %+v; want Full 1", r)
	}
	if n, err := s.RateCount(ctx, "k", epoch); err != nil || n != 3 {
		t.Errorf("slot count %d (%v), want 3 (the written calls)", n, err)
	}
	var keys []string
	rows, err := s.DB().QueryContext(ctx, `SELECT flow_key FROM flow_sessions ORDER BY flow_key`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{"held", "held2", "new"}) {
		t.Errorf("flow rows %v, want [held held2 new]: a refused call creates none", keys)
	}
	var updated time.Time
	if err := s.DB().QueryRowContext(ctx, `SELECT updated_at FROM flow_sessions WHERE flow_key = 'held'`).Scan(&updated); err != nil || !updated.Equal(before) {
		t.Errorf("held's row updated at %v (%v), want %v: a refused call leaves it", updated, err, before)
	}
	f, err := s.FlowSession(ctx, "new")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Labels(); !slices.Equal(got, []string{"Alpha", "zeta"}) || !slices.Equal(f.Tools, []string{"app.files.get"}) {
		t.Errorf("new's history %+v, want labels [Alpha zeta] and the tool", f)
	}
	for _, r := range f.Reads {
		if r.AuditID != res[0].AuditID || !r.Time.Equal(at.Truncate(time.Microsecond)) || r.Tool != "app.files.get" {
			t.Errorf("read %+v, want audit id %d at %v", r, res[0].AuditID, at.Truncate(time.Microsecond))
		}
	}

	_, err = postgres.ReserveBatchFlows(ctx, s, []*gateway.AuditEvent{ev("a"), ev("b")}, [][]gateway.Slot{k, k},
		[]*gateway.FlowRecord{flow("twice", 0), flow("twice", 0)})
	if err == nil {
		t.Errorf("a batch naming one flow key twice was written")
	}
	if n, err := s.RateCount(ctx, "k", epoch); err != nil || n != 3 {
		t.Errorf("slot count %d (%v) after the refused batch, want 3", n, err)
	}
}

// A reservation that PostgreSQL aborts to break a deadlock (since
// reservations are batched, a batch or a claim's transaction can hold a
// counter the reservation needs while waiting for one it holds) wrote
// nothing, and runs again instead of failing the call: alone in
// autocommit, and in the transaction of a call that claims an idempotency
// key.
func TestReservationRunsAgainAfterADeadlock(t *testing.T) {
	t.Run("autocommit", func(t *testing.T) { reservationAfterDeadlock(t, nil) })
	t.Run("claim", func(t *testing.T) {
		reservationAfterDeadlock(t, &gateway.IdempotencyRecord{WorkspaceID: "ws", TaskID: "t", Tool: "app.deploy", Key: "key-1", InputHash: "h"})
	})
}

func reservationAfterDeadlock(t *testing.T, claim *gateway.IdempotencyRecord) {
	s := pgtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	epoch := time.Unix(0, 0).UTC()
	if _, err := s.DB().ExecContext(ctx, `INSERT INTO workspaces (id) VALUES ('ws')`); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"k1", "k2"} {
		if _, err := s.AddRateCount(ctx, k, epoch, time.Time{}, 0); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	// This transaction checks for deadlocks long after the reservation
	// does (1 s, the server's default), so PostgreSQL always aborts the
	// reservation, whatever the load on the machine.
	if _, err := tx.ExecContext(ctx, `SET LOCAL deadlock_timeout = '20s'`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE rate_limit_counters SET count = count WHERE bucket_key = 'k2'`); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		res gateway.ReservationResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := s.Reserve(ctx, gateway.Reservation{
			Event: &gateway.AuditEvent{WorkspaceID: "ws", Tool: "app.list", Status: gateway.AuditAllowed},
			Slots: []gateway.Slot{{Key: "k1", Window: epoch, Limit: 5}, {Key: "k2", Window: epoch, Limit: 5}},
			Claim: claim})
		done <- outcome{res, err}
	}()
	// Once the reservation holds k1 and waits for k2, take k1: a deadlock,
	// which the reservation (waiting first) detects and is aborted for.
	for {
		var waiting int
		if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%mcpgate_take_slots%'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE rate_limit_counters SET count = count WHERE bucket_key = 'k1'`); err != nil {
		t.Fatalf("the other transaction was the one aborted (%v); the reservation should have been", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil || got.res.AuditID == 0 {
		t.Fatalf("reservation after a deadlock: %+v, %v; want it written", got.res, got.err)
	}
	for _, k := range []string{"k1", "k2"} {
		if n, err := s.RateCount(ctx, k, epoch); err != nil || n != 1 {
			t.Errorf("%s after the reservation ran again: %d, %v; want 1", k, n, err)
		}
	}
}

// A call of one slot takes it in plain SQL (reserveOneAndAudit) rather
// than through mcpgate_take_slots; the counter row it writes is the one the
// function writes (expiry, task), a counter written without a task learns
// it, and a full or blocked (limit 0) slot writes nothing and reports its
// count.
func TestOneSlotReservation(t *testing.T) {
	s := pgtest.New(t)
	ctx := context.Background()
	epoch := time.Unix(0, 0).UTC()
	day := time.Date(2026, 5, 6, 0, 0, 0, 0, time.UTC)
	ev := func() *gateway.AuditEvent {
		return &gateway.AuditEvent{WorkspaceID: "ws", TaskID: "t1", Tool: "app.list", Status: gateway.AuditAllowed, Tier: "read"}
	}
	counter := func(key string) (count int64, expires sql.NullTime, ws, task sql.NullString) {
		t.Helper()
		err := s.DB().QueryRowContext(ctx, `SELECT count, expires_at, task_workspace_id, task_id FROM rate_limit_counters WHERE bucket_key = $1`, key).
			Scan(&count, &expires, &ws, &task)
		if err != nil {
			t.Fatalf("counter %s: %v", key, err)
		}
		return
	}
	audits := func() int {
		t.Helper()
		var n int
		if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM audit_events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	e := ev()
	res, err := s.Reserve(ctx, gateway.Reservation{Event: e, Slots: []gateway.Slot{
		{Key: "hour:ws", Window: day, Expires: day.Add(time.Hour), Limit: 3}}})
	if err != nil || res.AuditID == 0 {
		t.Fatalf("one-slot reservation: %+v, %v", res, err)
	}
	if n, exp, ws, task := counter("hour:ws"); n != 1 || !exp.Valid || !exp.Time.Equal(day.Add(time.Hour)) || ws.Valid || task.Valid {
		t.Errorf("windowed counter: count %d, expires %v, task %v/%v; want 1, %v, none", n, exp, ws, task, day.Add(time.Hour))
	}
	list, err := s.ListAuditEvents(ctx, gateway.AuditFilter{WorkspaceID: "ws"})
	if err != nil || len(list) != 1 || list[0].ID != res.AuditID || list[0].TaskID != "t1" || list[0].Tool != "app.list" || list[0].Tier != "read" {
		t.Fatalf("audit row of the reservation %d: %+v, %v", res.AuditID, list, err)
	}

	if _, err := s.AddRateCount(ctx, "task:t1", epoch, time.Time{}, 0); err != nil {
		t.Fatal(err)
	}
	res, err = s.Reserve(ctx, gateway.Reservation{Event: ev(), Slots: []gateway.Slot{
		{Key: "task:t1", Window: epoch, Limit: 1, WorkspaceID: "ws", TaskID: "t1"}}})
	if err != nil || res.AuditID == 0 {
		t.Fatalf("one-slot reservation of a task counter: %+v, %v", res, err)
	}
	if n, exp, ws, task := counter("task:t1"); n != 1 || exp.Valid || ws.String != "ws" || task.String != "t1" {
		t.Errorf("task counter: count %d, expires %v, task %v/%v; want 1, none, ws/t1", n, exp, ws, task)
	}

	before := audits()
	res, err = s.Reserve(ctx, gateway.Reservation{Event: ev(), Slots: []gateway.Slot{
		{Key: "task:t1", Window: epoch, Limit: 1, WorkspaceID: "ws", TaskID: "t1"}}})
	if err != nil || res.Full != 1 || res.Used != 1 || res.AuditID != 0 {
		t.Fatalf("one-slot reservation of a full counter: %+v, %v; want Full 1, Used 1", res, err)
	}
	res, err = s.Reserve(ctx, gateway.Reservation{Event: ev(), Slots: []gateway.Slot{{Key: "blocked", Window: epoch, Limit: 0}}})
	if err != nil || res.Full != 1 || res.Used != 0 || res.AuditID != 0 {
		t.Fatalf("one-slot reservation with limit 0: %+v, %v; want Full 1, Used 0", res, err)
	}
	if n, _, _, _ := counter("task:t1"); n != 1 {
		t.Errorf("full counter after the refusal: %d; want 1", n)
	}
	var blocked int
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM rate_limit_counters WHERE bucket_key = 'blocked'`).Scan(&blocked); err != nil || blocked != 0 {
		t.Errorf("counter rows of the blocked slot: %d, %v; want none", blocked, err)
	}
	if got := audits(); got != before {
		t.Errorf("audit rows after two refusals: %d; want %d", got, before)
	}
}

// A read and an egress of one session, reserved at once through two
// stores on one schema (two replicas), take turns on the flow key: the
// egress commits only when it locked the key before the read
// (docs/architecture.md, "Flow rules and their order").
func TestFlowOrderAcrossReplicas(t *testing.T) {
	a, b := twoReplicas(t)
	if err := a.PutWorkspace(context.Background(), &gateway.Workspace{ID: "ws-a", Name: "A", OrgPlan: "team"}); err != nil {
		t.Fatal(err)
	}
	storetest.FlowRace(t, a, b, 40)
}

// Reservations that record in flow sessions go through the group commit
// (issue 28): of calls at once on one key, each reading a label of its
// own and decided on the empty history, exactly one is written (whichever
// locked the key first, in a batch or after it) and the others are
// refused as FlowChanged with nothing written, whether they shared a
// batch with it or ran after it; calls on other keys do not disturb each
// other. The slot and the audit rows count the written calls only.
func TestFlowReservationsInTheGroupCommit(t *testing.T) {
	s := pgtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	epoch := time.Unix(0, 0).UTC()
	const keys, perKey, rounds = 4, 6, 5
	written := 0
	for round := range rounds {
		type result struct {
			key   string
			label string
			res   gateway.ReservationResult
			err   error
		}
		results := make(chan result, keys*perKey)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for k := range keys {
			for c := range perKey {
				key, label := fmt.Sprintf("flow-%d-%d", round, k), fmt.Sprintf("label-%d", c)
				wg.Go(func() {
					<-start
					res, err := s.Reserve(ctx, gateway.Reservation{
						Event: &gateway.AuditEvent{Time: time.Now().UTC(), RequestID: key + label, WorkspaceID: "ws",
							Tool: "app.files.get", Status: gateway.AuditAllowed},
						Slots: []gateway.Slot{{Key: "k", Window: epoch, Limit: 1 << 40}},
						Flow:  &gateway.FlowRecord{Key: key, WorkspaceID: "ws", Tool: "app.files.get", Reads: []string{label}},
					})
					results <- result{key, label, res, err}
				})
			}
		}
		close(start)
		wg.Wait()
		close(results)
		winners := map[string]result{}
		for r := range results {
			switch {
			case r.err != nil:
				t.Fatalf("Reserve %s %s: %v", r.key, r.label, r.err)
			case r.res.AuditID != 0:
				if w, ok := winners[r.key]; ok {
					t.Fatalf("round %d: %s written twice (%s and %s), each decided on the empty history", round, r.key, w.label, r.label)
				}
				winners[r.key] = r
				written++
			case !r.res.FlowChanged:
				t.Fatalf("Reserve %s %s = %+v, want written or FlowChanged", r.key, r.label, r.res)
			}
		}
		for k := range keys {
			key := fmt.Sprintf("flow-%d-%d", round, k)
			w, ok := winners[key]
			f, err := s.FlowSession(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if !ok || len(f.Reads) != 1 || f.Reads[0].Label != w.label || f.Reads[0].AuditID != w.res.AuditID {
				t.Fatalf("round %d: %s's history %+v, want only the written call's label %q (audit id %d)", round, key, f.Reads, w.label, w.res.AuditID)
			}
		}
	}
	if n, err := s.RateCount(ctx, "k", epoch); err != nil || n != int64(written) {
		t.Errorf("slot count %d (%v), want %d (the written calls)", n, err, written)
	}
	var rows int
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM audit_events`).Scan(&rows); err != nil || rows != written {
		t.Errorf("%d audit rows (%v), want %d", rows, err, written)
	}
}
