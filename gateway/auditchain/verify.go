package auditchain

import (
	"fmt"

	"github.com/mcpgate/mcpgate/gateway"
)

// What a Problem found at its seq.
const (
	Changed   = "changed"
	Deleted   = "deleted"
	Inserted  = "inserted"
	Reordered = "reordered"
)

// Problem is the first place where the chain does not verify: Seq is the
// first seq whose row was changed, deleted, inserted or reordered (What),
// Detail says what was seen and how it was told.
type Problem struct {
	Seq    int64
	What   string
	Detail string
}

func (p *Problem) Error() string {
	if p.Seq == 0 {
		return fmt.Sprintf("audit chain broken: %s (%s)", p.What, p.Detail)
	}
	return fmt.Sprintf("audit chain broken at seq %d: %s (%s)", p.Seq, p.What, p.Detail)
}

// Row is a sealed row as the Verifier reads it: an audit row of a store
// (Verifier.Add) or a row line of an export (ReadExport).
type Row interface {
	// Position is the seq the row is kept at (audit_seals.seq, an export
	// line's seq).
	Position() int64
	// RowID is the audit row's id, for messages.
	RowID() int64
	// StoredHash is the hash kept with the row (hex).
	StoredHash() string
	// HashAs is the row's hash taken as the row of seq seq after prev.
	HashAs(prev Hash, seq int64) (Hash, error)
	// Keep returns a copy that stays valid after the call that gave the
	// row returns.
	Keep() Row
}

// eventRow is a store's audit row as a Row.
type eventRow struct{ ev *gateway.AuditEvent }

func (r eventRow) Position() int64    { return r.ev.Seq }
func (r eventRow) RowID() int64       { return r.ev.ID }
func (r eventRow) StoredHash() string { return r.ev.Hash }
func (r eventRow) Keep() Row          { ev := *r.ev; return eventRow{&ev} }
func (r eventRow) HashAs(prev Hash, seq int64) (Hash, error) {
	if seq == r.ev.Seq {
		return RowHash(prev, r.ev)
	}
	ev := *r.ev
	ev.Seq = seq
	return RowHash(prev, &ev)
}

// Verifier recomputes the chain from rows given in seq order (Add) and
// names the first Problem (End). It keeps O(1) state: after the first
// row that does not verify it reads on only to tell what happened there
// (a row whose content changed still links to the next; a row moved from
// seq k to seq m hashes as seq k after seq k-1; an inserted row pushes
// the row sealed as k to k+1), at most one more hash or two per row.
type Verifier struct {
	next     int64 // the seq the next row should have
	prev     Hash  // the verified hash before next
	verified int64
	// suspect is the first row that did not verify, prevAt the hash
	// before it, lastStored the stored hash of the last row read.
	suspect    Row
	suspectH   Hash
	prevAt     Hash
	lastStored Hash
	found      *Problem
}

// NewVerifier returns a verifier of the chain from its first row (seq 1
// after Genesis).
func NewVerifier() *Verifier {
	return &Verifier{next: 1, prev: Genesis}
}

// NewVerifierAt returns a verifier of the chain from the row after from
// (seq from.Seq+1 after from.Hash): the rows before were pruned or are
// not read, and from is trusted (a checkpoint whose signature verified).
func NewVerifierAt(from Head) *Verifier {
	return &Verifier{next: from.Seq + 1, prev: from.Hash}
}

// Next is the seq the verifier expects next (one past the last row it
// was given).
func (v *Verifier) Next() int64 { return v.next }

// Last is the last seq that verified and its hash (the head the verifier
// started from when none did yet).
func (v *Verifier) Last() Head { return Head{Seq: v.next - 1, Hash: v.prev} }

// Verified is how many rows verified before the first problem (all of
// them when there is none).
func (v *Verifier) Verified() int64 { return v.verified }

// Add takes the next sealed row in seq order (ev is not kept; the caller
// may reuse it). It reports whether the verifier needs more rows: false
// once it knows the first problem.
func (v *Verifier) Add(ev *gateway.AuditEvent) bool { return v.AddRow(eventRow{ev}) }

// AddRow is Add for any Row (r is not kept past the call).
func (v *Verifier) AddRow(r Row) bool {
	if v.found != nil {
		return false
	}
	seq := r.Position()
	if v.suspect != nil {
		v.diagnose(r)
		v.next = seq + 1
		return v.found == nil
	}
	switch {
	case seq < v.next:
		v.found = &Problem{Seq: seq, What: Inserted, Detail: fmt.Sprintf("a second row (id %d) has seq %d", r.RowID(), seq)}
	case seq > v.next:
		v.found = &Problem{Seq: v.next, What: Deleted, Detail: fmt.Sprintf("no row has seq %d; the chain goes on at seq %d", v.next, seq)}
	}
	if v.found != nil {
		return false
	}
	stored, serr := ParseHash(r.StoredHash())
	got, err := r.HashAs(v.prev, seq)
	if err == nil && serr == nil && got == stored {
		v.prev, v.next, v.verified = stored, v.next+1, v.verified+1
		return true
	}
	v.suspect, v.suspectH, v.prevAt, v.lastStored = r.Keep(), stored, v.prev, stored
	v.next++
	return true
}

// diagnose looks at row r (seq m), after the suspect row (seq k), to
// tell what happened at k.
func (v *Verifier) diagnose(r Row) {
	s, k, m := v.suspect, v.suspect.Position(), r.Position()
	stored, err := ParseHash(r.StoredHash())
	defer func() { v.lastStored = stored }()
	if err != nil {
		return
	}
	if m == k+1 && hashes(v.suspectH, r, m, stored) {
		v.found = &Problem{Seq: k, What: Changed, Detail: fmt.Sprintf("row id %d no longer hashes to its stored hash, which seq %d still links to: its content was changed", s.RowID(), m)}
		return
	}
	if !hashes(v.prevAt, r, k, stored) {
		return
	}
	// r is the row sealed as seq k.
	prevOfM := v.lastStored
	if m == k+1 {
		prevOfM = stored
	}
	switch {
	case hashes(prevOfM, s, m, v.suspectH):
		v.found = &Problem{Seq: k, What: Reordered, Detail: fmt.Sprintf("the rows sealed as seq %d and seq %d swapped places", m, k)}
	case m == k+1:
		v.found = &Problem{Seq: k, What: Inserted, Detail: fmt.Sprintf("row id %d was put in at seq %d; the row sealed as seq %d is now seq %d", s.RowID(), k, k, m)}
	default:
		v.found = &Problem{Seq: k, What: Reordered, Detail: fmt.Sprintf("the row sealed as seq %d is now at seq %d", k, m)}
	}
}

// hashes reports whether r, taken as seq seq after prev, hashes to want.
func hashes(prev Hash, r Row, seq int64, want Hash) bool {
	got, err := r.HashAs(prev, seq)
	return err == nil && got == want
}

// End is called after the last row with the chain head the store keeps,
// read after the rows (so that every row sealed before is among them),
// and returns the first problem of the chain: nil when every row verified
// and the last one is the head. A row past the head was inserted.
func (v *Verifier) End(head Head) *Problem {
	past := func(seq int64) *Problem {
		return &Problem{Seq: seq, What: Inserted, Detail: fmt.Sprintf("a row has seq %d, past the chain head (seq %d)", seq, head.Seq)}
	}
	if p := v.found; p != nil {
		if p.Seq > head.Seq {
			return past(p.Seq)
		}
		return p
	}
	if s := v.suspect; s != nil {
		if seq := s.Position(); seq > head.Seq {
			return past(seq)
		}
		return &Problem{Seq: s.Position(), What: Changed, Detail: fmt.Sprintf("row id %d does not hash to its stored hash: its content or hash was changed", s.RowID())}
	}
	last := v.next - 1
	switch {
	case last > head.Seq:
		return past(head.Seq + 1)
	case last < head.Seq:
		return &Problem{Seq: v.next, What: Deleted, Detail: fmt.Sprintf("the chain head is seq %d but the rows end at seq %d: the rows after were deleted", head.Seq, last)}
	case v.prev != head.Hash:
		return &Problem{Seq: last, What: Changed, Detail: fmt.Sprintf("the chain head's hash is not the hash of seq %d: the head or the last rows were changed", last)}
	}
	return nil
}
