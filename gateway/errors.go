package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// ErrorCode classifies an Error. One writer maps it to a JSON-RPC code and an
// HTTP status (docs/http.md, Errors); packages never pick wire codes themselves.
type ErrorCode string

// The error classes of docs/architecture.md (Conventions), with the wire
// shapes of docs/http.md (Errors). A tools/call refused as EForbidden or
// ERateLimited, and one whose arguments fail the tool's input schema
// (Error.ToolInput) from protocol 2025-11-25 on, is answered with a tool
// execution error (a result with isError), not a JSON-RPC error: the MCP
// transport (gateway/mcp) makes that choice, in one place.
const (
	EInvalid         ErrorCode = "Invalid"         // bad arguments: -32602, HTTP 400 on admin
	EUnauthenticated ErrorCode = "Unauthenticated" // bad credential: HTTP 401
	EForbidden       ErrorCode = "Forbidden"       // denied by policy: tool execution error, 403
	ERateLimited     ErrorCode = "RateLimited"     // limit reached: tool execution error, class Forbidden, 403
	ENotFound        ErrorCode = "NotFound"        // unknown record: 404 on admin
	EMethodNotFound  ErrorCode = "MethodNotFound"  // unknown or unreachable method/tool: -32601
	EConflict        ErrorCode = "Conflict"        // unique violation: 409 on admin
	EUnavailable     ErrorCode = "Unavailable"     // dependency down: -32603
	// EMissingCapability: the call needs a client capability the client did
	// not declare (MCP 2026-07-28, SEP-2575): -32021, HTTP 400, with
	// Error.RequiredCapabilities as data.requiredCapabilities.
	EMissingCapability ErrorCode = "MissingCapability"
	EInternal          ErrorCode = "Internal" // bug or policy/store failure: -32603
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

// JSON-RPC 2.0 error codes used on the wire (docs/http.md, Errors). No
// implementation-defined code (-32000 to -32099) is used for refusals: the
// SDKs and newer protocol versions give those codes meanings of their own
// (the Go SDK's -32003 is "client is closing").
const (
	RPCParseError     = -32700
	RPCInvalidRequest = -32600
	RPCMethodNotFound = -32601
	RPCInvalidParams  = -32602
	RPCInternalError  = -32603
	// RPCMissingClientCapability is MissingRequiredClientCapabilityError of
	// MCP 2026-07-28 (SEP-2575): the spec's own code, not one the gateway
	// chose.
	RPCMissingClientCapability = -32021
)

// RPCCode maps an error code to its JSON-RPC error code, for the errors
// that travel as JSON-RPC errors. A refusal (EForbidden, ERateLimited) of
// a tools/call travels as a tool execution error instead; where a refusal
// or a bad credential has to be a JSON-RPC error (the body of an HTTP 401
// or 403, a refusal outside tools/call) it is -32600, the code the
// transport gives every request it refuses with an HTTP status of its own.
func (c ErrorCode) RPCCode() int {
	switch c {
	case EInvalid, EConflict:
		// A conflict on the MCP path is a client's reuse of an idempotency
		// key with other arguments: something the caller fixes, not -32603.
		return RPCInvalidParams
	case EMethodNotFound:
		return RPCMethodNotFound
	case EMissingCapability:
		return RPCMissingClientCapability
	case EForbidden, ERateLimited, EUnauthenticated:
		return RPCInvalidRequest
	default:
		return RPCInternalError
	}
}

// Class is the error class named in JSON-RPC error data: rate limits are
// reported as class "Forbidden" (docs/requirements.md#limit-messages).
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

// HTTPStatus is the status for the admin API and for error data "status".
func (c ErrorCode) HTTPStatus() int {
	switch c {
	case EInvalid, EMissingCapability:
		return http.StatusBadRequest
	case EUnauthenticated:
		return http.StatusUnauthorized
	case EForbidden, ERateLimited:
		return http.StatusForbidden
	case ENotFound, EMethodNotFound:
		return http.StatusNotFound
	case EConflict:
		return http.StatusConflict
	case EUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
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
