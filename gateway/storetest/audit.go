package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// base is the time of the first fixture event; events are a second apart.
var base = time.Date(2025, 3, 4, 5, 6, 7, 890123000, time.UTC)

// event returns a fully populated audit event number i.
func event(i int, ws, task, tool, status string) *gateway.AuditEvent {
	return &gateway.AuditEvent{
		Time: base.Add(time.Duration(i) * time.Second), RequestID: fmt.Sprintf("req-%d", i),
		DecisionID: fmt.Sprintf("dec-%d", i), WorkspaceID: ws, TaskID: task, ProfileID: "p1", Actor: "u1",
		PrincipalKind: gateway.PrincipalAgent, TokenFP: "", Tool: tool, Tier: gateway.TierRead, Status: status,
		ErrorClass: "", ReasonCodes: []string{"allowlist.match"}, Bucket: "task", LatencyMicros: int64(100 + i),
		ArgumentsHash: fmt.Sprintf("sha256:%d", i),
	}
}

var auditTests = []test{
	{"PolicyRevision", testPolicyRevision},
	{"TraceID", testTraceID},
	{"RoundTrip", func(t *testing.T, s Store) {
		ev := event(1, "ws-a", "t1", "app.list", gateway.AuditDenied)
		ev.PrincipalKind, ev.TokenFP, ev.ErrorClass = gateway.PrincipalCoordinator, "fp-1", "Forbidden"
		ev.ReasonCodes = []string{"tier.not_allowed", "role.required"}
		ev.Arguments = json.RawMessage(`{"app_id":"a1","n":2}`)
		must(t, s.RecordAudit(ctx(t), ev), "RecordAudit")
		if ev.ID <= 0 {
			t.Fatalf("RecordAudit set ID %d, want > 0", ev.ID)
		}
		bare := &gateway.AuditEvent{WorkspaceID: "ws-a", Tool: "memory.read", Status: gateway.AuditAllowed}
		before := time.Now().Add(-time.Second)
		must(t, s.RecordAudit(gateway.WithRequestID(ctx(t), "req-from-ctx"), bare), "bare event")
		if bare.ID <= ev.ID {
			t.Errorf("second id %d not after first %d", bare.ID, ev.ID)
		}
		if bare.Time.Before(before) || bare.Time.After(time.Now().Add(time.Second)) {
			t.Errorf("zero Time became %v, want now", bare.Time)
		}
		badArgs := event(3, "ws-a", "t1", "app.list", gateway.AuditAllowed)
		badArgs.Arguments = json.RawMessage(`{"unterminated`)
		wantCode(t, s.RecordAudit(ctx(t), badArgs), gateway.EInvalid, "arguments that are not JSON")
		list, err := s.ListAuditEvents(ctx(t), gateway.AuditFilter{WorkspaceID: "ws-a"})
		must(t, err, "list")
		if len(list) != 2 {
			t.Fatalf("listed %d events, want 2", len(list))
		}
		wantEvent(t, list[1], ev)
		wantEvent(t, list[0], bare)
		if list[0].RequestID != "" || list[0].ReasonCodes == nil || list[0].Arguments != nil {
			t.Errorf("bare event read back as %+v: want no request id (the store reads nothing from ctx), empty reason codes, no arguments", list[0])
		}
	}},
	{"FinishAudit", func(t *testing.T, s Store) {
		ev := event(1, "ws-a", "t1", "app.deploy", gateway.AuditAllowed)
		must(t, s.RecordAudit(ctx(t), ev), "record")
		want := *ev
		fin := &gateway.AuditEvent{ID: ev.ID, Status: gateway.AuditError, ErrorClass: "Unavailable", LatencyMicros: 4321,
			ReasonCodes: append(slices.Clone(ev.ReasonCodes), "dispatch.abandoned")}
		must(t, s.FinishAudit(ctx(t), fin), "finish")
		want.Status, want.ErrorClass, want.LatencyMicros, want.ReasonCodes = fin.Status, fin.ErrorClass, fin.LatencyMicros, fin.ReasonCodes
		list, err := s.ListAuditEvents(ctx(t), gateway.AuditFilter{WorkspaceID: "ws-a"})
		must(t, err, "list")
		if len(list) != 1 {
			t.Fatalf("listed %d events, want 1 (finishing must not add a row)", len(list))
		}
		wantEvent(t, list[0], &want)
		wantCode(t, s.FinishAudit(ctx(t), &gateway.AuditEvent{ID: ev.ID + 1000, Status: "allowed"}),
			gateway.ENotFound, "finish of unknown id")
	}},
	// FinishAudit may group concurrent finishes into one commit: each row
	// must still get its own values, and each caller its own outcome.
	{"ConcurrentFinishes", func(t *testing.T, s Store) {
		const n = 60
		want := make([]*gateway.AuditEvent, n)
		for i := range want {
			ev := event(i, "ws-a", "t1", "app.list", gateway.AuditAllowed)
			must(t, s.RecordAudit(ctx(t), ev), "record")
			want[i] = ev
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, ev := range want {
			fin := &gateway.AuditEvent{ID: ev.ID, Status: gateway.AuditError, ErrorClass: fmt.Sprintf("Class%d", i),
				LatencyMicros: int64(1000 + i), ReasonCodes: []string{fmt.Sprintf("reason.%d", i)}}
			if i%3 == 0 {
				fin.Status, fin.ErrorClass, fin.ReasonCodes = gateway.AuditAllowed, "", nil
			}
			if i%7 == 0 {
				fin.ID = ev.ID + 1_000_000 // no such row: an error for this caller only
			}
			wg.Go(func() { errs[i] = s.FinishAudit(ctx(t), fin) })
			if i%7 != 0 {
				ev.Status, ev.ErrorClass, ev.LatencyMicros, ev.ReasonCodes = fin.Status, fin.ErrorClass, fin.LatencyMicros, fin.ReasonCodes
			}
		}
		wg.Wait()
		for i, err := range errs {
			if i%7 == 0 {
				wantCode(t, err, gateway.ENotFound, fmt.Sprintf("finish %d of an unknown id", i))
			} else {
				must(t, err, fmt.Sprintf("finish %d", i))
			}
		}
		list, err := s.ListAuditEvents(ctx(t), gateway.AuditFilter{WorkspaceID: "ws-a", Limit: 1000})
		must(t, err, "list")
		if len(list) != n {
			t.Fatalf("listed %d events, want %d", len(list), n)
		}
		for i := range list { // newest first
			wantEvent(t, list[i], want[n-1-i])
		}
	}},
	{"ListFiltersOrderLimit", func(t *testing.T, s Store) {
		specs := []struct{ ws, task, tool, status string }{
			{"ws-a", "t1", "app.list", gateway.AuditAllowed},                // 0
			{"ws-a", "t1", "app.deploy", gateway.AuditDenied},               // 1
			{"ws-a", "t2", "app.list", gateway.AuditRateLimited},            // 2
			{"ws-b", "t1", "app.list", gateway.AuditAllowed},                // 3
			{"ws-a", "t1", "app.list", gateway.AuditAllowed},                // 4
			{"ws-b", "t3", "script.run", gateway.AuditError},                // 5
			{"ws-a", "t2", "app.deploy", gateway.AuditConfirmationRequired}, // 6
		}
		// Insert out of time order: listing order must follow time, not id.
		for _, i := range []int{3, 0, 6, 1, 5, 2, 4} {
			sp := specs[i]
			must(t, s.RecordAudit(ctx(t), event(i, sp.ws, sp.task, sp.tool, sp.status)), "record")
		}
		for _, tc := range []struct {
			name string
			f    gateway.AuditFilter
			want []int // request numbers, newest first
		}{
			{"all", gateway.AuditFilter{}, []int{6, 5, 4, 3, 2, 1, 0}},
			{"workspace", gateway.AuditFilter{WorkspaceID: "ws-a"}, []int{6, 4, 2, 1, 0}},
			{"task across workspaces", gateway.AuditFilter{TaskID: "t1"}, []int{4, 3, 1, 0}},
			{"workspace and task", gateway.AuditFilter{WorkspaceID: "ws-a", TaskID: "t1"}, []int{4, 1, 0}},
			{"tool", gateway.AuditFilter{Tool: "app.deploy"}, []int{6, 1}},
			{"status", gateway.AuditFilter{Status: gateway.AuditAllowed}, []int{4, 3, 0}},
			{"all four", gateway.AuditFilter{WorkspaceID: "ws-a", TaskID: "t1", Tool: "app.list", Status: "allowed"}, []int{4, 0}},
			{"limit", gateway.AuditFilter{WorkspaceID: "ws-a", Limit: 2}, []int{6, 4}},
			{"no match", gateway.AuditFilter{WorkspaceID: "ws-9"}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				list, err := s.ListAuditEvents(ctx(t), tc.f)
				must(t, err, "ListAuditEvents")
				var got []int
				for _, ev := range list {
					var n int
					_, _ = fmt.Sscanf(ev.RequestID, "req-%d", &n)
					got = append(got, n)
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("events %v, want %v", got, tc.want)
				}
			})
		}
	}},
	{"PagesWithBefore", func(t *testing.T, s Store) {
		// Seven events, three of them at the same instant: paging by
		// (time, id) must return each exactly once, newest first.
		for i := range 7 {
			ev := event(i, "ws-a", "t1", "app.list", gateway.AuditAllowed)
			if i >= 2 && i <= 4 {
				ev.Time = base.Add(2 * time.Second)
			}
			must(t, s.RecordAudit(ctx(t), ev), "record")
		}
		all, err := s.ListAuditEvents(ctx(t), gateway.AuditFilter{WorkspaceID: "ws-a"})
		must(t, err, "list all")
		var paged []gateway.AuditEvent
		f := gateway.AuditFilter{WorkspaceID: "ws-a", Limit: 2}
		for range 10 {
			page, err := s.ListAuditEvents(ctx(t), f)
			must(t, err, "list page")
			paged = append(paged, page...)
			if len(page) < f.Limit {
				break
			}
			f.Before = gateway.PositionOf(&page[len(page)-1])
		}
		if len(all) != 7 || len(paged) != 7 {
			t.Fatalf("listed %d events at once and %d by pages of 2, want 7 and 7", len(all), len(paged))
		}
		for i := range all {
			if paged[i].ID != all[i].ID {
				t.Errorf("page order differs at %d: id %d, want %d", i, paged[i].ID, all[i].ID)
			}
		}
	}},
	{"LimitDefaultAndCap", func(t *testing.T, s Store) {
		recordMany(t, s, 1001, "ws-a")
		for _, tc := range []struct {
			name  string
			limit int
			want  int
		}{
			{"zero means default 100", 0, 100},
			{"negative means default 100", -5, 100},
			{"explicit", 7, 7},
			{"capped at 1000", 5000, 1000},
		} {
			t.Run(tc.name, func(t *testing.T) {
				list, err := s.ListAuditEvents(ctx(t), gateway.AuditFilter{WorkspaceID: "ws-a", Limit: tc.limit})
				must(t, err, "ListAuditEvents")
				if len(list) != tc.want {
					t.Errorf("got %d events, want %d", len(list), tc.want)
				}
			})
		}
	}},
	{"ConcurrentRecordAudit", func(t *testing.T, s Store) {
		ids := recordMany(t, s, 100, "ws-c")
		slices.Sort(ids)
		if len(slices.Compact(ids)) != 100 {
			t.Errorf("100 concurrent inserts produced %d distinct ids", len(slices.Compact(ids)))
		}
		list, err := s.ListAuditEvents(ctx(t), gateway.AuditFilter{WorkspaceID: "ws-c", Limit: 1000})
		must(t, err, "list")
		if len(list) != 100 {
			t.Errorf("100 concurrent RecordAudit calls left %d rows, want exactly 100", len(list))
		}
	}},
}

// recordMany records n events of workspace ws from 100 goroutines at once
// and returns their ids; any error fails t.
func recordMany(t *testing.T, s Store, n int, ws string) []int64 {
	t.Helper()
	ids := make([]int64, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 100)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ev := event(i, ws, "t1", "app.list", gateway.AuditAllowed)
			errs[i] = s.RecordAudit(ctx(t), ev)
			ids[i] = ev.ID
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("RecordAudit #%d of %d concurrent: %v", i, n, err)
		}
	}
	return ids
}

// testPolicyRevision: every path that writes an audit row keeps the
// revision of the policy that decided the call, and the listing returns
// it: RecordAudit (a refusal), Reserve with slots (one statement on
// PostgreSQL), Reserve with an idempotency claim (a transaction), and
// FinishAudit, which writes the revision it is given.
func testPolicyRevision(t *testing.T, s Store) {
	putWorkspace(t, s, "ws-a")
	recorded := event(1, "ws-a", "t1", "app.list", gateway.AuditDenied)
	recorded.PolicyRevision = "sha256:0f1e"
	must(t, s.RecordAudit(ctx(t), recorded), "RecordAudit")
	slotted := event(2, "ws-a", "t1", "app.get", gateway.AuditAllowed)
	slotted.PolicyRevision = "manifest-7"
	_, err := s.Reserve(ctx(t), gateway.Reservation{Event: slotted,
		Slots: []gateway.Slot{{Bucket: "task.read", Key: "rev:t1", Window: time.Unix(0, 0).UTC(), Limit: 5}}})
	must(t, err, "Reserve with a slot")
	claimed := event(3, "ws-a", "t1", "app.deploy", gateway.AuditAllowed)
	claimed.PolicyRevision = "manifest-8"
	res, err := s.Reserve(ctx(t), gateway.Reservation{Event: claimed, Claim: key("rev-k", "h1")})
	must(t, err, "Reserve with a claim")
	finished := *claimed
	finished.ID, finished.Status, finished.PolicyRevision = res.AuditID, gateway.AuditError, "manifest-9"
	must(t, s.FinishAudit(ctx(t), &finished), "FinishAudit")
	list, err := s.ListAuditEvents(ctx(t), gateway.AuditFilter{WorkspaceID: "ws-a"})
	must(t, err, "list")
	got := map[string]string{}
	for _, ev := range list {
		got[ev.Tool] = ev.PolicyRevision
	}
	want := map[string]string{"app.list": "sha256:0f1e", "app.get": "manifest-7", "app.deploy": "manifest-9"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("policy revisions read back %v, want %v", got, want)
	}
}

// testTraceID: every path that writes an audit row keeps the call's
// trace id, or none (NULL) when the call was not traced: RecordAudit,
// Reserve with one slot, with two (one statement each on PostgreSQL),
// with an idempotency claim (a transaction), reservations at once
// (a group commit: one statement for the batch on PostgreSQL), and
// RecordEvents (a refused credential's row, traced or not); the listing
// returns them, and the chain sealed over them verifies.
func testTraceID(t *testing.T, s Store) {
	putWorkspace(t, s, "ws-a")
	trace := func(i int) string { return fmt.Sprintf("%032x", 0xabc0+i) }
	want := map[string]string{}
	write := func(i int, traced bool, r func(ev *gateway.AuditEvent) error) {
		ev := event(i, "ws-a", "t1", "app.list", gateway.AuditAllowed)
		if traced {
			ev.TraceID = trace(i)
		}
		want[ev.RequestID] = ev.TraceID
		must(t, r(ev), fmt.Sprintf("write %d", i))
	}
	record := func(ev *gateway.AuditEvent) error { return s.RecordAudit(ctx(t), ev) }
	reserve := func(slots int, claim bool) func(ev *gateway.AuditEvent) error {
		return func(ev *gateway.AuditEvent) error {
			r := gateway.Reservation{Event: ev}
			for j := range slots {
				r.Slots = append(r.Slots, gateway.Slot{Bucket: "task.read", Key: fmt.Sprintf("trace:%s:%d", ev.RequestID, j), Window: time.Unix(0, 0).UTC(), Limit: 5})
			}
			if claim {
				r.Claim = key("trace-"+ev.RequestID, "h")
			}
			res, err := s.Reserve(ctx(t), r)
			if err == nil {
				ev.ID = res.AuditID
				err = s.FinishAudit(ctx(t), ev)
			}
			return err
		}
	}
	refusal := func(ev *gateway.AuditEvent) error {
		ev.Kind, ev.Tool, ev.Status, ev.ReasonCodes = "auth", "auth.refused", gateway.AuditDenied, []string{"credential.rejected"}
		return s.RecordEvents(ctx(t), []*gateway.AuditEvent{ev})
	}
	write(1, true, record)
	write(2, false, record)
	write(3, true, reserve(1, false))
	write(4, false, reserve(1, false))
	write(5, true, reserve(2, false))
	write(6, true, reserve(0, true))
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for j := range errs {
		ev := event(10+j, "ws-a", "t1", "app.list", gateway.AuditAllowed)
		if j%3 != 0 {
			ev.TraceID = trace(10 + j)
		}
		want[ev.RequestID] = ev.TraceID
		wg.Go(func() { errs[j] = reserve(1, false)(ev) })
	}
	wg.Wait()
	must(t, errors.Join(errs...), "the reservations at once")
	write(30, true, refusal)
	write(31, false, refusal)
	list, err := s.ListAuditEvents(ctx(t), gateway.AuditFilter{WorkspaceID: "ws-a"})
	must(t, err, "list")
	got := map[string]string{}
	for _, ev := range list {
		got[ev.RequestID] = ev.TraceID
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("trace ids read back by request id\n got %v\nwant %v", got, want)
	}
	n, err := s.SealAudit(ctx(t))
	must(t, err, "SealAudit")
	wantReport(t, s, int64(n), 0)
}

// wantEvent compares an event read back with the one written; Arguments
// are compared as JSON values (PostgreSQL's jsonb re-formats them).
func wantEvent(t *testing.T, got gateway.AuditEvent, want *gateway.AuditEvent) {
	t.Helper()
	if !got.Time.Equal(want.Time) {
		t.Errorf("time %v, want %v", got.Time, want.Time)
	}
	if !sameJSON(got.Arguments, want.Arguments) {
		t.Errorf("arguments %s, want %s", got.Arguments, want.Arguments)
	}
	g, w := got, *want
	g.Time, w.Time, g.Arguments, w.Arguments = time.Time{}, time.Time{}, nil, nil
	if len(g.ReasonCodes) == 0 && len(w.ReasonCodes) == 0 {
		g.ReasonCodes, w.ReasonCodes = nil, nil
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("event read back\n got %+v\nwant %+v", g, w)
	}
}

// sameJSON reports whether a and b hold the same JSON value (both empty counts).
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// BenchCallWrites measures the store writes of one allowed call as a busy
// gateway issues them: a Reserve of one per-task slot with the audit row,
// then FinishAudit, from 8 goroutines per CPU (so that finishes overlap,
// as with 16 sessions on 2 cores), each with a task, and so a counter, of
// its own.
func BenchCallWrites(b *testing.B, s Store) {
	c := context.Background()
	var tasks atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		task := fmt.Sprintf("t%d", tasks.Add(1))
		slot := gateway.Slot{Bucket: "task.read", Key: "bench:" + task, Window: time.Unix(0, 0).UTC(),
			Limit: 1 << 40, WorkspaceID: "ws-a", TaskID: task}
		for pb.Next() {
			ev := event(1, "ws-a", task, "app.list", gateway.AuditAllowed)
			res, err := s.Reserve(c, gateway.Reservation{Event: ev, Slots: []gateway.Slot{slot}})
			if err != nil || res.AuditID == 0 {
				b.Errorf("Reserve: %+v, %v", res, err)
				return
			}
			ev.ID, ev.LatencyMicros = res.AuditID, 250
			if err := s.FinishAudit(c, ev); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// CloseDrains checks that Close lets the FinishAudit calls under way
// finish: n rows are recorded, finished from n goroutines while close
// (the store's Close) runs, and reopen (a new store on the same database)
// must show every finish that returned no error; the others must have
// failed with EUnavailable (the store was closed), and a finish after
// close fails so too.
func CloseDrains(t *testing.T, s Store, close func() error, reopen func() Store) {
	const n = 50
	evs := make([]*gateway.AuditEvent, n)
	for i := range evs {
		evs[i] = event(i, "ws-a", "t1", "app.list", gateway.AuditAllowed)
		must(t, s.RecordAudit(ctx(t), evs[i]), "record")
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, ev := range evs {
		ev.Status, ev.ErrorClass, ev.LatencyMicros = gateway.AuditError, "Unavailable", int64(5000+i)
		fin := &gateway.AuditEvent{ID: ev.ID, Status: ev.Status, ErrorClass: ev.ErrorClass,
			LatencyMicros: ev.LatencyMicros, ReasonCodes: ev.ReasonCodes}
		wg.Go(func() { errs[i] = s.FinishAudit(ctx(t), fin) })
		if i == n/2 {
			wg.Go(func() {
				if err := close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
		}
	}
	wg.Wait()
	wantCode(t, s.FinishAudit(ctx(t), &gateway.AuditEvent{ID: evs[0].ID, Status: gateway.AuditAllowed}),
		gateway.EUnavailable, "finish after Close")
	list, err := reopen().ListAuditEvents(ctx(t), gateway.AuditFilter{WorkspaceID: "ws-a", Limit: 1000})
	must(t, err, "list after reopening")
	if len(list) != n {
		t.Fatalf("listed %d events, want %d", len(list), n)
	}
	written := 0
	for i, err := range errs {
		got := list[n-1-i]
		switch {
		case err == nil:
			written++
			wantEvent(t, got, evs[i])
		case gateway.ErrorCodeOf(err) != gateway.EUnavailable:
			t.Errorf("finish %d during Close: %v, want success or EUnavailable", i, err)
		case got.Status != gateway.AuditAllowed:
			t.Errorf("finish %d failed (%v) but its row reads %q", i, err, got.Status)
		}
	}
	t.Logf("%d of %d finishes landed before Close, the rest were refused", written, n)
}
