package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/canon"
	"github.com/mcpgate/mcpgate/gateway/confirm"
)

// finish settles the call's audit row, the only write of it besides the
// reservation: a call the reservation recorded (Event.ID set) gets its
// final status and latency (FinishAudit); any other call, refused or
// answered before dispatch, is inserted now (RecordAudit). A refused call
// over its principal's refusal bucket gets no row at all (refusalAudited).
// It returns the call's reply: Result, or err.
//
// A failure to write the row is logged and the reply stands, except for a
// confirmation request (status confirmation_required), whose token is
// only handed out once its row is written (fail closed).
func (pl *Pipeline) finish(ctx context.Context, c *Call, err error) (*gateway.ToolResult, error) {
	ev := c.Event
	if c.overRefusals || err != nil && ev.ID == 0 && !c.refusalTaken && !pl.refusalAudited(c) {
		return nil, refusalLimited(err)
	}
	ev.LatencyMicros = pl.now().Sub(c.start).Microseconds()
	if err != nil {
		ev.Status, ev.ErrorClass = statusOf(err)
		var ge *gateway.Error
		if errors.As(err, &ge) {
			// The row may already hold codes (a denial's, or an allowed
			// decision's notices such as profile.deleted); add the
			// error's own, once each.
			for _, code := range reasonCodes(ge.Reasons) {
				if !slices.Contains(ev.ReasonCodes, code) {
					ev.ReasonCodes = append(ev.ReasonCodes, code)
				}
			}
		}
		if errors.As(err, &ge) && ge.Bucket != "" {
			ev.Bucket = ge.Bucket
		}
	}
	// The row is written even when the client has gone, and within a
	// deadline: a store that does not answer must not hold the reply. A
	// call not yet recorded has what is left of its store deadline (so a
	// refusal because the store did not answer comes within storeTimeout,
	// not twice that); a recorded call gets a new one.
	wctx, cancel := context.WithoutCancel(ctx), context.CancelFunc(nil)
	if ev.ID != 0 {
		wctx, cancel = context.WithTimeout(wctx, storeTimeout)
	} else {
		wctx, cancel = context.WithDeadline(wctx, c.storeDeadline)
	}
	defer cancel()
	var werr error
	if ev.ID != 0 {
		werr = pl.Store.FinishAudit(wctx, ev)
	} else {
		werr = pl.Store.RecordAudit(wctx, ev)
	}
	if werr != nil {
		pl.log().Error("audit row not written", zap.String("tool", ev.Tool), zap.String("status", ev.Status), zap.Error(werr))
		if err == nil && ev.Status == gateway.AuditConfirmationRequired {
			err = gateway.Wrap(gateway.EInternal, werr, "the audit store could not record this call, so no confirmation token was issued; retry when the store is back")
			ev.Status, ev.ErrorClass = statusOf(err)
		}
	}
	pl.observer().ObserveCall(ev)
	if err != nil {
		return nil, err
	}
	return c.Result, nil
}

// refusalAudited takes a token of the principal's refusal bucket for a
// call refused before it had an audit row. Without one the call gets no
// row (the store write is what the bucket bounds): it is observed as
// rate_limited in bucket principal.refusals, and a warning at most every
// 10 s per principal says how many refusals went unaudited.
func (pl *Pipeline) refusalAudited(c *Call) bool {
	if pl.Refusals == nil {
		return true
	}
	p, ev := c.Principal, c.Event
	key := p.WorkspaceID + "\x00" + p.TaskID + "\x00" + p.Subject + "\x00" + p.TokenFingerprint
	ok, warn := pl.Refusals.take(key, pl.now())
	if ok {
		return true
	}
	ev.Status, ev.ErrorClass, ev.Bucket = gateway.AuditRateLimited, string(gateway.ERateLimited), RefusalBucket
	ev.LatencyMicros = pl.now().Sub(c.start).Microseconds()
	pl.observer().ObserveCall(ev)
	if warn > 0 {
		pl.log().Warn("refused calls of one principal not audited: over MCPGATE_REFUSED_CALLS_PER_SECOND",
			zap.String("workspace_id", ev.WorkspaceID), zap.String("task_id", ev.TaskID), zap.String("actor", ev.Actor),
			zap.Int64("unaudited", warn), zap.String("last_tool", ev.Tool))
	}
	return false
}

// refusalLimited is the reply to a refused call over its principal's
// refusal bucket: a rate limit (bucket principal.refusals) that
// still says why the call itself was refused.
func refusalLimited(err error) error {
	return &gateway.Error{Code: gateway.ERateLimited, Bucket: RefusalBucket, Err: err,
		Message: "Rate limit exceeded for refused calls of this session; slow down and fix the refused calls (this one: " +
			gateway.ErrorMessageOf(err) + ")"}
}

func statusOf(err error) (status, class string) {
	code := gateway.ErrorCodeOf(err)
	if errors.Is(err, errHidden) { // answered as unknown, but the policy refused it
		return gateway.AuditDenied, string(gateway.EForbidden)
	}
	switch code {
	case gateway.EForbidden:
		return gateway.AuditDenied, code.Class()
	case gateway.ERateLimited:
		return gateway.AuditRateLimited, string(code)
	default:
		return gateway.AuditError, string(code)
	}
}

func reasonCodes(rs []gateway.Reason) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Code)
	}
	return out
}

// argumentsHash is the audit row's arguments_hash: canon.Hash of the
// arguments the row logs (all but the confirmation token), the one hash
// that also binds a confirmation token and an idempotency key
// (confirm.InputHash, which also leaves out idempotency_key). Arguments
// that could not be decoded (call.ArgumentsErr) have no canonical form;
// the row of such a call, always refused, hashes the bytes as sent.
func argumentsHash(call *gateway.CallRequest) string {
	if call.ArgumentsErr == nil {
		if h, err := canon.Hash(withoutToken(call.Arguments)); err == nil {
			return h
		}
	}
	sum := sha256.Sum256(call.RawArguments)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// withoutToken returns args without the confirmation token, args itself
// when it has none.
func withoutToken(args map[string]any) map[string]any {
	if _, ok := args[confirm.ArgToken]; !ok {
		return args
	}
	out := make(map[string]any, len(args)-1)
	for k, v := range args {
		if k != confirm.ArgToken {
			out[k] = v
		}
	}
	return out
}

// maxToolName is the longest tool name the gateway repeats: the MCP
// specification (2025-11-25, Tools, "Tool names") says names SHOULD be 1 to
// 128 characters. A longer name cannot be in the catalog; it is refused,
// and the audit row, the log and the error quote only its start, so that a
// client cannot fill the audit store with one huge name per call.
const maxToolName = 128

// clip returns s cut to at most n bytes at a rune boundary, marked with
// "…" when it was cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// auditText is a client- or token-supplied string (tool name, workspace,
// task, profile, actor) as the audit row, the log and the metrics carry it.
// Printable Unicode, which every catalog name and every sane id is, is kept
// as it is. Anything else (newlines, ANSI escapes, NUL, invalid UTF-8) is
// quoted with Go's escapes (strconv.QuoteToGraphic), so that the value
// cannot forge log lines or recolour a terminal that shows a raw dump,
// PostgreSQL (which refuses NUL in text) can store it, and two different
// values never end as the same text (a printable value that starts with a
// double quote is quoted too, so it cannot pass for a quoted one).
func auditText(s string) string {
	if utf8.ValidString(s) && !strings.HasPrefix(s, `"`) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) }) {
		return s
	}
	return strconv.QuoteToGraphic(s)
}

// toolText is auditText of the tool name clipped to maxToolName.
func toolText(name string) string { return auditText(clip(name, maxToolName)) }

// loggableArguments returns the arguments to store when argument logging is
// on: never the deploy confirmation token (a credential: audit rows hold no
// secrets or tokens), and nothing when the JSON holds a NUL character,
// which PostgreSQL's jsonb refuses (the hash still identifies the call).
func loggableArguments(args map[string]any, raw json.RawMessage) json.RawMessage {
	if bytes.Contains(raw, []byte(`\u0000`)) {
		return nil
	}
	if _, ok := args[confirm.ArgToken]; !ok {
		return raw
	}
	out, err := canon.WithoutMembers(raw, confirm.ArgToken)
	if err != nil {
		return nil
	}
	return out
}
