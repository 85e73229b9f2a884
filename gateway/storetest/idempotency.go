package storetest

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// key is an idempotency record of ws-a, task t1, app.deploy.
func key(k, hash string) *gateway.IdempotencyRecord {
	return &gateway.IdempotencyRecord{WorkspaceID: "ws-a", TaskID: "t1", Tool: "app.deploy", Key: k, InputHash: hash}
}

// claim claims rec in a reservation without slots, as a confirmed deploy
// call does, and fails t on an error. It returns the record claimed
// before, or nil when rec was claimed now.
func claim(t *testing.T, s Store, rec *gateway.IdempotencyRecord) *gateway.IdempotencyRecord {
	t.Helper()
	ev := &gateway.AuditEvent{WorkspaceID: rec.WorkspaceID, TaskID: rec.TaskID, Tool: rec.Tool, Status: gateway.AuditAllowed}
	res, err := s.Reserve(ctx(t), gateway.Reservation{Event: ev, Claim: rec})
	must(t, err, "Reserve with the claim of "+rec.Key)
	if (res.Prior == nil) != (res.AuditID != 0) {
		t.Fatalf("Reserve with the claim of %s = %+v, want a prior record or an audit row", rec.Key, res)
	}
	return res.Prior
}

func jsonEq(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// idempotencyTests cover mcp_idempotency_keys (docs/requirements.md#idempotency-keys):
// claim, replay, scope, release, transactions,
// concurrency and the 24-hour cleanup.
var idempotencyTests = []test{
	{"ClaimThenReplay", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		if got := claim(t, s, key("k1", "h1")); got != nil {
			t.Fatalf("first claim returned %+v, want nil (claimed)", got)
		}
		pending := claim(t, s, key("k1", "h1"))
		if pending == nil || pending.Result != nil || pending.InputHash != "h1" || pending.CreatedAt.IsZero() {
			t.Fatalf("second claim before a result = %+v, want the pending row", pending)
		}
		rec := key("k1", "h1")
		rec.Result = json.RawMessage(`{"content":[{"type":"text","text":"ok"}],"structuredContent":{"build":"b1","n":2}}`)
		must(t, s.SaveIdempotencyResult(ctx(t), rec), "SaveIdempotencyResult")
		done := claim(t, s, key("k1", "h1"))
		if done == nil || !jsonEq(t, done.Result, rec.Result) {
			t.Fatalf("claim after the result = %+v, want the stored result %s", done, rec.Result)
		}
	}},
	{"SameKeyOtherArguments", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		claim(t, s, key("k1", "h1"))
		if got := claim(t, s, key("k1", "h2")); got == nil || got.InputHash != "h1" {
			t.Fatalf("claim with other arguments = %+v, want the first call's row (hash h1)", got)
		}
	}},
	{"ScopedToTaskToolAndKey", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		claim(t, s, key("k1", "h1"))
		for _, tc := range []struct {
			note string
			edit func(r *gateway.IdempotencyRecord)
		}{
			{"other key", func(r *gateway.IdempotencyRecord) { r.Key = "k2" }},
			{"other tool", func(r *gateway.IdempotencyRecord) { r.Tool = "app.migration.apply" }},
			{"other task", func(r *gateway.IdempotencyRecord) { r.TaskID = "t2" }},
		} {
			r := key("k1", "h1")
			tc.edit(r)
			if got := claim(t, s, r); got != nil {
				t.Errorf("%s: claim = %+v, want a fresh claim", tc.note, got)
			}
		}
	}},
	{"KeysArePerWorkspace", func(t *testing.T, s Store) {
		// Task ids are unique per workspace only: the same task id, tool
		// and key in another workspace is another key.
		putWorkspace(t, s, "ws-a")
		putWorkspace(t, s, "ws-b")
		claim(t, s, key("k1", "h1"))
		r := key("k1", "h2")
		r.WorkspaceID = "ws-b"
		if got := claim(t, s, r); got != nil {
			t.Fatalf("ws-b's claim returned ws-a's row %+v, want a fresh claim", got)
		}
		r.Result = json.RawMessage(`{"ws":"b"}`)
		must(t, s.SaveIdempotencyResult(ctx(t), r), "save ws-b's result")
		a := claim(t, s, key("k1", "h1"))
		b := claim(t, s, r)
		if a == nil || len(a.Result) != 0 || a.InputHash != "h1" || b == nil || !jsonEq(t, b.Result, r.Result) || b.InputHash != "h2" {
			t.Fatalf("rows after both claims: ws-a %+v, ws-b %+v", a, b)
		}
	}},
	{"UnknownWorkspace", func(t *testing.T, s Store) {
		ev := event(1, "ws-a", "t1", "app.deploy", gateway.AuditAllowed)
		_, err := s.Reserve(ctx(t), gateway.Reservation{Event: ev, Claim: key("k1", "h1")})
		wantCode(t, err, gateway.ENotFound, "claim in an unknown workspace")
	}},
	{"SaveWithoutClaim", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		r := key("nope", "h1")
		r.Result = json.RawMessage(`{}`)
		wantCode(t, s.SaveIdempotencyResult(ctx(t), r), gateway.ENotFound, "save of an unclaimed key")
	}},
	{"ReleaseOnlyPending", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		claim(t, s, key("pending", "h1"))
		must(t, s.ReleaseIdempotencyKey(ctx(t), key("pending", "h1")), "release pending")
		if got := claim(t, s, key("pending", "h2")); got != nil {
			t.Errorf("claim after release = %+v, want a fresh claim", got)
		}
		claim(t, s, key("done", "h1"))
		r := key("done", "h1")
		r.Result = json.RawMessage(`{"ok":true}`)
		must(t, s.SaveIdempotencyResult(ctx(t), r), "save")
		must(t, s.ReleaseIdempotencyKey(ctx(t), r), "release done")
		if got := claim(t, s, key("done", "h1")); got == nil || got.Result == nil {
			t.Errorf("a key with a result was released: claim = %+v", got)
		}
		must(t, s.ReleaseIdempotencyKey(ctx(t), key("absent", "h1")), "release of no row")
	}},
	{"ClaimRollsBackWithTheReservation", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		ev := event(1, "ws-a", "t1", "app.deploy", gateway.AuditAllowed)
		full := gateway.Slot{Bucket: "task.deploy", Key: "full", Window: time.Unix(0, 0).UTC(), Limit: 0}
		res, err := s.Reserve(ctx(t), gateway.Reservation{Event: ev, Slots: []gateway.Slot{full}, Claim: key("k1", "h1")})
		must(t, err, "Reserve")
		if res.Full != 1 || res.AuditID != 0 || res.Prior != nil {
			t.Fatalf("Reserve with a full slot = %+v, want slot 1 full", res)
		}
		if got := claim(t, s, key("k1", "h1")); got != nil {
			t.Fatalf("the rolled-back claim survived: %+v", got)
		}
	}},
	{"ConcurrentClaimsOneWinner", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		const n = 20
		var wg sync.WaitGroup
		var won, seen atomic.Int64
		for i := range n {
			wg.Go(func() {
				ev := event(i, "ws-a", "t1", "app.deploy", gateway.AuditAllowed)
				res, err := s.Reserve(ctx(t), gateway.Reservation{Event: ev, Claim: key("k1", "h1")})
				switch {
				case err != nil:
					t.Errorf("reservation %d: %v", i, err)
				case res.Prior != nil:
					seen.Add(1)
				case res.AuditID != 0:
					won.Add(1)
				}
			})
		}
		wg.Wait()
		if won.Load() != 1 || seen.Load() != n-1 {
			t.Fatalf("%d claims won and %d saw the row; want 1 and %d", won.Load(), seen.Load(), n-1)
		}
	}},
	{"CleanupAfterTerminalTasks", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		for id, status := range map[string]string{"done": gateway.TaskCompleted, "failed": gateway.TaskFailed,
			"cancelled": gateway.TaskCancelled, "running": gateway.TaskRunning} {
			must(t, s.PutTask(ctx(t), &gateway.Task{WorkspaceID: "ws-a", ID: id, Status: status}), "PutTask "+id)
			r := key("k", "h")
			r.TaskID = id
			claim(t, s, r)
		}
		unknown := key("k", "h")
		unknown.TaskID = "unknown"
		claim(t, s, unknown)
		n, err := s.DeleteEndedIdempotencyKeys(ctx(t), time.Now().Add(-time.Hour))
		must(t, err, "cleanup an hour ago")
		if n != 0 {
			t.Fatalf("cleanup before the tasks ended deleted %d keys, want 0", n)
		}
		n, err = s.DeleteEndedIdempotencyKeys(ctx(t), time.Now().Add(time.Minute))
		must(t, err, "cleanup now")
		if n != 3 {
			t.Fatalf("cleanup deleted %d keys, want 3 (completed, failed, cancelled)", n)
		}
		for _, id := range []string{"running", "unknown"} {
			r := key("k", "h")
			r.TaskID = id
			if got := claim(t, s, r); got == nil {
				t.Errorf("the key of task %s was deleted", id)
			}
		}
	}},
}
