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
	suspect    *gateway.AuditEvent
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

// Next is the seq the verifier expects next (one past the last row it
// was given).
func (v *Verifier) Next() int64 { return v.next }

// Verified is how many rows verified before the first problem (all of
// them when there is none).
func (v *Verifier) Verified() int64 { return v.verified }

// Add takes the next sealed row in seq order (ev is not kept; the caller
// may reuse it). It reports whether the verifier needs more rows: false
// once it knows the first problem.
func (v *Verifier) Add(ev *gateway.AuditEvent) bool {
	if v.found != nil {
		return false
	}
	if v.suspect != nil {
		v.diagnose(ev)
		v.next = ev.Seq + 1
		return v.found == nil
	}
	switch {
	case ev.Seq < v.next:
		v.found = &Problem{Seq: ev.Seq, What: Inserted, Detail: fmt.Sprintf("a second row (id %d) has seq %d", ev.ID, ev.Seq)}
	case ev.Seq > v.next:
		v.found = &Problem{Seq: v.next, What: Deleted, Detail: fmt.Sprintf("no row has seq %d; the chain goes on at seq %d", v.next, ev.Seq)}
	}
	if v.found != nil {
		return false
	}
	stored, serr := ParseHash(ev.Hash)
	got, err := RowHash(v.prev, ev)
	if err == nil && serr == nil && got == stored {
		v.prev, v.next, v.verified = stored, v.next+1, v.verified+1
		return true
	}
	s := *ev
	v.suspect, v.suspectH, v.prevAt, v.lastStored = &s, stored, v.prev, stored
	v.next++
	return true
}

// diagnose looks at row ev (seq m), after the suspect row (seq k), to
// tell what happened at k.
func (v *Verifier) diagnose(ev *gateway.AuditEvent) {
	s, k, m := v.suspect, v.suspect.Seq, ev.Seq
	stored, err := ParseHash(ev.Hash)
	defer func() { v.lastStored = stored }()
	if err != nil {
		return
	}
	if m == k+1 && hashes(v.suspectH, ev, m, stored) {
		v.found = &Problem{Seq: k, What: Changed, Detail: fmt.Sprintf("row id %d no longer hashes to its stored hash, which seq %d still links to: its content was changed", s.ID, m)}
		return
	}
	if !hashes(v.prevAt, ev, k, stored) {
		return
	}
	// ev is the row sealed as seq k.
	prevOfM := v.lastStored
	if m == k+1 {
		prevOfM = stored
	}
	switch {
	case hashes(prevOfM, s, m, v.suspectH):
		v.found = &Problem{Seq: k, What: Reordered, Detail: fmt.Sprintf("the rows sealed as seq %d and seq %d swapped places", m, k)}
	case m == k+1:
		v.found = &Problem{Seq: k, What: Inserted, Detail: fmt.Sprintf("row id %d was put in at seq %d; the row sealed as seq %d is now seq %d", s.ID, k, k, m)}
	default:
		v.found = &Problem{Seq: k, What: Reordered, Detail: fmt.Sprintf("the row sealed as seq %d is now at seq %d", k, m)}
	}
}

// hashes reports whether ev, taken as seq seq after prev, hashes to want.
func hashes(prev Hash, ev *gateway.AuditEvent, seq int64, want Hash) bool {
	r := *ev
	r.Seq = seq
	got, err := RowHash(prev, &r)
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
		if s.Seq > head.Seq {
			return past(s.Seq)
		}
		return &Problem{Seq: s.Seq, What: Changed, Detail: fmt.Sprintf("row id %d does not hash to its stored hash: its content or hash was changed", s.ID)}
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
