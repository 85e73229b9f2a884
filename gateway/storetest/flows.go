package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// flowCall is the reservation of an allowed call of tool in the flow of
// task t1 of ws-a, whose result holds reads, decided on a history of seen
// labels; slots adds one per-task slot of limit.
func flowCall(i int, tool string, seen int, reads []string, limit int64) gateway.Reservation {
	ev := event(i, "ws-a", "t1", tool, gateway.AuditAllowed)
	r := gateway.Reservation{Event: ev, Flow: &gateway.FlowRecord{Key: "flow-t1", WorkspaceID: "ws-a", TaskID: "t1",
		Tool: tool, Reads: reads, Seen: seen}}
	if limit >= 0 {
		r.Slots = []gateway.Slot{{Bucket: "task.read", Key: "flow:t1", Window: time.Unix(0, 0).UTC(), Limit: limit, WorkspaceID: "ws-a", TaskID: "t1"}}
	}
	return r
}

func flowOf(t *testing.T, s Store, key string) *gateway.FlowSession {
	t.Helper()
	f, err := s.FlowSession(ctx(t), key)
	must(t, err, "FlowSession "+key)
	return f
}

// wantFlow fails t unless f holds the reads want (times compared as
// instants) and the tools.
func wantFlow(t *testing.T, f *gateway.FlowSession, want []gateway.FlowRead, tools []string) {
	t.Helper()
	if len(f.Reads) != len(want) {
		t.Fatalf("reads = %+v, want %+v", f.Reads, want)
	}
	for i := range want {
		if got := f.Reads[i]; got.Label != want[i].Label || got.Tool != want[i].Tool || got.AuditID != want[i].AuditID || !got.Time.Equal(want[i].Time) {
			t.Errorf("read %d = %+v, want %+v", i, got, want[i])
		}
	}
	if !slices.Equal(f.Tools, tools) {
		t.Errorf("tools = %v, want %v", f.Tools, tools)
	}
}

var flowTests = []test{
	{"an unknown key has an empty history", func(t *testing.T, s Store) {
		f := flowOf(t, s, "nobody")
		if f.Key != "nobody" || len(f.Reads) != 0 || len(f.Tools) != 0 {
			t.Fatalf("FlowSession(nobody) = %+v, want an empty history", f)
		}
	}},
	{"a reservation records the first call of each label and each tool once", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		first, err := s.Reserve(ctx(t), flowCall(1, "app.files.get", 0, []string{"private", "source"}, 10))
		must(t, err, "Reserve app.files.get")
		again, err := s.Reserve(ctx(t), flowCall(2, "script.get", 2, []string{"private", "secret"}, -1))
		must(t, err, "Reserve script.get (no slots)")
		_, err = s.Reserve(ctx(t), flowCall(3, "app.files.get", 3, []string{"private"}, 10))
		must(t, err, "Reserve app.files.get again")
		f := flowOf(t, s, "flow-t1")
		want := []gateway.FlowRead{
			{Label: "private", Tool: "app.files.get", AuditID: first.AuditID, Time: base.Add(time.Second)},
			{Label: "secret", Tool: "script.get", AuditID: again.AuditID, Time: base.Add(2 * time.Second)},
			{Label: "source", Tool: "app.files.get", AuditID: first.AuditID, Time: base.Add(time.Second)},
		}
		wantFlow(t, f, want, []string{"app.files.get", "script.get"})
		if !slices.Equal(f.Labels(), []string{"private", "secret", "source"}) {
			t.Errorf("Labels() = %v", f.Labels())
		}
	}},
	{"a reservation decided on fewer labels than the key holds writes nothing", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		_, err := s.Reserve(ctx(t), flowCall(1, "conversation.get", 0, []string{"private"}, 10))
		must(t, err, "Reserve the read")
		for _, limit := range []int64{10, -1} {
			res, err := s.Reserve(ctx(t), flowCall(2, "conversation.reply", 0, nil, limit))
			must(t, err, "Reserve the egress decided before the read")
			if !res.FlowChanged || res.AuditID != 0 {
				t.Fatalf("Reserve (slots %v) = %+v, want FlowChanged and no row", limit >= 0, res)
			}
		}
		evs, err := s.ListAuditEvents(ctx(t), gateway.AuditFilter{WorkspaceID: "ws-a"})
		must(t, err, "ListAuditEvents")
		if len(evs) != 1 {
			t.Errorf("%d audit rows, want 1 (the read's)", len(evs))
		}
		if got := flowOf(t, s, "flow-t1").Tools; !slices.Equal(got, []string{"conversation.get"}) {
			t.Errorf("tools = %v, want only the read's", got)
		}
		if n, err := s.RateCount(ctx(t), "flow:t1", time.Unix(0, 0).UTC()); err != nil || n != 1 {
			t.Errorf("slot count = %d, %v; want 1 (the refused reservation took none)", n, err)
		}
	}},
	{"a reservation refused for a full slot records nothing", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		res, err := s.Reserve(ctx(t), flowCall(1, "app.files.get", 0, []string{"private"}, 0))
		must(t, err, "Reserve")
		if res.Full != 1 {
			t.Fatalf("Reserve = %+v, want the slot full", res)
		}
		if f := flowOf(t, s, "flow-t1"); len(f.Reads) != 0 || len(f.Tools) != 0 {
			t.Errorf("history after a refused reservation = %+v, want empty", f)
		}
	}},
	{"a refused reservation leaves the flow row as it was, or absent", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		// Decided on a label the key never held (its history ended since),
		// and refused for a full slot: neither creates the row.
		res, err := s.Reserve(ctx(t), flowCall(1, "pr.create", 1, nil, 10))
		must(t, err, "Reserve on a history that ended")
		if !res.FlowChanged {
			t.Fatalf("Reserve on a history that ended = %+v, want FlowChanged", res)
		}
		res, err = s.Reserve(ctx(t), flowCall(2, "app.files.get", 0, []string{"private"}, 0))
		must(t, err, "Reserve at a full slot")
		if res.Full != 1 {
			t.Fatalf("Reserve at a full slot = %+v, want the slot full", res)
		}
		if n, err := s.DeleteEndedFlows(ctx(t), base, base.Add(time.Hour)); err != nil || n != 0 {
			t.Fatalf("DeleteEndedFlows = %d, %v; want no row written by the refused reservations", n, err)
		}
		// A refused reservation does not touch an existing row either: it
		// stays last updated by the read at base+3s.
		_, err = s.Reserve(ctx(t), flowCall(3, "conversation.get", 0, []string{"private"}, 10))
		must(t, err, "Reserve the read")
		res, err = s.Reserve(ctx(t), flowCall(4, "conversation.reply", 0, nil, 10))
		must(t, err, "Reserve the egress decided before the read")
		if !res.FlowChanged {
			t.Fatalf("Reserve the egress = %+v, want FlowChanged", res)
		}
		res, err = s.Reserve(ctx(t), flowCall(5, "conversation.reply", 1, nil, 1))
		must(t, err, "Reserve the egress at a full slot")
		if res.Full != 1 {
			t.Fatalf("Reserve the egress at a full slot = %+v, want the slot full", res)
		}
		if n, err := s.DeleteEndedFlows(ctx(t), base, base.Add(3500*time.Millisecond)); err != nil || n != 1 {
			t.Errorf("DeleteEndedFlows(idle since base+3.5s) = %d, %v; want 1: the refused reservations moved the row's time", n, err)
		}
	}},
	{"labels are kept in byte order, each once, with its first call", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		first := flowCall(1, "app.files.get", 0, []string{"zeta", "Alpha", "zeta"}, 10)
		first.Event.Time = first.Event.Time.Add(456 * time.Nanosecond)
		r1, err := s.Reserve(ctx(t), first)
		must(t, err, "Reserve the first read")
		r2, err := s.Reserve(ctx(t), flowCall(2, "script.get", 2, []string{"beta", "zeta", "Zulu", "beta"}, 10))
		must(t, err, "Reserve the second read")
		t1 := base.Add(time.Second).Truncate(time.Microsecond)
		t2 := base.Add(2 * time.Second)
		want := []gateway.FlowRead{
			{Label: "Alpha", Tool: "app.files.get", AuditID: r1.AuditID, Time: t1},
			{Label: "Zulu", Tool: "script.get", AuditID: r2.AuditID, Time: t2},
			{Label: "beta", Tool: "script.get", AuditID: r2.AuditID, Time: t2},
			{Label: "zeta", Tool: "app.files.get", AuditID: r1.AuditID, Time: t1},
		}
		f := flowOf(t, s, "flow-t1")
		wantFlow(t, f, want, []string{"app.files.get", "script.get"})
		// A call that adds nothing leaves the history as it was.
		_, err = s.Reserve(ctx(t), flowCall(3, "script.get", 4, []string{"Alpha"}, 10))
		must(t, err, "Reserve a read of a label held")
		if got := flowOf(t, s, "flow-t1"); !slices.Equal(got.Labels(), []string{"Alpha", "Zulu", "beta", "zeta"}) || len(got.Tools) != 2 {
			t.Errorf("history after a call that adds nothing = %+v", got)
		}
	}},
	{"the tools called are bounded", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		for i := range gateway.MaxFlowTools + 3 {
			_, err := s.Reserve(ctx(t), flowCall(i, fmt.Sprintf("tool.%03d", i), 0, nil, -1))
			must(t, err, "Reserve")
		}
		if got := flowOf(t, s, "flow-t1").Tools; len(got) != gateway.MaxFlowTools || got[0] != "tool.000" {
			t.Errorf("%d tools kept (first %q), want the first %d", len(got), got[0], gateway.MaxFlowTools)
		}
	}},
	{"a history ends with its task or when idle", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		for _, task := range []string{"t-done", "t-running"} {
			must(t, s.PutTask(ctx(t), &gateway.Task{ID: task, WorkspaceID: "ws-a", Status: "running"}), "PutTask")
		}
		now := time.Now().UTC()
		for _, k := range []struct{ key, task string }{{"done", "t-done"}, {"running", "t-running"}, {"token", ""}} {
			r := flowCall(1, "app.files.get", 0, []string{"private"}, -1)
			r.Event.Time = now
			r.Flow.Key, r.Flow.TaskID = k.key, k.task
			_, err := s.Reserve(ctx(t), r)
			must(t, err, "Reserve "+k.key)
		}
		must(t, s.PutTask(ctx(t), &gateway.Task{ID: "t-done", WorkspaceID: "ws-a", Status: "completed"}), "PutTask completed")
		n, err := s.DeleteEndedFlows(ctx(t), time.Now().Add(time.Minute), now.Add(-time.Hour))
		must(t, err, "DeleteEndedFlows")
		if n != 1 || len(flowOf(t, s, "done").Reads) != 0 || len(flowOf(t, s, "running").Reads) != 1 {
			t.Errorf("DeleteEndedFlows = %d; want only the ended task's history gone", n)
		}
		n, err = s.DeleteEndedFlows(ctx(t), now.Add(-time.Hour), now)
		must(t, err, "DeleteEndedFlows idle")
		if n != 2 || len(flowOf(t, s, "token").Reads) != 0 {
			t.Errorf("DeleteEndedFlows(idle now) = %d, want 2 (every history touched at or before now)", n)
		}
	}},
	{"a read and an egress of one session take turns", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		FlowRace(t, s, s, 20)
	}},
}

// FlowRace runs rounds of a read (labels) and an egress (none) of one
// flow key at once, each decided on the empty history, the read through
// a and the egress through b (two replicas when they are two stores on
// one database), and checks the order docs/architecture.md promises: the
// egress commits only when it locked the key before the read, so that
// when both commit the history lists the egress's tool first; it is
// refused (FlowChanged) otherwise; the read always commits.
func FlowRace(t *testing.T, a, b Store, rounds int) {
	for i := range rounds {
		key := fmt.Sprintf("race-%d", i)
		read := flowCall(2*i, "app.files.get", 0, []string{"secret"}, -1)
		egress := flowCall(2*i+1, "pr.create", 0, nil, -1)
		read.Flow.Key, egress.Flow.Key = key, key
		var wg sync.WaitGroup
		var rres, eres gateway.ReservationResult
		var rerr, eerr error
		wg.Add(2)
		go func() { defer wg.Done(); rres, rerr = a.Reserve(ctx(t), read) }()
		go func() { defer wg.Done(); eres, eerr = b.Reserve(ctx(t), egress) }()
		wg.Wait()
		must(t, rerr, "Reserve the read")
		must(t, eerr, "Reserve the egress")
		if rres.AuditID == 0 {
			t.Fatalf("round %d: the read was refused: %+v", i, rres)
		}
		tools := flowOf(t, a, key).Tools
		switch {
		case eres.AuditID != 0 && !slices.Equal(tools, []string{"pr.create", "app.files.get"}):
			t.Fatalf("round %d: both committed with tools %v: the egress slipped through after the read", i, tools)
		case eres.AuditID == 0 && (!eres.FlowChanged || !slices.Equal(tools, []string{"app.files.get"})):
			t.Fatalf("round %d: egress %+v, tools %v; want FlowChanged and only the read recorded", i, eres, tools)
		}
	}
}
