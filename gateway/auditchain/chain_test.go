package auditchain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// row returns a populated row number i, sealed as seq i.
func row(i int) gateway.AuditEvent {
	return gateway.AuditEvent{ID: int64(100 + i), Seq: int64(i), Kind: gateway.AuditKindToolCall,
		Time:      time.Date(2026, 1, 2, 3, 4, 5, 6000*i, time.UTC),
		RequestID: fmt.Sprintf("req-%d", i), DecisionID: "d", WorkspaceID: "ws-a", TaskID: "t1", ProfileID: "p1",
		Actor: "u1", PrincipalKind: gateway.PrincipalAgent, Tool: "app.list", Tier: gateway.TierRead,
		Status: gateway.AuditAllowed, ReasonCodes: []string{"allowlist.match"}, LatencyMicros: int64(i * 7),
		ArgumentsHash: "sha256:ab", Surface: gateway.SurfaceSupaCloud}
}

// The format every sealed row depends on: changing it breaks every chain
// sealed before, so it is spelled out here.
func TestCanonicalForm(t *testing.T) {
	ev := row(1)
	ev.Arguments = json.RawMessage(`{"z": 1.0, "a": "é\u2028<"}`)
	got, err := Canonical(&ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"actor":"u1","approval_id":"","arguments":{"a":"é` + "\u2028" + `<","z":1},"arguments_hash":"sha256:ab","bucket":"",` +
		`"decision_id":"d","error_class":"","id":101,"kind":"tool_call","latency_us":7,"mode":"","open":false,` +
		`"policy_revision":"","principal_kind":"agent","profile_id":"p1","reason_codes":["allowlist.match"],` +
		`"request_id":"req-1","seq":1,"status":"allowed","surface":"supacloud","task_id":"t1","tier":"read",` +
		`"time":"2026-01-02T03:04:05.000006Z","token_fingerprint":"","tool":"app.list","workspace_id":"ws-a"}`
	if string(got) != want {
		t.Fatalf("canonical row\n got %s\nwant %s", got, want)
	}
	h, err := RowHash(Genesis, &ev)
	if err != nil {
		t.Fatal(err)
	}
	sum := Link(Genesis, []byte(want))
	if h != sum || len(h.String()) != 64 {
		t.Fatalf("RowHash %s, want SHA-256(32 zero bytes || form) %s", h, sum)
	}
}

// trace_id joined the form after rows were sealed: a row without one has
// the form (and so the hash) it had before, byte for byte
// (TestCanonicalForm's want); a row with one has the member, in its
// RFC 8785 place between tool and workspace_id, so that changing it, or
// giving one to a row sealed without, breaks the link.
func TestCanonicalTraceID(t *testing.T) {
	ev := row(1)
	before, err := Canonical(&ev)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(before, []byte("trace_id")) {
		t.Fatalf("a row without a trace id has a trace_id member: %s", before)
	}
	ev.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	got, err := Canonical(&ev)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Replace(before, []byte(`"tool":"app.list",`), []byte(`"tool":"app.list","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736",`), 1)
	if !bytes.Equal(got, want) {
		t.Fatalf("canonical row with a trace id\n got %s\nwant %s", got, want)
	}
	plain, traced := row(1), ev
	hPlain, _ := RowHash(Genesis, &plain)
	hTraced, _ := RowHash(Genesis, &traced)
	if hPlain == hTraced {
		t.Fatal("a trace id does not change the row's hash")
	}
}

// canonicalFast writes exactly what the definition writes, or declines.
func TestCanonicalFastIsTheDefinition(t *testing.T) {
	cases := map[string]func(ev *gateway.AuditEvent){
		"plain":           func(*gateway.AuditEvent) {},
		"no reason codes": func(ev *gateway.AuditEvent) { ev.ReasonCodes = nil },
		"empty reasons":   func(ev *gateway.AuditEvent) { ev.ReasonCodes = []string{} },
		"escapes":         func(ev *gateway.AuditEvent) { ev.Tool = "a\"b\\c\n\x01\u2028 ü 😀" },
		"open":            func(ev *gateway.AuditEvent) { ev.Open = true },
		"trace id":        func(ev *gateway.AuditEvent) { ev.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736" },
		"nested arguments": func(ev *gateway.AuditEvent) {
			ev.Arguments = json.RawMessage(`{"b":[1,2.50,{"y":null,"x":true}],"a":-0}`)
		},
		"inexact argument": func(ev *gateway.AuditEvent) { ev.Arguments = json.RawMessage(`{"n":9007199254740993}`) },
		"no canonical form": func(ev *gateway.AuditEvent) {
			ev.Arguments = json.RawMessage(`{"n":1` + string(bytes.Repeat([]byte("0"), 200)) + `}`)
		},
		"invalid UTF-8": func(ev *gateway.AuditEvent) { ev.Actor = "a\xffb" },
		"huge latency":  func(ev *gateway.AuditEvent) { ev.LatencyMicros = 1 << 60 },
		"negative":      func(ev *gateway.AuditEvent) { ev.LatencyMicros = -5 },
	}
	fastTook := 0
	for name, change := range cases {
		ev := row(3)
		change(&ev)
		def, err := canonicalByMap(&ev)
		if err != nil {
			t.Fatalf("%s: definition: %v", name, err)
		}
		got, err := Canonical(&ev)
		if err != nil || !bytes.Equal(got, def) {
			t.Errorf("%s: Canonical\n got %s (%v)\nwant %s", name, got, err, def)
		}
		if fast, ok := canonicalFast(&ev); ok {
			fastTook++
			if !bytes.Equal(fast, def) {
				t.Errorf("%s: fast path\n got %s\nwant %s", name, fast, def)
			}
		}
	}
	if fastTook < 6 {
		t.Errorf("the fast path took %d of the cases; it should take every plain one", fastTook)
	}
}

// chain returns n rows sealed in order (seq 1..n) and the head.
func chain(t *testing.T, n int) ([]gateway.AuditEvent, Head) {
	t.Helper()
	rows := make([]gateway.AuditEvent, n)
	prev := Genesis
	for i := range rows {
		rows[i] = row(i + 1)
		h, err := RowHash(prev, &rows[i])
		if err != nil {
			t.Fatal(err)
		}
		rows[i].Hash, prev = h.String(), h
	}
	return rows, Head{Seq: int64(n), Hash: prev}
}

func verify(rows []gateway.AuditEvent, head Head) (*Problem, int64) {
	v := NewVerifier()
	for i := range rows {
		if !v.Add(&rows[i]) {
			break
		}
	}
	return v.End(head), v.Verified()
}

func TestVerifier(t *testing.T) {
	forged := row(50)
	forged.Hash = "ab" + string(bytes.Repeat([]byte("0"), 62))
	for _, tc := range []struct {
		name   string
		tamper func(rows []gateway.AuditEvent, head *Head) []gateway.AuditEvent
		seq    int64
		what   string
	}{
		{"whole", func(r []gateway.AuditEvent, _ *Head) []gateway.AuditEvent { return r }, 0, ""},
		{"field changed", func(r []gateway.AuditEvent, _ *Head) []gateway.AuditEvent { r[3].Status = "denied"; return r }, 4, Changed},
		{"last row changed", func(r []gateway.AuditEvent, _ *Head) []gateway.AuditEvent { r[9].Actor = "x"; return r }, 10, Changed},
		{"hash not hex", func(r []gateway.AuditEvent, _ *Head) []gateway.AuditEvent { r[2].Hash = "zz"; return r }, 3, Changed},
		{"row deleted", func(r []gateway.AuditEvent, _ *Head) []gateway.AuditEvent { return slices.Delete(r, 4, 5) }, 5, Deleted},
		{"tail deleted", func(r []gateway.AuditEvent, _ *Head) []gateway.AuditEvent { return r[:7] }, 8, Deleted},
		{"appended", func(r []gateway.AuditEvent, _ *Head) []gateway.AuditEvent {
			f := forged
			f.Seq = 11
			return append(r, f)
		}, 11, Inserted},
		{"inserted with a shift", func(r []gateway.AuditEvent, _ *Head) []gateway.AuditEvent {
			f := forged
			f.Seq = 6
			for i := 5; i < len(r); i++ {
				r[i].Seq++
			}
			return slices.Insert(r, 5, f)
		}, 6, Inserted},
		{"two swapped", func(r []gateway.AuditEvent, _ *Head) []gateway.AuditEvent {
			r[2], r[6] = r[6], r[2]
			r[2].Seq, r[6].Seq = 3, 7
			return r
		}, 3, Reordered},
		{"neighbours swapped", func(r []gateway.AuditEvent, _ *Head) []gateway.AuditEvent {
			r[4], r[5] = r[5], r[4]
			r[4].Seq, r[5].Seq = 5, 6
			return r
		}, 5, Reordered},
		{"duplicate seq", func(r []gateway.AuditEvent, _ *Head) []gateway.AuditEvent {
			f := forged
			f.Seq = 4
			return slices.Insert(r, 4, f)
		}, 4, Inserted},
		{"head moved", func(r []gateway.AuditEvent, h *Head) []gateway.AuditEvent { h.Hash[0] ^= 1; return r }, 10, Changed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, head := chain(t, 10)
			rows = tc.tamper(rows, &head)
			p, n := verify(rows, head)
			if tc.what == "" {
				if p != nil || n != 10 {
					t.Fatalf("whole chain: %v, %d verified", p, n)
				}
				return
			}
			if p == nil || p.Seq != tc.seq || p.What != tc.what {
				t.Fatalf("got %v; want %s at seq %d", p, tc.what, tc.seq)
			}
			if p.Error() == "" || p.Detail == "" {
				t.Fatalf("problem without words: %#v", p)
			}
		})
	}
}

type countingSealer struct {
	rounds atomic.Int64
	fail   error
}

func (s *countingSealer) SealAudit(context.Context) (int, error) {
	s.rounds.Add(1)
	return 0, s.fail
}

func TestLoopRunsUntilCancelled(t *testing.T) {
	s := &countingSealer{fail: errors.New("database away")}
	ctx, cancel := context.WithCancel(context.Background())
	failed := make(chan error, 100)
	done := make(chan struct{})
	go func() {
		Loop(ctx, s, nil, time.Millisecond, func(err error) {
			select {
			case failed <- err:
			default:
			}
		})
		close(done)
	}()
	if err := <-failed; err != s.fail {
		t.Fatalf("failed round reported %v", err)
	}
	cancel()
	<-done
	n := s.rounds.Load()
	time.Sleep(5 * time.Millisecond)
	if s.rounds.Load() != n || n == 0 {
		t.Fatalf("rounds after the loop returned: %d then %d", n, s.rounds.Load())
	}
}
