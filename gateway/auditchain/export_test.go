package auditchain

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// exportOf writes rows as an export with a signed checkpoint after every
// seq in cps, starting from the anchor from (nil: the first row), and
// returns its lines.
func exportOf(t *testing.T, rows []gateway.AuditEvent, head Head, key ed25519.PrivateKey, from *Checkpoint, cps ...int64) []string {
	t.Helper()
	var buf bytes.Buffer
	x := NewExportWriter(&buf, from, time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC))
	for i := range rows {
		ev := &rows[i]
		if from != nil && ev.Seq <= from.Seq {
			continue
		}
		if err := x.Row(ev); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(cps, ev.Seq) {
			h, _ := ParseHash(ev.Hash)
			cp := Checkpoint{Seq: ev.Seq, Hash: h, Time: ev.Time}
			cp.Sign(key)
			if err := x.Checkpoint(cp); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := x.End(head); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

// lineOf returns the index of the line of type typ and seq seq.
func lineOf(t *testing.T, lines []string, typ string, seq int64) int {
	t.Helper()
	for i, l := range lines {
		var m exportLine
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if m.Type == typ && m.Seq == seq {
			return i
		}
	}
	t.Fatalf("no %s line of seq %d", typ, seq)
	return -1
}

// edit changes the members of one line.
func edit(t *testing.T, line string, f func(m map[string]json.RawMessage)) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func verifyLines(t *testing.T, lines []string, pub ed25519.PublicKey) ExportReport {
	t.Helper()
	rep, err := VerifyExport(strings.NewReader(strings.Join(lines, "\n")+"\n"), pub)
	if err != nil {
		t.Fatalf("VerifyExport: %v", err)
	}
	return rep
}

// An export verifies offline, and each way of tampering with it is named
// at its exact seq: a field changed, a row deleted, a row forged in, two
// rows swapped, the tail cut off, the chain rewritten with recomputed
// hashes, a checkpoint changed or signed by another key.
func TestVerifyExport(t *testing.T) {
	key, other := newKey(t), newKey(t)
	pub := key.Public().(ed25519.PublicKey)
	rows, head := chain(t, 12)
	rows[4].Arguments = json.RawMessage(`{"n":9007199254740993,"s":"<&>"}`) // an inexact number: the exact member
	prev := Genesis
	for i := range rows {
		h, err := RowHash(prev, &rows[i])
		if err != nil {
			t.Fatal(err)
		}
		rows[i].Hash, prev = h.String(), h
	}
	head.Hash = prev
	whole := exportOf(t, rows, head, key, nil, 4, 8)
	if !strings.Contains(whole[lineOf(t, whole, LineRow, 5)], `"exact":{"/arguments/n":`) {
		t.Fatalf("row 5 has no exact member: %s", whole[lineOf(t, whole, LineRow, 5)])
	}
	rep := verifyLines(t, whole, pub)
	if rep.Problem != nil || rep.Verified != 12 || rep.Head != head || rep.Checkpoints != 2 || rep.Signed != 2 || rep.LastCheckpoint != 8 {
		t.Fatalf("whole export: %+v (problem %v)", rep, rep.Problem)
	}
	if rep := verifyLines(t, whole, nil); rep.Problem != nil || rep.Signed != 0 {
		t.Fatalf("whole export without a key: %+v (problem %v)", rep, rep.Problem)
	}
	recomputed := func(lines []string, from int) []string {
		// Rewrite row from's status and recompute every hash after it,
		// as someone without the key would.
		out := slices.Clone(lines)
		var prev Hash
		for i, l := range out {
			var m exportLine
			_ = json.Unmarshal([]byte(l), &m)
			if m.Type != LineRow {
				continue
			}
			if m.Seq == int64(from) {
				m.Row = bytes.Replace(m.Row, []byte(`"status":"allowed"`), []byte(`"status":"denied"`), 1)
			}
			if m.Seq >= int64(from) {
				text := m.Row
				if len(m.Exact) > 0 {
					text = append(append(slices.Clone(text), '\n'), m.Exact...)
				}
				m.Prev, m.Hash = prev.String(), Link(prev, text).String()
				b, _ := json.Marshal(m)
				out[i] = string(b)
			}
			prev, _ = ParseHash(m.Hash)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		tamper func(l []string) []string
		pub    ed25519.PublicKey
		seq    int64
		what   string
		says   string
	}{
		{"field changed", func(l []string) []string {
			i := lineOf(t, l, LineRow, 3)
			l[i] = strings.Replace(l[i], `"status":"allowed"`, `"status":"denied"`, 1)
			return l
		}, pub, 3, Changed, "content was changed"},
		{"exact value changed", func(l []string) []string {
			i := lineOf(t, l, LineRow, 5)
			l[i] = strings.Replace(l[i], `0.9007199254740993e16`, `0.9007199254740995e16`, 1)
			return l
		}, pub, 5, Changed, ""},
		{"seq member changed", func(l []string) []string {
			i := lineOf(t, l, LineRow, 6)
			l[i] = strings.Replace(l[i], `"seq":6,"status"`, `"seq":60,"status"`, 1)
			return l
		}, pub, 6, Changed, ""},
		{"row deleted", func(l []string) []string {
			return slices.Delete(l, lineOf(t, l, LineRow, 6), lineOf(t, l, LineRow, 6)+1)
		}, pub, 6, Deleted, ""},
		{"forged row inserted", func(l []string) []string {
			i := lineOf(t, l, LineRow, 6)
			forged := edit(t, l[i], func(m map[string]json.RawMessage) {
				m["hash"] = json.RawMessage(`"` + strings.Repeat("ab", 32) + `"`)
			})
			for j := i; j < len(l); j++ {
				l[j] = edit(t, l[j], func(m map[string]json.RawMessage) {
					if string(m["type"]) == `"row"` {
						var s int64
						_ = json.Unmarshal(m["seq"], &s)
						m["seq"] = json.RawMessage(fmt.Sprint(s + 1))
					}
				})
			}
			return slices.Insert(l, i, forged)
		}, pub, 6, Inserted, ""},
		{"two rows swapped", func(l []string) []string {
			a, b := lineOf(t, l, LineRow, 3), lineOf(t, l, LineRow, 6)
			l[a], l[b] = edit(t, l[b], func(m map[string]json.RawMessage) { m["seq"] = json.RawMessage("3") }),
				edit(t, l[a], func(m map[string]json.RawMessage) { m["seq"] = json.RawMessage("6") })
			return l
		}, pub, 3, Reordered, "swapped places"},
		{"tail after the last checkpoint cut off", func(l []string) []string { return l[:lineOf(t, l, LineRow, 9)] }, pub, 9, Deleted, "tail after checkpoint seq 8 is missing"},
		{"tail cut off, end line kept", func(l []string) []string {
			return append(l[:lineOf(t, l, LineRow, 11)], l[len(l)-1])
		}, pub, 11, Deleted, "rows after were deleted"},
		{"tail cut through a checkpoint", func(l []string) []string { return l[:lineOf(t, l, LineRow, 7)] }, pub, 7, Deleted, "tail after checkpoint seq 4 is missing"},
		{"rows before a checkpoint gone", func(l []string) []string {
			return slices.Delete(l, lineOf(t, l, LineRow, 7), lineOf(t, l, LineCheckpoint, 8))
		}, pub, 7, Deleted, ""},
		{"row past the head", func(l []string) []string {
			forged := edit(t, l[lineOf(t, l, LineRow, 12)], func(m map[string]json.RawMessage) { m["seq"] = json.RawMessage("13") })
			return slices.Insert(l, len(l)-1, forged)
		}, pub, 13, Inserted, ""},
		{"chain rewritten with its hashes", func(l []string) []string { return recomputed(l, 2) }, pub, 4, BadCheckpoint, "rewritten"},
		{"checkpoint changed", func(l []string) []string {
			i := lineOf(t, l, LineCheckpoint, 8)
			l[i] = edit(t, l[i], func(m map[string]json.RawMessage) { m["time"] = json.RawMessage(`"2030-01-01T00:00:00.000000Z"`) })
			return l
		}, pub, 8, BadCheckpoint, "does not verify"},
		{"another public key", func(l []string) []string { return l }, other.Public().(ed25519.PublicKey), 4, BadCheckpoint, "not by the given public key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := verifyLines(t, tc.tamper(slices.Clone(whole)), tc.pub)
			p := rep.Problem
			if p == nil || p.Seq != tc.seq || p.What != tc.what || !strings.Contains(p.Detail, tc.says) {
				t.Fatalf("got %v; want %s at seq %d saying %q", p, tc.what, tc.seq, tc.says)
			}
		})
	}
	// Without the key, a rewritten chain is still caught by the
	// checkpoints' hashes, though not by their signatures.
	if rep := verifyLines(t, recomputed(whole, 2), nil); rep.Problem == nil || rep.Problem.What != BadCheckpoint {
		t.Errorf("rewritten chain without a key: %v", rep.Problem)
	}
}

// An export from a checkpoint verifies from its signed anchor; one whose
// start line claims an anchor no checkpoint vouches for is refused.
func TestVerifyExportFromACheckpoint(t *testing.T) {
	key := newKey(t)
	pub := key.Public().(ed25519.PublicKey)
	rows, head := chain(t, 10)
	h4, _ := ParseHash(rows[3].Hash)
	anchor := Checkpoint{Seq: 4, Hash: h4, Time: rows[3].Time}
	anchor.Sign(key)
	lines := exportOf(t, rows, head, key, &anchor, 8)
	rep := verifyLines(t, lines, pub)
	if rep.Problem != nil || rep.From.Seq != 4 || rep.Verified != 6 || rep.Checkpoints != 2 {
		t.Fatalf("export from seq 4: %+v (problem %v)", rep, rep.Problem)
	}
	unanchored := slices.Delete(slices.Clone(lines), 1, 2)
	if rep := verifyLines(t, unanchored, pub); rep.Problem == nil || rep.Problem.What != BadCheckpoint || rep.Problem.Seq != 5 {
		t.Fatalf("no anchor checkpoint: %v; want refused at seq 5", rep.Problem)
	}
	for name, in := range map[string]string{
		"empty":      "",
		"not JSON":   "hello\n",
		"no start":   lines[2] + "\n",
		"other type": lines[0] + "\n" + `{"type":"nonsense"}` + "\n",
	} {
		if _, err := VerifyExport(strings.NewReader(in), pub); err == nil {
			t.Errorf("%s: verified; want an error", name)
		}
	}
}
