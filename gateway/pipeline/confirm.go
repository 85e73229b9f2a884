package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/canon"
	"github.com/mcpgate/mcpgate/gateway/confirm"
	"github.com/mcpgate/mcpgate/tools"
)

// ChangesSummarizer is implemented by adapters that can say what a
// deploy-tier call would change without running it (adapters/demo does).
// The pipeline asks it for the changes_summary of the confirmation step
// (docs/requirements.md#deploy-confirmation, step 1); for other adapters it
// writes a generic summary of the tool and its arguments. Errors are
// returned to the caller as they are (an EInvalid for an unknown app, say).
type ChangesSummarizer interface {
	ChangesSummary(ctx context.Context, call gateway.ToolCall) (string, error)
}

// Reason codes of the confirmation step, in the audit row's reason_codes
// and in error data. Token refusals use confirm's codes
// (confirmation.expired, ...).
const (
	reasonConfirmationRequired = "confirmation.required"
	reasonSecretUnset          = "confirmation.secret_unset"
	reasonReplayed             = "idempotency.replayed"
	reasonKeyReused            = "idempotency.key_reused"
	reasonKeyInProgress        = "idempotency.in_progress"
)

// errKeySeen rolls back a reservation whose idempotency key was already
// claimed: a replay or a refusal then takes no rate-limit slot.
var errKeySeen = gateway.Errorf(gateway.EConflict, "idempotency key already claimed")

// needsConfirmation: the policy's obligation decides; the catalog's flag
// (the same two tools) is a second, fail-closed source, so a policy bundle
// that forgets the obligation cannot turn the confirmation off.
func needsConfirmation(c *Call) bool {
	return c.Decision.Obligations.ConfirmationRequired || c.Tool.Confirmation
}

// confirm runs the two-step confirmation (docs/requirements.md#deploy-confirmation) for an allowed call:
// without confirmation_token it answers with a summary and a token
// (requestConfirmation) and dispatches nothing; with one it verifies the
// token and reserves the call with its idempotency key claimed
// (reserveOnce), so that dispatch runs at most once per key. Without a
// confirmation secret it refuses (fail closed; docs/requirements.md#confirmation-secret).
func (pl *Pipeline) confirm(ctx context.Context, c *Call) error {
	tool, p, args := c.Tool, c.Principal, c.Params.Arguments
	if pl.Confirmer == nil {
		return withReasons(c.Event, errSecretUnset(tool.Name))
	}
	hash, err := confirm.InputHash(args)
	if err != nil {
		return err
	}
	claims := confirm.Claims{WorkspaceID: p.WorkspaceID, TaskID: p.TaskID, Principal: confirm.PrincipalID(p), Tool: tool.Name, InputHash: hash}
	token, _ := args[confirm.ArgToken].(string)
	if token == "" {
		return pl.requestConfirmation(ctx, c, claims)
	}
	if err := pl.Confirmer.Verify(token, claims); err != nil {
		return withReasons(c.Event, err)
	}
	key, _ := args[confirm.ArgIdempotencyKey].(string)
	if key == "" { // the catalog schema requires it too (dependentRequired)
		return gateway.Errorf(gateway.EInvalid, "%s: idempotency_key is required with confirmation_token; pass a new unique key, and the same key when you retry", tool.Name)
	}
	// The key is stored as text; PostgreSQL refuses NUL there, and a
	// control character in a key is a client's mistake, not an outage.
	if strings.ContainsFunc(key, invisible) || !utf8.ValidString(key) {
		return gateway.Errorf(gateway.EInvalid, "%s: idempotency_key must be printable UTF-8 text without control or format characters; use e.g. a UUID", tool.Name)
	}
	// The token is the gateway's own and is not forwarded; the key is, so
	// that a backend may deduplicate too. The other members keep the
	// client's bytes.
	raw, err := rawWithoutToken(c.Params.RawArguments)
	if err != nil {
		return gateway.Wrap(gateway.EInvalid, err, tool.Name+": the arguments are not a JSON object")
	}
	c.Arguments, c.RawArguments = withoutToken(args), raw
	return pl.reserveOnce(ctx, c, &gateway.IdempotencyRecord{WorkspaceID: p.WorkspaceID, TaskID: p.TaskID, Tool: tool.Name, Key: key, InputHash: hash})
}

// rawWithoutToken returns the client's arguments without the confirmation
// token; nil stays nil (a call built in Go).
func rawWithoutToken(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	return canon.WithoutMembers(raw, confirm.ArgToken)
}

// errSecretUnset is the fail-closed refusal without a confirmation secret.
// Class Internal (-32603), not Forbidden: the caller holds the grant and
// can do nothing about it; the gateway is misconfigured, which is what
// the gateway reports as -32603 (Internal), and the wire writer logs it at
// error level for the operator.
func errSecretUnset(tool string) error {
	return &gateway.Error{
		Code: gateway.EInternal,
		Message: fmt.Sprintf("%s needs the deploy confirmation, but SUPACLOUD_MCP_CONFIRMATION_SECRET is not set on this gateway, "+
			"so the call fails closed and nothing was dispatched; ask an operator to set it (at least 32 bytes)", tool),
		Reasons: []gateway.Reason{{Code: reasonSecretUnset, Message: "SUPACLOUD_MCP_CONFIRMATION_SECRET is unset"}},
	}
}

// withReasons adds err's reason codes to the audit row and returns err.
func withReasons(ev *gateway.AuditEvent, err error) error {
	var ge *gateway.Error
	if errors.As(err, &ge) {
		ev.ReasonCodes = append(ev.ReasonCodes, reasonCodes(ge.Reasons)...)
	}
	return err
}

// requestConfirmation is step 1: answer with the summary and a token;
// nothing is dispatched and no rate-limit slot is taken. finish writes the
// audit row (status confirmation_required) and hands the token out only
// once the row is written.
//
// Since step 1 takes no slot, its audit row and token are bounded like a
// refused call's: each takes a token of the principal's refusal bucket
// (refusalAudited) first, and past it the call is answered as rate limited
// (bucket principal.refusals) with no row, no summary and no token.
func (pl *Pipeline) requestConfirmation(ctx context.Context, c *Call, claims confirm.Claims) error {
	if !pl.refusalAudited(c) {
		c.overRefusals = true
		return gateway.Errorf(gateway.ERateLimited,
			"%s was called without confirmation_token (step 1 of the deploy confirmation), which writes an audit row and issues a token without a rate-limit slot, so it counts against the refused-call budget; wait a second and call again", c.Tool.Name)
	}
	c.refusalTaken = true
	summary, err := pl.changesSummary(ctx, c.Principal, c.Tool, confirm.WithoutProtocolArgs(c.Params.Arguments))
	if err != nil {
		return err
	}
	token, expires, err := pl.Confirmer.Issue(claims)
	if err != nil {
		return err
	}
	c.Event.Status = gateway.AuditConfirmationRequired
	c.Event.ReasonCodes = append(c.Event.ReasonCodes, reasonConfirmationRequired)
	res := &gateway.ToolResult{StructuredContent: map[string]any{
		"confirmation_required": true,
		"changes_summary":       summary,
		"confirmation_token":    token,
		"expires_at":            expires.Format(time.RFC3339),
	}}
	applyObligations(res, gateway.Obligations{})
	c.Result, c.Answered = res, true
	return nil
}

func (pl *Pipeline) changesSummary(ctx context.Context, p *gateway.Principal, tool *tools.Tool, args map[string]any) (string, error) {
	if s, ok := pl.Adapter.(ChangesSummarizer); ok {
		return s.ChangesSummary(ctx, gateway.ToolCall{WorkspaceID: p.WorkspaceID, TaskID: p.TaskID, Actor: p.Subject, Tool: tool.Name, Arguments: args})
	}
	b, err := json.Marshal(args)
	if err != nil {
		return "", gateway.Wrap(gateway.EInvalid, err, "the arguments cannot be encoded as JSON")
	}
	return fmt.Sprintf("%s will run with the arguments %s. The backend gives no preview of the changes; check the arguments before you confirm.", tool.Name, b), nil
}

// reserveOnce is step 2 after the token verified: claim the idempotency
// key rec in the reservation transaction; dispatch follows, and
// saveKeyResult stores the result under the key. A key already claimed
// answers from the stored row without dispatching and without a rate-limit
// slot (answerFromKey).
func (pl *Pipeline) reserveOnce(ctx context.Context, c *Call, rec *gateway.IdempotencyRecord) error {
	c.Claim = rec
	prior, err := pl.reserve(ctx, c)
	if errors.Is(err, errKeySeen) {
		c.Claim = nil
		return pl.answerFromKey(c, prior, rec)
	}
	return err
}

// saveKeyResult stores a confirmed call's result under its idempotency
// key. A result that cannot be saved leaves the key claimed: a retry is
// then refused as in progress, never dispatched twice.
func (pl *Pipeline) saveKeyResult(ctx context.Context, c *Call) error {
	if c.Claim == nil {
		return nil
	}
	var err error
	if c.Claim.Result, err = json.Marshal(c.Result); err == nil {
		pl.keyStore(ctx, "save the result under", func(ctx context.Context) error { return pl.Store.SaveIdempotencyResult(ctx, c.Claim) })
	}
	return nil
}

// invisible reports control and format characters (C0/C1 controls, NUL,
// bidi overrides, zero-width spaces): a key holding them looks like
// another key to the people who read it.
func invisible(r rune) bool { return unicode.In(r, unicode.Cc, unicode.Cf) }

// settleFailedKey decides what a failed dispatch leaves under its
// idempotency key. A call that provably never reached the tool
// (gateway.ErrNotDispatched) releases the key, so a retry with it runs the
// call. Any other failure may have deployed: the key keeps an error result
// saying so, a retry with it answers that result instead of deploying a
// second time (docs/requirements.md#deploy-confirmation: the protocol exists to prevent "stale retries"),
// and the returned error tells the caller the same.
func (pl *Pipeline) settleFailedKey(ctx context.Context, rec *gateway.IdempotencyRecord, err error) error {
	if errors.Is(err, gateway.ErrNotDispatched) {
		pl.keyStore(ctx, "release", func(ctx context.Context) error { return pl.Store.ReleaseIdempotencyKey(ctx, rec) })
		return err
	}
	msg := fmt.Sprintf("%s; the call may or may not have run, so idempotency_key %q will not run %s again: check the result (e.g. the app's deployments), then call with a new idempotency_key if it still needs to run",
		gateway.ErrorMessageOf(err), rec.Key, rec.Tool)
	res := &gateway.ToolResult{IsError: true, Content: []map[string]any{{"type": "text", "text": "The first " + rec.Tool + " call with this idempotency_key failed: " + msg}}}
	var jerr error
	if rec.Result, jerr = json.Marshal(res); jerr == nil {
		pl.keyStore(ctx, "save the unknown outcome under", func(ctx context.Context) error { return pl.Store.SaveIdempotencyResult(ctx, rec) })
	}
	return &gateway.Error{Code: gateway.ErrorCodeOf(err), Message: msg, Err: err}
}

// keyStore runs one write on the idempotency key after dispatch, whatever
// happened to the request's ctx; a failure is logged, the reply stands.
func (pl *Pipeline) keyStore(ctx context.Context, what string, write func(ctx context.Context) error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := write(ctx); err != nil {
		pl.log().Error("could not "+what+" an idempotency key", zap.Error(err))
	}
}

// answerFromKey answers a call whose idempotency_key was claimed before:
// the stored result for the same arguments (dispatched again: never), a
// refusal for other arguments or while the first call is still running.
// finish records the call as a row of its own (status allowed for a
// replay).
func (pl *Pipeline) answerFromKey(c *Call, prior, rec *gateway.IdempotencyRecord) error {
	ev := c.Event
	switch {
	case prior.InputHash != rec.InputHash:
		return withReasons(ev, &gateway.Error{Code: gateway.EConflict,
			Message: fmt.Sprintf("idempotency_key %q was already used by this task for %s with other arguments; use a new key for a new call", rec.Key, rec.Tool),
			Reasons: []gateway.Reason{{Code: reasonKeyReused, Message: "idempotency key reused with other arguments"}}})
	case prior.Result == nil:
		return withReasons(ev, &gateway.Error{Code: gateway.EConflict,
			Message: fmt.Sprintf("a %s call with idempotency_key %q is still running, or ended without a stored result (the store failed while recording it): retry in a few seconds with the same key to get its result; if this persists for minutes, check whether the call took effect, and use a new idempotency_key if it must run", rec.Tool, rec.Key),
			Reasons: []gateway.Reason{{Code: reasonKeyInProgress, Message: "idempotency key claimed, no result yet"}}})
	}
	var res gateway.ToolResult
	if err := json.Unmarshal(prior.Result, &res); err != nil {
		return gateway.Wrap(gateway.EInternal, err, "the stored result of this idempotency_key cannot be read; the call was not dispatched again")
	}
	applyObligations(&res, c.Decision.Obligations)
	ev.Status = gateway.AuditAllowed
	ev.ReasonCodes = append(ev.ReasonCodes, reasonReplayed)
	if res.IsError {
		ev.ErrorClass = "ToolError"
	}
	c.Result, c.Answered = &res, true
	return nil
}
