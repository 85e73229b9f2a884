// Package auditchain is the tamper-evident chain over the audit trail
// (docs/architecture.md, "The audit chain"): the one canonical form of a
// row (Canonical), which the sealer hashes and the verifier recomputes,
// the link hash = SHA-256(previous hash || RFC 8785 of the row), the
// verifier that names the first row changed, deleted, inserted or
// reordered, and the loop that seals. The stores read and write the
// rows; this package only computes, so that an export can later be
// verified with the same code.
package auditchain

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/canon"
)

// Hash is one link of the chain: SHA-256 of the previous link and the
// row's canonical form.
type Hash [sha256.Size]byte

// Genesis is the "previous hash" of the first row (seq 1): 32 zero bytes.
var Genesis Hash

// String is the lowercase hex form the stores keep.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// ParseHash reads the hex form of a Hash; an error for anything else
// (a stored hash that is not one is a changed row).
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*len(h) {
		return h, fmt.Errorf("hash %q is not %d hex digits", s, 2*len(h))
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("hash %q is not hex: %w", s, err)
	}
	return h, nil
}

// timeLayout is how a row's time enters its canonical form: UTC to the
// microsecond, as both stores keep it.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// Canonical is the one definition of what the chain covers of a row: the
// RFC 8785 form (gateway/canon) of the JSON object whose members are the
// columns id, seq, kind, time (UTC, six fractional digits), request_id,
// decision_id, workspace_id, task_id, profile_id, actor, principal_kind,
// token_fingerprint, tool, tier, status, error_class, reason_codes (the
// list, null when the column holds null), bucket, latency_us,
// arguments_hash, arguments (the JSON value; left out when the column is
// NULL), policy_revision, surface, mode, approval_id, open and trace_id
// (left out when the column is NULL or empty). Every column is covered,
// seq included, so that a row moved to another place no longer links. A
// column added later joins the form only when it is not NULL, so the
// rows sealed before it keep their hashes (trace_id, added after rows
// were sealed, is one). Arguments
// that have no canonical form (canon refuses them, e.g. a number longer
// than canon.MaxNumberLength, which PostgreSQL's jsonb writes out in
// full) enter as their text, member arguments_text: no row may stop the
// sealer.
func Canonical(ev *gateway.AuditEvent) ([]byte, error) {
	if b, ok := canonicalFast(ev); ok {
		return b, nil
	}
	return canonicalByMap(ev)
}

// canonicalByMap is Canonical by its definition: the row as a JSON object
// of Go values, through canon.Canonical. canonicalFast writes the same
// bytes straight from ev; TestCanonicalFastIsTheDefinition holds the two
// together.
func canonicalByMap(ev *gateway.AuditEvent) ([]byte, error) {
	var reasons any
	if ev.ReasonCodes != nil {
		list := make([]any, len(ev.ReasonCodes))
		for i, r := range ev.ReasonCodes {
			list[i] = r
		}
		reasons = list
	}
	row := map[string]any{
		"id":                number(ev.ID),
		"seq":               number(ev.Seq),
		"kind":              ev.Kind,
		"time":              ev.Time.UTC().Format(timeLayout),
		"request_id":        ev.RequestID,
		"decision_id":       ev.DecisionID,
		"workspace_id":      ev.WorkspaceID,
		"task_id":           ev.TaskID,
		"profile_id":        ev.ProfileID,
		"actor":             ev.Actor,
		"principal_kind":    string(ev.PrincipalKind),
		"token_fingerprint": ev.TokenFP,
		"tool":              ev.Tool,
		"tier":              string(ev.Tier),
		"status":            ev.Status,
		"error_class":       ev.ErrorClass,
		"reason_codes":      reasons,
		"bucket":            ev.Bucket,
		"latency_us":        number(ev.LatencyMicros),
		"arguments_hash":    ev.ArgumentsHash,
		"policy_revision":   ev.PolicyRevision,
		"surface":           ev.Surface,
		"mode":              ev.Mode,
		"approval_id":       ev.ApprovalID,
		"open":              ev.Open,
	}
	if ev.TraceID != "" {
		row["trace_id"] = ev.TraceID
	}
	if len(ev.Arguments) > 0 {
		if v, err := canon.Decode(ev.Arguments); err == nil {
			row["arguments"] = v
		} else {
			row["arguments_text"] = string(ev.Arguments)
		}
	}
	return canon.Canonical(row)
}

func number(n int64) json.Number { return json.Number(strconv.FormatInt(n, 10)) }

// Link returns SHA-256(prev || canonical): the hash of the row whose
// canonical form is canonical, after the row whose hash is prev.
func Link(prev Hash, canonical []byte) Hash {
	h := sha256.New()
	h.Write(prev[:])
	h.Write(canonical)
	var out Hash
	h.Sum(out[:0])
	return out
}

// RowHash is Link(prev, Canonical(ev)).
func RowHash(prev Hash, ev *gateway.AuditEvent) (Hash, error) {
	b, err := Canonical(ev)
	if err != nil {
		return Hash{}, fmt.Errorf("audit row %d has no canonical form: %w", ev.ID, err)
	}
	return Link(prev, b), nil
}

// Head is the chain head a store keeps: the last sealed seq and its hash
// (0 and Genesis before the first row is sealed).
type Head struct {
	Seq  int64
	Hash Hash
}

// Report is what a verification of a store's chain found.
type Report struct {
	// Verified is how many rows verified (before Problem, if any).
	Verified int64
	// Head is the chain head the store keeps.
	Head Head
	// Unsealed is how many rows are not sealed yet (not in the chain
	// yet: the newest second's, and the calls still running).
	Unsealed int64
	// Problem is the first place the chain does not verify; nil when it
	// verifies.
	Problem *Problem
}
