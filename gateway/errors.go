package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
)

// ErrorCode classifies an Error. One writer (gateway/mcp/wire) maps it to a
// JSON-RPC code and an HTTP status (docs/http.md, Errors); packages never
// pick wire codes themselves.
type ErrorCode string

// The error classes of docs/architecture.md (Conventions); their wire
// shapes (JSON-RPC code, HTTP status) are gateway/mcp/wire's, documented in
// docs/http.md (Errors). A tools/call refused as EForbidden or
// ERateLimited, and one whose arguments fail the tool's input schema
// (Error.ToolInput) from protocol 2025-11-25 on, is answered with a tool
// execution error (a result with isError), not a JSON-RPC error: the MCP
// transport (gateway/mcp) makes that choice, in one place.
const (
	EInvalid         ErrorCode = "Invalid"         // bad arguments or request
	EUnauthenticated ErrorCode = "Unauthenticated" // bad credential
	EForbidden       ErrorCode = "Forbidden"       // denied by policy
	ERateLimited     ErrorCode = "RateLimited"     // limit reached (class Forbidden)
	ENotFound        ErrorCode = "NotFound"        // unknown record
	EMethodNotFound  ErrorCode = "MethodNotFound"  // unknown or unreachable method/tool
	EConflict        ErrorCode = "Conflict"        // unique violation
	EUnavailable     ErrorCode = "Unavailable"     // dependency down (class Internal)
	// EMissingCapability: the call needs a client capability the client did
	// not declare (MCP 2026-07-28, SEP-2575), Error.RequiredCapabilities
	// names it.
	EMissingCapability ErrorCode = "MissingCapability"
	EInternal          ErrorCode = "Internal" // bug or policy/store failure
)

// Error is the one error type of mcpgate. Message is shown to the caller and
// must say what happened and what to do; Err is the cause, logged for
// internal errors and never shown.
type Error struct {
	Code    ErrorCode
	Message string
	// DecisionID and Reasons are set for policy denials (the denial's
	// machine-readable part on the wire); DecisionID also for a call the
	// policy allowed and a rate limit refused.
	DecisionID string
	Reasons    []Reason
	// Bucket names the rate-limit bucket for ERateLimited.
	Bucket string
	// ToolInput marks an EInvalid error as arguments that fail the tool's
	// input schema: an input validation error, which MCP from protocol
	// 2025-11-25 on answers as a tool execution error so that the model
	// can correct its call (older protocols: -32602).
	ToolInput bool
	// UpstreamFailure marks an error as a failure of the tool's upstream
	// that the model should read (a bridged upstream that could not take
	// the call): answered as a tool execution error naming the upstream at
	// every protocol version, whatever Code says of it.
	UpstreamFailure bool
	// RequiredCapabilities is, for EMissingCapability, the ClientCapabilities
	// object (JSON, e.g. {"sampling":{}}) the call needs and the client did
	// not declare; nil otherwise.
	RequiredCapabilities json.RawMessage
	Err                  error
}

// Error returns the message, followed by the cause for internal errors.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with a formatted message.
func Errorf(code ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error with a message for people and err as its cause.
func Wrap(code ErrorCode, err error, message string) *Error {
	return &Error{Code: code, Message: message, Err: err}
}

// ErrorCodeOf returns the code of the first *Error in err's chain, EInternal
// for any other non-nil error and "" for nil.
func ErrorCodeOf(err error) ErrorCode {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

// ErrorMessageOf returns the message to show for err: the *Error's message,
// or a generic one for errors that are not *Error (their text may hold
// internals and is only logged).
func ErrorMessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error; the gateway logged the cause"
}

// DisplayURL is rawURL fit for error messages, logs, banners, probes and
// metrics, which reach clients and the idempotency store: its scheme, host
// and port only ("https://tools.internal:8443"). The user, password, path,
// query and fragment are left out, since any of them may carry a key
// (https://host/mcp/SECRET-TOKEN; docs/requirements.md#no-secrets). Every
// place that names an upstream (or the database) uses it, so there is one
// rule to keep. A URL that does not parse, or has no host, is "(unparsable
// URL)".
func DisplayURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "(unparsable URL)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}

// Class is the error class named in JSON-RPC error data and in the audit
// row: rate limits are reported as class "Forbidden"
// (docs/requirements.md#limit-messages).
func (c ErrorCode) Class() string {
	switch c {
	case ERateLimited:
		return string(EForbidden)
	case EUnavailable:
		return string(EInternal)
	default:
		return string(c)
	}
}

// ErrNotDispatched marks an adapter error that proves the tool never ran:
// the upstream could not be reached, refused the call as a protocol error
// (unknown tool, invalid arguments) before running it, or the call was
// cancelled before it started. Adapters wrap it into their error's cause
// (NotDispatched); any adapter error without it leaves the outcome unknown
// (a timeout after the request was sent, a lost connection, a reply that
// cannot be read). The pipeline lets a deploy's idempotency key be used
// again only after a call that was not dispatched (docs/requirements.md#idempotency-keys:
// no stale retries).
var ErrNotDispatched = errors.New("the call did not reach the tool")

// NotDispatched returns cause marked with ErrNotDispatched (errors.Is finds
// both); the message stays cause's.
func NotDispatched(cause error) error {
	if cause == nil {
		return ErrNotDispatched
	}
	return notDispatched{cause}
}

type notDispatched struct{ cause error }

func (e notDispatched) Error() string { return e.cause.Error() }

func (e notDispatched) Unwrap() []error { return []error{ErrNotDispatched, e.cause} }
