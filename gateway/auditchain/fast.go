package auditchain

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/canon"
	"github.com/mcpgate/mcpgate/gateway/internal/jsonw"
)

// maxExact is the largest integer RFC 8785 writes as its digits (2^53):
// beyond it a number is written as the nearest double, and canon adds
// its exact value after the text, which canonicalFast leaves to the
// definition.
const maxExact = 1 << 53

// canonicalFast writes Canonical(ev) without building a map: the members
// in their RFC 8785 order (the names are ASCII, so UTF-16 order is byte
// order), strings by the one JSON encoder's canonical dialect, the
// arguments by canon. It reports false, for canonicalByMap to decide,
// when a string is not valid UTF-8, an integer is beyond ±2^53, or the
// arguments are not exact (canon's form then extends past the row's
// text) or have no canonical form.
func canonicalFast(ev *gateway.AuditEvent) ([]byte, bool) {
	var args []byte
	if len(ev.Arguments) > 0 {
		v, err := canon.Decode(ev.Arguments)
		if err != nil {
			return nil, false
		}
		if args, err = canon.Canonical(v); err != nil || bytes.IndexByte(args, '\n') >= 0 {
			return nil, false
		}
	}
	for _, n := range []int64{ev.ID, ev.Seq, ev.LatencyMicros} {
		if n > maxExact || n < -maxExact {
			return nil, false
		}
	}
	b := make([]byte, 0, 512+len(args))
	ok := true
	str := func(name, v string) {
		if !utf8.ValidString(v) {
			ok = false
		}
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		b = jsonw.AppendString(b, v, jsonw.Canonical)
	}
	num := func(name string, n int64) {
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		b = strconv.AppendInt(b, n, 10)
	}
	str("actor", ev.Actor)
	str("approval_id", ev.ApprovalID)
	if args != nil {
		b = append(append(b, `,"arguments":`...), args...)
	}
	str("arguments_hash", ev.ArgumentsHash)
	str("bucket", ev.Bucket)
	str("decision_id", ev.DecisionID)
	str("error_class", ev.ErrorClass)
	num("id", ev.ID)
	str("kind", ev.Kind)
	num("latency_us", ev.LatencyMicros)
	str("mode", ev.Mode)
	b = append(b, `,"open":`...)
	b = strconv.AppendBool(b, ev.Open)
	str("policy_revision", ev.PolicyRevision)
	str("principal_kind", string(ev.PrincipalKind))
	str("profile_id", ev.ProfileID)
	b = append(b, `,"reason_codes":`...)
	if ev.ReasonCodes == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, r := range ev.ReasonCodes {
			if !utf8.ValidString(r) {
				ok = false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonw.AppendString(b, r, jsonw.Canonical)
		}
		b = append(b, ']')
	}
	str("request_id", ev.RequestID)
	num("seq", ev.Seq)
	str("status", ev.Status)
	str("surface", ev.Surface)
	str("task_id", ev.TaskID)
	str("tier", string(ev.Tier))
	str("time", ev.Time.UTC().Format(timeLayout))
	str("token_fingerprint", ev.TokenFP)
	str("tool", ev.Tool)
	if ev.TraceID != "" {
		str("trace_id", ev.TraceID)
	}
	str("workspace_id", ev.WorkspaceID)
	b[0] = '{' // the first member's comma
	return append(b, '}'), ok
}
