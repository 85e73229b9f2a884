package auditchain

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/canon"
)

// ExportFormat names the export's format in its start line.
const ExportFormat = "mcpgate-audit-export/1"

// The line types of an export (docs/operations.md, "Exporting the audit
// trail"): one JSON object per line, in this order: start, then the
// anchor's checkpoint when the export does not start at the first row,
// then the rows in seq order, each checkpoint right after the row of its
// seq, and end.
const (
	LineStart      = "start"
	LineCheckpoint = "checkpoint"
	LineRow        = "row"
	LineEnd        = "end"
)

// exportLine is every line type's members; each type uses some.
type exportLine struct {
	Type   string `json:"type"`
	Format string `json:"format,omitempty"`
	Seq    int64  `json:"seq"`
	Prev   string `json:"prev,omitempty"`
	Hash   string `json:"hash"`
	// Row is the row's canonical form as hashed (Canonical) when it is
	// one JSON object; Exact the object of exact values that follows it
	// after a newline when the row holds a number RFC 8785 cannot write
	// exactly (see gateway/canon).
	Row   json.RawMessage `json:"row,omitempty"`
	Exact json.RawMessage `json:"exact,omitempty"`
	// Time, KeyID and Signature are a checkpoint's; Time is also when
	// the export started (start).
	Time      string `json:"time,omitempty"`
	KeyID     string `json:"key_id,omitempty"`
	Signature string `json:"signature,omitempty"`
}

// ExportWriter writes an export: NewExportWriter writes the start line,
// Row and Checkpoint the lines of the chain in seq order, End the head
// and flushes. The first error stops it and every later call returns it.
type ExportWriter struct {
	w    *bufio.Writer
	enc  *json.Encoder
	prev Hash
	err  error
}

// NewExportWriter starts an export to w from the row after from: from is
// Head{} (the first row, after Genesis) or an anchoring checkpoint, which
// it writes after the start line so that the export can be verified from
// its signature. now is when the export started.
func NewExportWriter(w io.Writer, from *Checkpoint, now time.Time) *ExportWriter {
	bw := bufio.NewWriterSize(w, 64<<10)
	x := &ExportWriter{w: bw, enc: json.NewEncoder(bw)}
	x.enc.SetEscapeHTML(false)
	start := exportLine{Type: LineStart, Format: ExportFormat, Hash: Genesis.String(), Time: now.UTC().Format(timeLayout)}
	if from != nil {
		start.Seq, start.Hash, x.prev = from.Seq, from.Hash.String(), from.Hash
	}
	x.line(&start)
	if from != nil {
		x.Checkpoint(*from)
	}
	return x
}

func (x *ExportWriter) line(l *exportLine) {
	if x.err == nil {
		x.err = x.enc.Encode(l)
	}
}

// Row writes a sealed row (ev.Seq and ev.Hash set) with the hash before
// it and its canonical form.
func (x *ExportWriter) Row(ev *gateway.AuditEvent) error {
	if x.err != nil {
		return x.err
	}
	b, err := Canonical(ev)
	if err != nil {
		x.err = fmt.Errorf("audit row %d (seq %d) has no canonical form: %w", ev.ID, ev.Seq, err)
		return x.err
	}
	row, exact, _ := bytes.Cut(b, []byte{'\n'})
	x.line(&exportLine{Type: LineRow, Seq: ev.Seq, Prev: x.prev.String(), Hash: ev.Hash, Row: row, Exact: exact})
	if h, err := ParseHash(ev.Hash); err == nil {
		x.prev = h
	}
	return x.err
}

// Checkpoint writes cp.
func (x *ExportWriter) Checkpoint(cp Checkpoint) error {
	x.line(&exportLine{Type: LineCheckpoint, Seq: cp.Seq, Hash: cp.Hash.String(), Time: cp.Time.UTC().Format(timeLayout),
		KeyID: cp.KeyID, Signature: cp.SignatureText()})
	return x.err
}

// End writes the chain head the export ends at and flushes.
func (x *ExportWriter) End(head Head) error {
	x.line(&exportLine{Type: LineEnd, Seq: head.Seq, Hash: head.Hash.String()})
	if x.err == nil {
		x.err = x.w.Flush()
	}
	return x.err
}

// ExportSource is what Export reads of a store (store.AuditChain).
type ExportSource interface {
	AuditChainHead(ctx context.Context) (Head, error)
	LatestAuditCheckpoint(ctx context.Context, before time.Time) (Checkpoint, bool, error)
	// SealedAuditRows returns at most limit sealed rows after seq after,
	// in seq order, with Seq and Hash.
	SealedAuditRows(ctx context.Context, after int64, limit int) ([]gateway.AuditEvent, error)
	// AuditCheckpoints returns the checkpoints with after < Seq <=
	// through, in seq order.
	AuditCheckpoints(ctx context.Context, after, through int64) ([]Checkpoint, error)
}

// exportPage is how many sealed rows Export reads per call.
const exportPage = 5000

// Export writes to out the export of store's sealed rows from the last
// checkpoint at or before since (the first row when since is zero or no
// checkpoint is that old) to the chain head it reads first, with the
// checkpoints among them (ExportWriter). It does not verify: a changed
// row is written as it now is, for VerifyExport to name.
func Export(ctx context.Context, store ExportSource, since time.Time, out io.Writer) error {
	head, err := store.AuditChainHead(ctx)
	if err != nil {
		return err
	}
	var from *Checkpoint
	if !since.IsZero() {
		cp, ok, err := store.LatestAuditCheckpoint(ctx, since)
		if err != nil {
			return err
		}
		if ok {
			from = &cp
		}
	}
	if from == nil {
		if from, err = pruneAnchor(ctx, store, head); err != nil {
			return err
		}
	}
	x := NewExportWriter(out, from, time.Now())
	after := int64(0)
	if from != nil {
		after = from.Seq
	}
	for after < head.Seq {
		rows, err := store.SealedAuditRows(ctx, after, exportPage)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break // rows deleted under the head: the export shows it, verify names it
		}
		last := min(rows[len(rows)-1].Seq, head.Seq)
		cps, err := store.AuditCheckpoints(ctx, after, last)
		if err != nil {
			return err
		}
		for i := range rows {
			ev := &rows[i]
			if ev.Seq > head.Seq {
				break
			}
			if err := x.Row(ev); err != nil {
				return err
			}
			for len(cps) > 0 && cps[0].Seq <= ev.Seq {
				if err := x.Checkpoint(cps[0]); err != nil {
					return err
				}
				cps = cps[1:]
			}
		}
		after = last
	}
	// Checkpoints past the last row exported vouch for rows that are
	// gone (the tail deleted, the head moved back): VerifyExport names
	// them.
	cps, err := store.AuditCheckpoints(ctx, after, math.MaxInt64)
	if err != nil {
		return err
	}
	for _, cp := range cps {
		if err := x.Checkpoint(cp); err != nil {
			return err
		}
	}
	return x.End(head)
}

// pruneAnchor is the checkpoint an export from the first row starts at
// when the rows before the first sealed one were pruned: the checkpoint
// of the seq before it (every sealed row pruned: the last checkpoint);
// nil when the rows start at seq 1 or no checkpoint anchors them (then
// VerifyExport names the rows from seq 1 as deleted).
func pruneAnchor(ctx context.Context, store ExportSource, head Head) (*Checkpoint, error) {
	first, err := store.SealedAuditRows(ctx, 0, 1)
	if err != nil || head.Seq == 0 || (len(first) == 1 && first[0].Seq <= 1) {
		return nil, err
	}
	var cps []Checkpoint
	if len(first) == 1 {
		cps, err = store.AuditCheckpoints(ctx, first[0].Seq-2, first[0].Seq-1)
	} else {
		cps, err = store.AuditCheckpoints(ctx, head.Seq-1, head.Seq)
	}
	if err != nil || len(cps) == 0 {
		return nil, err
	}
	return &cps[0], nil
}

// exportRow is a row line as a Row: position is the line's seq, text the
// canonical form as hashed.
type exportRow struct {
	seq  int64
	hash string
	text []byte
}

func (r *exportRow) Position() int64    { return r.seq }
func (r *exportRow) StoredHash() string { return r.hash }
func (r *exportRow) Keep() Row          { return r }

func (r *exportRow) RowID() int64 {
	var id struct{ ID int64 }
	main, _, _ := bytes.Cut(r.text, []byte{'\n'})
	_ = json.Unmarshal(main, &id)
	return id.ID
}

// HashAs hashes the text as written at the line's own seq, and with its
// seq member replaced for another (how the Verifier tells a moved row).
func (r *exportRow) HashAs(prev Hash, seq int64) (Hash, error) {
	if seq == r.seq {
		return Link(prev, r.text), nil
	}
	main, exact, hasExact := bytes.Cut(r.text, []byte{'\n'})
	v, err := canon.Decode(main)
	if err != nil {
		return Hash{}, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Hash{}, errors.New("the row is not a JSON object")
	}
	m["seq"] = json.Number(strconv.FormatInt(seq, 10))
	b, err := canon.Canonical(m)
	if err != nil {
		return Hash{}, err
	}
	if hasExact {
		b = append(append(b, '\n'), exact...)
	}
	return Link(prev, b), nil
}

// ExportReport is what a verification of an export found.
type ExportReport struct {
	// From is where the export starts: the anchor checkpoint's seq and
	// hash (0 and Genesis from the first row).
	From Head
	// Verified is how many rows verified (before Problem, if any).
	Verified int64
	// Head is the chain head the end line names.
	Head Head
	// Checkpoints is how many checkpoints the export holds, Signed how
	// many of them had their signature checked (all, with a public key).
	Checkpoints, Signed int
	// LastCheckpoint is the seq of the last checkpoint (0 with none):
	// the rows after it verify by their hashes only.
	LastCheckpoint int64
	// Problem is the first place the export does not verify; nil when it
	// verifies.
	Problem *Problem
}

// BadCheckpoint is Problem.What for a checkpoint that does not hold: a
// signature refused, or a hash the recomputed chain does not reach.
const BadCheckpoint = "checkpoint refused"

// maxExportLine bounds one line of an export (a row with large
// arguments).
const maxExportLine = 64 << 20

// VerifyExport reads an export from r and verifies it offline: the chain
// recomputed from the start line's anchor (which, past the first row,
// must be a checkpoint right after it), every checkpoint's hash against
// the recomputed chain and, with pub, its Ed25519 signature (an unsigned
// checkpoint is refused then), and the end line against the last row. It
// names the first row changed, deleted, inserted or reordered, or the
// first checkpoint refused, in ExportReport.Problem. A missing end line
// is a cut-off tail. The error is for input that is not an export at all
// (not JSON lines, unknown line types, no start line).
func VerifyExport(r io.Reader, pub ed25519.PublicKey) (ExportReport, error) {
	var rep ExportReport
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxExportLine)
	var v *Verifier
	ended, anchored := false, false
	n := 0
	for sc.Scan() {
		n++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l exportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return rep, fmt.Errorf("line %d is not a JSON object of an export: %w", n, err)
		}
		if v == nil && l.Type != LineStart {
			return rep, fmt.Errorf("line %d: an export starts with a %q line (%s); this one is %q", n, LineStart, ExportFormat, l.Type)
		}
		if ended {
			return rep, fmt.Errorf("line %d: a %q line after the end line", n, l.Type)
		}
		switch l.Type {
		case LineStart:
			if v != nil {
				return rep, fmt.Errorf("line %d: a second start line", n)
			}
			if l.Format != ExportFormat {
				return rep, fmt.Errorf("line %d: format %q, this verifier reads %s", n, l.Format, ExportFormat)
			}
			h, err := ParseHash(l.Hash)
			if err != nil {
				return rep, fmt.Errorf("line %d: start: %w", n, err)
			}
			rep.From = Head{Seq: l.Seq, Hash: h}
			v, anchored = NewVerifierAt(rep.From), l.Seq == 0
		case LineRow:
			if !anchored {
				rep.Problem = unanchored(rep.From)
				return rep, nil
			}
			text := []byte(l.Row)
			if len(l.Exact) > 0 {
				text = append(append(text, '\n'), l.Exact...)
			}
			if !v.AddRow(&exportRow{seq: l.Seq, hash: l.Hash, text: text}) {
				rep.Verified, rep.Problem = v.Verified(), v.found
				return rep, nil
			}
		case LineCheckpoint:
			cp, err := exportCheckpoint(&l)
			if err != nil {
				return rep, fmt.Errorf("line %d: %w", n, err)
			}
			if p := checkCheckpoint(&rep, v, &cp, pub); p != nil {
				rep.Problem, rep.Verified = p, v.Verified()
				return rep, nil
			}
			anchored = true
		case LineEnd:
			h, err := ParseHash(l.Hash)
			if err != nil {
				return rep, fmt.Errorf("line %d: end: %w", n, err)
			}
			rep.Head, ended = Head{Seq: l.Seq, Hash: h}, true
		default:
			return rep, fmt.Errorf("line %d: unknown line type %q", n, l.Type)
		}
	}
	if err := sc.Err(); err != nil {
		return rep, fmt.Errorf("reading the export: %w", err)
	}
	if v == nil {
		return rep, fmt.Errorf("the export is empty: no %q line", LineStart)
	}
	if !anchored {
		rep.Problem = unanchored(rep.From)
		return rep, nil
	}
	if !ended {
		last := v.Last().Seq
		rep.Verified = v.Verified()
		if v.suspect != nil {
			rep.Problem = v.End(Head{Seq: v.Next() - 1})
			return rep, nil
		}
		rep.Problem = &Problem{Seq: last + 1, What: Deleted, Detail: fmt.Sprintf(
			"the export has no end line: it was cut off after seq %d, and the tail after checkpoint seq %d is missing", last, rep.LastCheckpoint)}
		return rep, nil
	}
	rep.Verified, rep.Problem = v.Verified(), v.End(rep.Head)
	return rep, nil
}

func unanchored(from Head) *Problem {
	return &Problem{Seq: from.Seq + 1, What: BadCheckpoint, Detail: fmt.Sprintf(
		"the export starts after seq %d but no checkpoint of seq %d follows its start line, so nothing vouches for the hash it starts from", from.Seq, from.Seq)}
}

// exportCheckpoint reads a checkpoint line.
func exportCheckpoint(l *exportLine) (Checkpoint, error) {
	cp := Checkpoint{Seq: l.Seq, KeyID: l.KeyID}
	h, err := ParseHash(l.Hash)
	if err != nil {
		return cp, fmt.Errorf("checkpoint at seq %d: %w", l.Seq, err)
	}
	cp.Hash = h
	if cp.Time, err = time.Parse(time.RFC3339Nano, l.Time); err != nil {
		return cp, fmt.Errorf("checkpoint at seq %d: time: %w", l.Seq, err)
	}
	return cp, cp.ParseSignature(l.Signature)
}

// checkCheckpoint checks cp against the chain recomputed so far (v's
// last verified seq must be cp's, with its hash) and, with pub, its
// signature; it counts it in rep.
func checkCheckpoint(rep *ExportReport, v *Verifier, cp *Checkpoint, pub ed25519.PublicKey) *Problem {
	rep.Checkpoints++
	rep.LastCheckpoint = cp.Seq
	if pub != nil {
		if err := cp.CheckSignature(pub); err != nil {
			return &Problem{Seq: cp.Seq, What: BadCheckpoint, Detail: err.Error()}
		}
		rep.Signed++
	}
	if v.suspect != nil {
		return nil // a row before it did not verify: the rows tell what happened
	}
	last := v.Last()
	switch {
	case cp.Seq > last.Seq:
		return &Problem{Seq: last.Seq + 1, What: Deleted, Detail: fmt.Sprintf(
			"checkpoint seq %d vouches for rows the export lacks: the rows after seq %d are missing", cp.Seq, last.Seq)}
	case cp.Seq < last.Seq:
		return &Problem{Seq: cp.Seq, What: BadCheckpoint, Detail: fmt.Sprintf(
			"checkpoint seq %d comes after the row of seq %d; an export puts it right after its own row", cp.Seq, last.Seq)}
	case cp.Hash != last.Hash:
		return &Problem{Seq: cp.Seq, What: BadCheckpoint, Detail: fmt.Sprintf(
			"checkpoint seq %d vouches for hash %s, the recomputed chain reaches %s: rows up to seq %d were rewritten and their hashes recomputed", cp.Seq, cp.Hash, last.Hash, cp.Seq)}
	}
	return nil
}
