package storetest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auditchain"
)

// rawDB is how the tamper tests reach a store's tables directly, as
// someone with write access to the database would (both stores have it).
type rawDB interface{ DB() *sqlx.DB }

// openBound is how the tests shorten the time the sealer leaves a row
// open (sqlcore.Core.SetSealOpenAfter, on both stores).
type openBound interface{ SetSealOpenAfter(time.Duration) }

var chainTests = []test{
	{"RecordEventsBesideCalls", testRecordEvents},
	{"SealsFinishedRowsInIDOrder", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		for i := range 3 {
			must(t, s.RecordAudit(ctx(t), event(i, "ws-a", "t1", "app.list", gateway.AuditDenied)), "record")
		}
		running := event(3, "ws-a", "t1", "app.get", gateway.AuditAllowed)
		res, err := s.Reserve(ctx(t), gateway.Reservation{Event: running})
		must(t, err, "reserve")
		running.ID = res.AuditID
		must(t, s.RecordAudit(ctx(t), event(4, "ws-a", "t1", "app.list", gateway.AuditDenied)), "record")
		if n, err := s.SealAudit(ctx(t)); err != nil || n != 4 {
			t.Fatalf("SealAudit = %d, %v; want the 4 finished rows sealed, the running call's left open", n, err)
		}
		list, err := s.ListAuditEvents(ctx(t), gateway.AuditFilter{WorkspaceID: "ws-a"})
		must(t, err, "list")
		prev := auditchain.Genesis
		seq := int64(0)
		for i := len(list) - 1; i >= 0; i-- { // oldest first: id order
			ev := list[i]
			if ev.ID == running.ID {
				if !ev.Open || ev.Seq != 0 || ev.Hash != "" {
					t.Errorf("the running call's row: open %v seq %d hash %q; want open, not sealed", ev.Open, ev.Seq, ev.Hash)
				}
				continue
			}
			seq++
			want, err := auditchain.RowHash(prev, &ev)
			must(t, err, "RowHash")
			if ev.Seq != seq || ev.Hash != want.String() || ev.Kind != gateway.AuditKindToolCall || ev.Actor != "u1" {
				t.Errorf("row id %d: seq %d hash %s kind %q actor %q; want seq %d hash %s, tool_call, u1", ev.ID, ev.Seq, ev.Hash, ev.Kind, ev.Actor, seq, want)
			}
			prev = want
		}
		wantReport(t, s, 4, 1)
		running.Status, running.LatencyMicros = gateway.AuditError, 77
		must(t, s.FinishAudit(ctx(t), running), "finish")
		if n, err := s.SealAudit(ctx(t)); err != nil || n != 1 {
			t.Fatalf("SealAudit after the finish = %d, %v; want 1", n, err)
		}
		list, err = s.ListAuditEvents(ctx(t), gateway.AuditFilter{WorkspaceID: "ws-a", Status: gateway.AuditError})
		must(t, err, "list")
		if len(list) != 1 || list[0].Seq != 5 || list[0].Open || list[0].LatencyMicros != 77 {
			t.Fatalf("the finished call's row: %+v; want seq 5, closed, its final latency", list)
		}
		wantReport(t, s, 5, 0)
		wantCode(t, s.FinishAudit(ctx(t), running), gateway.ENotFound, "finishing a sealed row")
		if n, err := s.SealAudit(ctx(t)); err != nil || n != 0 {
			t.Errorf("SealAudit with nothing to seal = %d, %v; want 0", n, err)
		}
	}},
	{"SealsAnOpenRowAfterTheBound", func(t *testing.T, s Store) {
		ob, ok := s.(openBound)
		if !ok {
			t.Skip("the store cannot shorten the sealer's bound")
		}
		ob.SetSealOpenAfter(time.Nanosecond)
		putWorkspace(t, s, "ws-a")
		ev := event(1, "ws-a", "t1", "app.get", gateway.AuditAllowed)
		res, err := s.Reserve(ctx(t), gateway.Reservation{Event: ev})
		must(t, err, "reserve")
		if n, err := s.SealAudit(ctx(t)); err != nil || n != 0 {
			t.Fatalf("first round = %d, %v; want 0: a row seen open for the first time is left open", n, err)
		}
		if n, err := s.SealAudit(ctx(t)); err != nil || n != 1 {
			t.Fatalf("second round = %d, %v; want the row open past the bound sealed as it is", n, err)
		}
		ev.ID, ev.Status = res.AuditID, gateway.AuditError
		wantCode(t, s.FinishAudit(ctx(t), ev), gateway.ENotFound, "a late finish of a row sealed open")
		list, err := s.ListAuditEvents(ctx(t), gateway.AuditFilter{WorkspaceID: "ws-a"})
		must(t, err, "list")
		if len(list) != 1 || !list[0].Open || list[0].Seq != 1 || list[0].Status != gateway.AuditAllowed {
			t.Fatalf("row sealed open: %+v; want seq 1, open, the reservation's status", list)
		}
		wantReport(t, s, 1, 0)
	}},
	{"ListFiltersByKindAndActor", func(t *testing.T, s Store) {
		for i, actor := range []string{"u1", "u2", "u1"} {
			ev := event(i, "ws-a", "t1", "app.list", gateway.AuditAllowed)
			ev.Actor = actor
			must(t, s.RecordAudit(ctx(t), ev), "record")
		}
		for _, tc := range []struct {
			f    gateway.AuditFilter
			want int
		}{
			{gateway.AuditFilter{Actor: "u1"}, 2},
			{gateway.AuditFilter{Actor: "u2", Kind: gateway.AuditKindToolCall}, 1},
			{gateway.AuditFilter{Kind: gateway.AuditKindToolCall}, 3},
			{gateway.AuditFilter{Kind: "auth"}, 0},
		} {
			list, err := s.ListAuditEvents(ctx(t), tc.f)
			must(t, err, "list")
			if len(list) != tc.want {
				t.Errorf("filter %+v: %d events, want %d", tc.f, len(list), tc.want)
			}
		}
		wantCode(t, s.RecordAudit(ctx(t), &gateway.AuditEvent{Kind: "nonsense"}), gateway.EInvalid, "an unknown kind")
	}},
	{"CheckpointsSignTheHead", testCheckpoints},
	{"PruneKeepsTheAnchor", testPrune},
	// Calls keep coming while two sealers (two replicas) run rounds: the
	// chain ends with every row, seq 1..n without a hole, and verifies.
	{"ConcurrentSealersAndCalls", func(t *testing.T, s Store) {
		const n = 200
		var wg sync.WaitGroup
		done := make(chan struct{})
		for range 2 {
			wg.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					if _, err := s.SealAudit(ctx(t)); err != nil {
						t.Errorf("SealAudit: %v", err)
						return
					}
				}
			})
		}
		recordMany(t, s, n, "ws-c")
		close(done)
		wg.Wait()
		for {
			k, err := s.SealAudit(ctx(t))
			must(t, err, "final round")
			if k == 0 {
				break
			}
		}
		wantReport(t, s, n, 0)
	}},
}

// wantReport verifies s's chain and wants it whole, with verified rows
// and unsealed ones not yet.
func wantReport(t *testing.T, s Store, verified, unsealed int64) {
	t.Helper()
	rep, err := s.VerifyAuditChain(ctx(t))
	must(t, err, "VerifyAuditChain")
	if rep.Problem != nil || rep.Verified != verified || rep.Unsealed != unsealed || rep.Head.Seq != verified {
		t.Fatalf("verify: %+v (problem %v); want %d verified to the head, %d unsealed, no problem", rep, rep.Problem, verified, unsealed)
	}
}

// forgedHash is the hash a forged seal carries.
const forgedHash = "ab00000000000000000000000000000000000000000000000000000000000000"

// insertAt5 forges a row in at seq 5: the seals from 5 on move one up.
var insertAt5 = []string{
	`UPDATE audit_seals SET seq = -seq WHERE seq >= 5`,
	`UPDATE audit_seals SET seq = 1 - seq WHERE seq < 0`,
	`INSERT INTO audit_events (tool, status, open) VALUES ('app.deploy', 'allowed', ?)`,
	`DELETE FROM audit_unsealed`,
	`INSERT INTO audit_seals (seq, id, hash) SELECT 5, max(id), '` + forgedHash + `' FROM audit_events`,
}

// sealed is the SQL of the id of the row sealed as seq.
func sealed(seq int) string { return fmt.Sprintf("(SELECT id FROM audit_seals WHERE seq = %d)", seq) }

// execAll runs the tamper statements sqls on db directly; a ? in one is
// open = false, a boolean of the driver's.
func execAll(t *testing.T, db *sqlx.DB, sqls []string) {
	t.Helper()
	for _, q := range sqls {
		var args []any
		if strings.Contains(q, "?") {
			args = append(args, false)
		}
		if _, err := db.ExecContext(ctx(t), db.Rebind(q), args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// tamperRows is how many sealed rows each tamper case starts from.
const tamperRows = 8

// tamperTrace is the trace id of the tamper cases' rows of even seq.
const tamperTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

// Tamper changes a store's tables directly, as someone with write
// access to the database could, in each way the chain must catch (one
// field updated, a row deleted, a row forged at the end or in the middle,
// two rows swapped, the tail deleted), and checks that
// VerifyAuditChain names the exact seq and what happened. newStore
// returns an empty, migrated store that has DB() (both stores).
func Tamper(t *testing.T, newStore func(t *testing.T) Store) {
	const forged = forgedHash
	for _, tc := range []struct {
		name string
		sql  []string
		seq  int64
		what string
	}{
		{"UpdateOneField", []string{`UPDATE audit_events SET status = 'denied' WHERE id = ` + sealed(3)}, 3, auditchain.Changed},
		{"UpdateTheHashToo", []string{
			`UPDATE audit_events SET tool = 'app.deploy' WHERE id = ` + sealed(5),
			`UPDATE audit_seals SET hash = '` + forged + `' WHERE seq = 5`,
		}, 5, auditchain.Changed},
		{"DeleteARow", []string{`DELETE FROM audit_events WHERE id = ` + sealed(4)}, 4, auditchain.Deleted},
		{"DeleteARowAndItsSeal", []string{`DELETE FROM audit_events WHERE id = ` + sealed(4), `DELETE FROM audit_seals WHERE seq = 4`}, 4, auditchain.Deleted},
		{"DeleteTheTail", []string{`DELETE FROM audit_events WHERE id IN (SELECT id FROM audit_seals WHERE seq >= 7)`, `DELETE FROM audit_seals WHERE seq >= 7`}, 7, auditchain.Deleted},
		{"InsertAtTheEnd", []string{
			`INSERT INTO audit_events (tool, status, open) VALUES ('app.deploy', 'allowed', ?)`,
			`DELETE FROM audit_unsealed`,
			`INSERT INTO audit_seals (seq, id, hash) SELECT 9, max(id), '` + forged + `' FROM audit_events`,
		}, 9, auditchain.Inserted},
		{"InsertInTheMiddle", insertAt5, 5, auditchain.Inserted},
		// A row neither sealed nor waiting to be sealed (its
		// audit_unsealed entry deleted, so that no sealer takes it).
		{"InsertWithoutSeq", []string{
			`INSERT INTO audit_events (tool, status, open) VALUES ('app.deploy', 'allowed', ?)`,
			`DELETE FROM audit_unsealed`,
		}, 0, auditchain.Inserted},
		// A row sealed without a trace id (traces off) given one, and a
		// row sealed with one that loses it.
		{"GiveATraceID", []string{`UPDATE audit_events SET trace_id = '` + tamperTrace + `' WHERE id = ` + sealed(3)}, 3, auditchain.Changed},
		{"ClearATraceID", []string{`UPDATE audit_events SET trace_id = NULL WHERE id = ` + sealed(4)}, 4, auditchain.Changed},
		{"SwapTwoRows", []string{
			`UPDATE audit_seals SET seq = -1 WHERE seq = 3`,
			`UPDATE audit_seals SET seq = 3 WHERE seq = 6`,
			`UPDATE audit_seals SET seq = 6 WHERE seq = -1`,
		}, 3, auditchain.Reordered},
		{"SwapNeighbours", []string{
			`UPDATE audit_seals SET seq = -1 WHERE seq = 2`,
			`UPDATE audit_seals SET seq = 2 WHERE seq = 3`,
			`UPDATE audit_seals SET seq = 3 WHERE seq = -1`,
		}, 2, auditchain.Reordered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			db := s.(rawDB).DB()
			for i := range tamperRows {
				ev := event(i, "ws-a", "t1", "app.list", gateway.AuditAllowed)
				ev.Arguments = []byte(fmt.Sprintf(`{"n":%d,"big":12345678901234567890}`, i))
				if i%2 == 1 { // the rows of seq 2, 4, …: written with traces on
					ev.TraceID = tamperTrace
				}
				must(t, s.RecordAudit(ctx(t), ev), "record")
			}
			if n, err := s.SealAudit(ctx(t)); err != nil || n != tamperRows {
				t.Fatalf("SealAudit = %d, %v; want %d", n, err, tamperRows)
			}
			wantReport(t, s, tamperRows, 0)
			execAll(t, db, tc.sql)
			rep, err := s.VerifyAuditChain(ctx(t))
			must(t, err, "VerifyAuditChain")
			if p := rep.Problem; p == nil || p.Seq != tc.seq || p.What != tc.what {
				t.Fatalf("verify after tampering: %v; want %s at seq %d", p, tc.what, tc.seq)
			}
		})
	}
}

// EnvBenchAuditRows names the variable that sets how many rows the audit
// chain's measurements seed (BenchVerify; default 100,000).
const EnvBenchAuditRows = "MCPGATE_BENCH_AUDIT_ROWS"

// BenchAuditRows is EnvBenchAuditRows's value, def when it is unset or
// not a positive integer.
func BenchAuditRows(def int) int {
	if v, err := strconv.Atoi(os.Getenv(EnvBenchAuditRows)); err == nil && v > 0 {
		return v
	}
	return def
}

// SeedSealedChain writes n finished audit rows straight into s's table
// (in statements of 100,000 rows) and seals them all; it logs how fast
// they sealed.
func SeedSealedChain(tb testing.TB, s Store, n int) {
	tb.Helper()
	c := context.Background()
	db := s.(rawDB).DB()
	seed := `INSERT INTO audit_events (time, request_id, workspace_id, task_id, actor, tool, tier, status, reason_codes, latency_us, arguments_hash, open)
SELECT now(), 'req-' || i, 'ws-a', 't1', 'u1', 'app.list', 'read', 'allowed', '["allowlist.match"]', i, 'sha256:' || md5(i::text), false
FROM generate_series(1, ?) i`
	if db.DriverName() != "postgres" {
		seed = `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ?)
INSERT INTO audit_events (time, request_id, workspace_id, task_id, actor, tool, tier, status, reason_codes, latency_us, arguments_hash, open)
SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'req-' || i, 'ws-a', 't1', 'u1', 'app.list', 'read', 'allowed', '["allowlist.match"]', i, 'sha256:' || hex(randomblob(32)), 0
FROM g`
	}
	// In chunks: one statement must end within the store's operation
	// timeout.
	for left := n; left > 0; left -= 100_000 {
		if _, err := db.ExecContext(c, db.Rebind(seed), min(left, 100_000)); err != nil {
			tb.Fatalf("seeding %d rows: %v", n, err)
		}
	}
	start := time.Now()
	sealed := 0
	for {
		k, err := s.SealAudit(c)
		if err != nil {
			tb.Fatal(err)
		}
		if k == 0 {
			break
		}
		sealed += k
	}
	tb.Logf("sealed %d rows in %v (%.0f rows/s)", sealed, time.Since(start), float64(sealed)/time.Since(start).Seconds())
}

// BenchVerify measures VerifyAuditChain over a sealed chain of
// BenchAuditRows(100,000) rows, seeded and sealed before the timer
// starts (SeedSealedChain), and reports rows/s.
func BenchVerify(b *testing.B, s Store) {
	n := BenchAuditRows(100_000)
	SeedSealedChain(b, s, n)
	c := context.Background()
	b.ResetTimer()
	for b.Loop() {
		rep, err := s.VerifyAuditChain(c)
		if err != nil || rep.Problem != nil || rep.Verified != int64(n) {
			b.Fatalf("verify: %+v, %v; want %d rows verified", rep, err, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// testRecordEvents checks store.AuditLog: events of other kinds than
// tool calls are written together (all or none), listed by kind and
// actor beside the calls, and sealed into the same chain.
func testRecordEvents(t *testing.T, s Store) {
	putWorkspace(t, s, "ws-a")
	must(t, s.RecordAudit(ctx(t), event(0, "ws-a", "t1", "app.list", gateway.AuditDenied)), "record a call")
	admin := &gateway.AuditEvent{Kind: "admin", Actor: "ops-token", WorkspaceID: "ws-a", Tool: "profile.update",
		Status: gateway.AuditAllowed, Arguments: json.RawMessage(`{"resource":"ws-a/p1","before":{"tools":["a"]},"after":{"tools":["a","b"]}}`)}
	refused := &gateway.AuditEvent{Kind: "auth", Tool: "auth.refused", Surface: gateway.SurfaceSupaCloud, TokenFP: "fp-9",
		Status: gateway.AuditDenied, ReasonCodes: []string{"token.unknown"}}
	must(t, s.RecordEvents(ctx(t), []*gateway.AuditEvent{admin, refused}), "RecordEvents")
	if admin.ID <= 0 || refused.ID <= admin.ID {
		t.Fatalf("ids %d, %d; want both set, in order", admin.ID, refused.ID)
	}
	bad := []*gateway.AuditEvent{
		{Kind: "token", Actor: "ops-token", Tool: "token.create", Status: gateway.AuditAllowed},
		{Kind: gateway.AuditKindToolCall, Tool: "app.list", Status: gateway.AuditAllowed},
	}
	wantCode(t, s.RecordEvents(ctx(t), bad), gateway.EInvalid, "a tool call through RecordEvents")
	wantCode(t, s.RecordEvents(ctx(t), []*gateway.AuditEvent{{Kind: "nonsense", Status: gateway.AuditAllowed}}), gateway.EInvalid, "an unknown kind")
	for _, tc := range []struct {
		f    gateway.AuditFilter
		want int
	}{
		{gateway.AuditFilter{Kind: "admin", Actor: "ops-token"}, 1},
		{gateway.AuditFilter{Kind: "auth"}, 1},
		{gateway.AuditFilter{Kind: "token"}, 0}, // the refused batch wrote nothing
		{gateway.AuditFilter{}, 3},
	} {
		list, err := s.ListAuditEvents(ctx(t), tc.f)
		must(t, err, "list")
		if len(list) != tc.want {
			t.Errorf("listing %+v: %d rows; want %d", tc.f, len(list), tc.want)
		}
	}
	if n, err := s.SealAudit(ctx(t)); err != nil || n != 3 {
		t.Fatalf("SealAudit = %d, %v; want the call and both events sealed", n, err)
	}
	wantReport(t, s, 3, 0)
	list, err := s.ListAuditEvents(ctx(t), gateway.AuditFilter{Kind: "admin"})
	must(t, err, "list")
	if len(list) != 1 || list[0].Seq != 2 || list[0].Hash == "" || !sameJSON(list[0].Arguments, admin.Arguments) {
		t.Fatalf("the admin event read back as %+v; want seq 2, sealed, its before and after", list)
	}
}

// testCheckpoints checks the checkpoints the sealer's loop writes: one of
// the head, signed, at most one per interval and only when the head
// moved; one per seq however many replicas write it; read back exactly.
func testCheckpoints(t *testing.T, s Store) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	must(t, err, "key")
	pub := key.Public().(ed25519.PublicKey)
	cps := &auditchain.Checkpointer{Store: s, Key: key, Every: time.Minute}
	now := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)
	if wrote, err := cps.Round(ctx(t), now.Add(-time.Hour)); err != nil || wrote {
		t.Fatalf("round on an empty chain: %v, %v; want nothing written", wrote, err)
	}
	sealN := func(n int) {
		t.Helper()
		for i := range n {
			must(t, s.RecordAudit(ctx(t), event(i, "ws-a", "t1", "app.list", gateway.AuditAllowed)), "record")
		}
		if k, err := s.SealAudit(ctx(t)); err != nil || k != n {
			t.Fatalf("SealAudit = %d, %v; want %d", k, err, n)
		}
	}
	sealN(3)
	for i, tc := range []struct {
		at    time.Time
		wrote bool
	}{
		{now, true},
		{now.Add(time.Second), false},     // too soon
		{now.Add(2 * time.Minute), false}, // the head did not move
	} {
		if wrote, err := cps.Round(ctx(t), tc.at); err != nil || wrote != tc.wrote {
			t.Fatalf("round %d: wrote %v, %v; want %v", i, wrote, err, tc.wrote)
		}
	}
	sealN(2)
	if wrote, err := cps.Round(ctx(t), now.Add(3*time.Minute)); err != nil || !wrote {
		t.Fatalf("round after the head moved: %v, %v; want a checkpoint", wrote, err)
	}
	head, err := s.AuditChainHead(ctx(t))
	must(t, err, "head")
	list, err := s.AuditCheckpoints(ctx(t), 0, head.Seq)
	must(t, err, "checkpoints")
	if len(list) != 2 || list[0].Seq != 3 || list[1].Seq != 5 || list[1].Hash != head.Hash || !list[0].Time.Equal(now.Truncate(time.Microsecond)) {
		t.Fatalf("checkpoints %+v; want seq 3 at %v and seq 5 at the head %s", list, now, head.Hash)
	}
	rows, err := s.SealedAuditRows(ctx(t), 2, 10)
	must(t, err, "sealed rows")
	if len(rows) != 3 || rows[0].Seq != 3 || rows[0].Hash != list[0].Hash.String() {
		t.Fatalf("sealed rows after seq 2: %d, first %+v; want seq 3..5, seq 3's hash the checkpoint's", len(rows), rows)
	}
	for _, cp := range list {
		if err := cp.CheckSignature(pub); err != nil {
			t.Errorf("checkpoint read back: %v", err)
		}
	}
	if latest, ok, err := s.LatestAuditCheckpoint(ctx(t), now.Add(time.Minute)); err != nil || !ok || latest.Seq != 3 {
		t.Errorf("latest checkpoint before now+1m: %+v, %v, %v; want seq 3", latest, ok, err)
	}
	if _, ok, err := s.LatestAuditCheckpoint(ctx(t), now.Add(-time.Second)); err != nil || ok {
		t.Errorf("a checkpoint before the first: %v, %v; want none", ok, err)
	}
	again := list[1]
	again.Time = again.Time.Add(time.Hour)
	if added, err := s.AddAuditCheckpoint(ctx(t), again); err != nil || added {
		t.Errorf("a second checkpoint of seq 5 (another replica's): %v, %v; want the first kept", added, err)
	}
	unsigned := &auditchain.Checkpointer{Store: s}
	sealN(1)
	if wrote, err := unsigned.Round(ctx(t), now.Add(5*time.Minute)); err != nil || !wrote {
		t.Fatalf("unsigned round: %v, %v", wrote, err)
	}
	list, err = s.AuditCheckpoints(ctx(t), 5, 6)
	must(t, err, "checkpoints")
	if len(list) != 1 || list[0].KeyID != "" || list[0].Signature != nil || list[0].CheckSignature(pub) == nil {
		t.Fatalf("unsigned checkpoint %+v; want no key id, no signature, refused by a public key", list)
	}
}

// ExportTamper changes a store's tables directly, as Tamper does, on a
// chain with a signed checkpoint at seq 5 of 8, and checks that both
// VerifyAuditChain and the offline verification of an export
// (auditchain.Export, auditchain.VerifyExport with the public key) name
// the exact seq: one field updated, a row deleted, a row forged in, two
// rows swapped, the tail cut off after the checkpoint, and the tail cut
// through it with the head moved back. An export checked with another
// public key is refused at the checkpoint. newStore returns an empty,
// migrated store that has DB() (both stores).
func ExportTamper(t *testing.T, newStore func(t *testing.T) Store) {
	for _, tc := range []struct {
		name       string
		sql        []string
		seq        int64
		what, says string // says: in the export's problem
	}{
		{"Whole", nil, 0, "", ""},
		{"UpdateOneField", []string{`UPDATE audit_events SET status = 'denied' WHERE id = ` + sealed(3)}, 3, auditchain.Changed, "content was changed"},
		{"DeleteARow", []string{`DELETE FROM audit_events WHERE id = ` + sealed(4), `DELETE FROM audit_seals WHERE seq = 4`}, 4, auditchain.Deleted, ""},
		{"InsertInTheMiddle", insertAt5, 5, auditchain.Inserted, ""},
		{"SwapTwoRows", []string{
			`UPDATE audit_seals SET seq = -1 WHERE seq = 3`,
			`UPDATE audit_seals SET seq = 3 WHERE seq = 6`,
			`UPDATE audit_seals SET seq = 6 WHERE seq = -1`,
		}, 3, auditchain.Reordered, "swapped"},
		{"TruncateAfterTheCheckpoint", []string{
			`DELETE FROM audit_events WHERE id IN (SELECT id FROM audit_seals WHERE seq >= 7)`, `DELETE FROM audit_seals WHERE seq >= 7`,
		}, 7, auditchain.Deleted, "rows after were deleted"},
		{"TruncateThroughTheCheckpointAndMoveTheHead", []string{
			`DELETE FROM audit_events WHERE id IN (SELECT id FROM audit_seals WHERE seq >= 4)`, `DELETE FROM audit_seals WHERE seq >= 4`,
			`UPDATE audit_chain SET seq = 3, hash = (SELECT hash FROM audit_seals WHERE seq = 3)`,
		}, 4, auditchain.Deleted, "checkpoint seq 5 vouches for rows the export lacks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			db := s.(rawDB).DB()
			_, key, err := ed25519.GenerateKey(rand.Reader)
			must(t, err, "key")
			pub := key.Public().(ed25519.PublicKey)
			at := time.Now().Add(-time.Hour)
			for i := range 8 {
				ev := event(i, "ws-a", "t1", "app.list", gateway.AuditAllowed)
				ev.Arguments = []byte(fmt.Sprintf(`{"n":%d,"big":12345678901234567890}`, i))
				must(t, s.RecordAudit(ctx(t), ev), "record")
				if i == 4 {
					if n, err := s.SealAudit(ctx(t)); err != nil || n != 5 {
						t.Fatalf("SealAudit = %d, %v; want 5", n, err)
					}
					cps := &auditchain.Checkpointer{Store: s, Key: key}
					if wrote, err := cps.Round(ctx(t), at); err != nil || !wrote {
						t.Fatalf("checkpoint: %v, %v", wrote, err)
					}
				}
			}
			if n, err := s.SealAudit(ctx(t)); err != nil || n != 3 {
				t.Fatalf("SealAudit = %d, %v; want 3", n, err)
			}
			execAll(t, db, tc.sql)
			rep, err := s.VerifyAuditChain(ctx(t))
			must(t, err, "VerifyAuditChain")
			var buf strings.Builder
			must(t, auditchain.Export(ctx(t), s, time.Time{}, &buf), "Export")
			ex, err := auditchain.VerifyExport(strings.NewReader(buf.String()), pub)
			must(t, err, "VerifyExport")
			if tc.what == "" {
				if rep.Problem != nil || ex.Problem != nil || ex.Verified != 8 || ex.Signed != 1 || ex.LastCheckpoint != 5 {
					t.Fatalf("whole chain: store %v, export %+v (%v)", rep.Problem, ex, ex.Problem)
				}
				// From a time after the checkpoint: anchored at it.
				buf.Reset()
				must(t, auditchain.Export(ctx(t), s, at.Add(time.Second), &buf), "Export since")
				ex, err := auditchain.VerifyExport(strings.NewReader(buf.String()), pub)
				if err != nil || ex.Problem != nil || ex.From.Seq != 5 || ex.Verified != 3 {
					t.Fatalf("export since the checkpoint: %+v (%v), %v; want seq 6 to 8 from the checkpoint", ex, ex.Problem, err)
				}
				_, other, _ := ed25519.GenerateKey(rand.Reader)
				ex, err = auditchain.VerifyExport(strings.NewReader(buf.String()), other.Public().(ed25519.PublicKey))
				if err != nil || ex.Problem == nil || ex.Problem.What != auditchain.BadCheckpoint || ex.Problem.Seq != 5 {
					t.Fatalf("another public key: %v, %v; want the checkpoint at seq 5 refused", ex.Problem, err)
				}
				return
			}
			if p := rep.Problem; p == nil || p.Seq != tc.seq || p.What != tc.what {
				t.Errorf("store verify after tampering: %v; want %s at seq %d", p, tc.what, tc.seq)
			}
			if p := ex.Problem; p == nil || p.Seq != tc.seq || p.What != tc.what || !strings.Contains(p.Detail, tc.says) {
				t.Errorf("export verify after tampering: %v; want %s at seq %d saying %q", p, tc.what, tc.seq, tc.says)
			}
		})
	}
}

// testPrune checks retention: PruneAudit deletes whole ranges up to the
// last checkpoint old enough, keeps that checkpoint, and the store's
// verify and an export's offline verify still pass from it; without the
// anchor the pruned rows are named deleted.
func testPrune(t *testing.T, s Store) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	must(t, err, "key")
	pub := key.Public().(ed25519.PublicKey)
	t0 := time.Now().Add(-72 * time.Hour).UTC().Truncate(time.Microsecond)
	cps := &auditchain.Checkpointer{Store: s, Key: key}
	for i, n := range []int{5, 3, 2} {
		for j := range n {
			must(t, s.RecordAudit(ctx(t), event(j, "ws-a", "t1", "app.list", gateway.AuditAllowed)), "record")
		}
		if k, err := s.SealAudit(ctx(t)); err != nil || k != n {
			t.Fatalf("SealAudit = %d, %v; want %d", k, err, n)
		}
		if i < 2 {
			if ok, err := cps.Round(ctx(t), t0.Add(time.Duration(i)*time.Hour)); err != nil || !ok {
				t.Fatalf("checkpoint %d: %v, %v", i, ok, err)
			}
		}
	}
	if anchor, n, err := s.PruneAudit(ctx(t), t0.Add(-time.Minute)); err != nil || anchor != 0 || n != 0 {
		t.Fatalf("prune before any checkpoint: %d, %d, %v; want nothing", anchor, n, err)
	}
	check := func(from, verified int64) {
		t.Helper()
		rep, err := s.VerifyAuditChain(ctx(t))
		if err != nil || rep.Problem != nil || rep.Verified != verified || rep.Head.Seq != 10 {
			t.Fatalf("verify after the prune: %+v (%v), %v; want seq %d to 10 verified", rep, rep.Problem, err, from+1)
		}
		var buf strings.Builder
		must(t, auditchain.Export(ctx(t), s, time.Time{}, &buf), "export")
		ex, err := auditchain.VerifyExport(strings.NewReader(buf.String()), pub)
		if err != nil || ex.Problem != nil || ex.From.Seq != from || ex.Verified != verified || ex.Head.Seq != 10 {
			t.Fatalf("export after the prune: %+v (%v), %v; want seq %d to 10 from the anchor", ex, ex.Problem, err, from+1)
		}
	}
	for _, tc := range []struct {
		before                time.Time
		anchor, deleted, left int64
	}{
		{t0.Add(time.Minute), 5, 5, 5},
		{t0.Add(2 * time.Hour), 8, 3, 2},
		{t0.Add(3 * time.Hour), 8, 0, 2},
	} {
		anchor, n, err := s.PruneAudit(ctx(t), tc.before)
		if err != nil || anchor != tc.anchor || n != tc.deleted {
			t.Fatalf("prune before %v: anchor %d, %d deleted, %v; want %d, %d", tc.before, anchor, n, err, tc.anchor, tc.deleted)
		}
		check(tc.anchor, tc.left)
		list, err := s.AuditCheckpoints(ctx(t), 0, 10)
		must(t, err, "checkpoints")
		if len(list) == 0 || list[0].Seq != tc.anchor || list[len(list)-1].Seq != 8 {
			t.Fatalf("checkpoints after the prune: %+v; want the anchor, seq %d, first, none before it", list, tc.anchor)
		}
	}
	// Without its anchor the pruned rows are named deleted.
	_, err = s.(rawDB).DB().ExecContext(ctx(t), `DELETE FROM audit_checkpoints`)
	must(t, err, "delete the anchor")
	rep, err := s.VerifyAuditChain(ctx(t))
	must(t, err, "verify")
	if p := rep.Problem; p == nil || p.Seq != 1 || p.What != auditchain.Deleted {
		t.Fatalf("verify without the anchor: %v; want deleted at seq 1", p)
	}
}
