// Package wire is what MCP puts on the wire around mcpgate's domain, for
// the transport (gateway/mcp) and for the adapters that speak MCP to an
// upstream: the one mapping of a gateway.Error to its JSON-RPC error
// object and HTTP status, the transport's own refusals (ProtocolError),
// the 2026-07-28 Mcp-Param-* headers (x-mcp-header annotations, their
// values, and the check of a call's headers against its arguments), and
// the seams through which a call talks back to its client: the relay of
// what an upstream sends during a call (Relay, in the call's context) and
// the elicitation the approval step asks through (Elicitor). The
// transport makes them, the pipeline wraps and checks them, the adapters
// and approvals use them. It imports only the domain package and the
// standard library.
package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/mcpgate/mcpgate/gateway"
)

// JSON-RPC 2.0 error codes (JSON-RPC 2.0 §5.1), in which the relay
// contract speaks too: a relayed request that the client, the transport or
// the policy refuses ends with an *RPCError of one of them, which the
// adapter answers the upstream with.
const (
	RPCParseError     = -32700
	RPCInvalidRequest = -32600
	RPCMethodNotFound = -32601
	RPCInvalidParams  = -32602
	RPCInternalError  = -32603
)

// JSON-RPC codes of MCP itself, beside the JSON-RPC 2.0 codes above.
const (
	// RPCMissingClientCapability is MissingRequiredClientCapabilityError of
	// MCP 2026-07-28 (SEP-2575): the spec's own code, not one the gateway
	// chose.
	RPCMissingClientCapability = -32021
	// RPCHeaderMismatch is HeaderMismatch of MCP 2026-07-28 (basic/index,
	// "Error Codes"): a standard header disagrees with the body.
	RPCHeaderMismatch = -32020
	// RPCUnsupportedProtocol is UnsupportedProtocolVersion of MCP
	// 2026-07-28.
	RPCUnsupportedProtocol = -32022
)

// RPCCode maps an error code to its JSON-RPC error code, for the errors
// that travel as JSON-RPC errors. A refusal (EForbidden, ERateLimited) of
// a tools/call travels as a tool execution error instead; where a refusal
// or a bad credential has to be a JSON-RPC error (the body of an HTTP 401
// or 403, a refusal outside tools/call) it is -32600, the code the
// transport gives every request it refuses with an HTTP status of its own.
// No implementation-defined code (-32000 to -32099) is used for refusals:
// the SDKs and newer protocol versions give those codes meanings of their
// own (the Go SDK's -32003 is "client is closing").
func RPCCode(c gateway.ErrorCode) int {
	switch c {
	case gateway.EInvalid, gateway.EConflict:
		// A conflict on the MCP path is a client's reuse of an idempotency
		// key with other arguments: something the caller fixes, not -32603.
		return RPCInvalidParams
	case gateway.EMethodNotFound:
		return RPCMethodNotFound
	case gateway.EMissingCapability:
		return RPCMissingClientCapability
	case gateway.EForbidden, gateway.ERateLimited, gateway.EUnauthenticated:
		return RPCInvalidRequest
	default:
		return RPCInternalError
	}
}

// HTTPStatus is the status of an error code for the admin API and for
// the "status" of JSON-RPC error data (docs/http.md, Errors).
func HTTPStatus(c gateway.ErrorCode) int {
	switch c {
	case gateway.EInvalid, gateway.EMissingCapability:
		return http.StatusBadRequest
	case gateway.EUnauthenticated:
		return http.StatusUnauthorized
	case gateway.EForbidden, gateway.ERateLimited:
		return http.StatusForbidden
	case gateway.ENotFound, gateway.EMethodNotFound:
		return http.StatusNotFound
	case gateway.EConflict:
		return http.StatusConflict
	case gateway.EUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// ProtocolError is a transport-level failure that has no gateway.ErrorCode
// of its own: malformed JSON-RPC, a missing or unknown session, a bad
// header. It carries the HTTP status it is answered with (docs/http.md,
// Errors: "the HTTP status is for transport problems").
type ProtocolError struct {
	Status int               // HTTP status of the reply
	Code   int               // JSON-RPC error code
	Class  gateway.ErrorCode // data.class
	Msg    string
	// Supported and Requested are the data of UnsupportedProtocolVersion.
	Supported []string
	Requested string
}

func (e *ProtocolError) Error() string { return e.Msg }

// IsProtocolError reports whether err is or wraps a *ProtocolError.
func IsProtocolError(err error) bool {
	var pe *ProtocolError
	return errors.As(err, &pe)
}

// ErrParse is the reply to a body that is not JSON (HTTP 400, -32700).
func ErrParse(format string, args ...any) *ProtocolError {
	return &ProtocolError{Status: http.StatusBadRequest, Code: RPCParseError, Class: gateway.EInvalid, Msg: fmt.Sprintf(format, args...)}
}

// ErrInvalidRequest is the reply to JSON that is not an acceptable
// JSON-RPC request for this endpoint (HTTP 400, -32600).
func ErrInvalidRequest(format string, args ...any) *ProtocolError {
	return &ProtocolError{Status: http.StatusBadRequest, Code: RPCInvalidRequest, Class: gateway.EInvalid, Msg: fmt.Sprintf(format, args...)}
}

// ErrStatus is a transport error with its own HTTP status (403, 404, 405,
// 406, 409, 413); the JSON-RPC code stays -32600.
func ErrStatus(status int, class gateway.ErrorCode, format string, args ...any) *ProtocolError {
	return &ProtocolError{Status: status, Code: RPCInvalidRequest, Class: class, Msg: fmt.Sprintf(format, args...)}
}

// ErrHeaderMismatch is HTTP 400 with HeaderMismatch (-32020).
func ErrHeaderMismatch(format string, args ...any) *ProtocolError {
	e := ErrInvalidRequest(format, args...)
	e.Code = RPCHeaderMismatch
	return e
}

// ErrorObject is the JSON-RPC error object on the wire.
type ErrorObject struct {
	Code    int        `json:"code"`
	Message string     `json:"message"`
	Data    *ErrorData `json:"data,omitempty"`
}

// ErrorData is the "data" member of every JSON-RPC error mcpgate sends
// (docs/http.md, Errors: class, status, and reasons when the error has
// them). Refused tools/calls are not JSON-RPC errors: their Denial rides in
// the tool execution error's _meta (gateway/mcp ToolError).
type ErrorData struct {
	Class      string           `json:"class"`
	Status     int              `json:"status"`
	DecisionID string           `json:"decision_id,omitempty"`
	Reasons    []gateway.Reason `json:"reasons,omitempty"`
	Bucket     string           `json:"bucket,omitempty"`
	// Supported and Requested are UnsupportedProtocolVersion's data (MCP
	// 2026-07-28): the versions served and the one the request asked for.
	Supported []string `json:"supported,omitempty"`
	Requested string   `json:"requested,omitempty"`
	// RequiredCapabilities is MissingRequiredClientCapabilityError's data
	// (MCP 2026-07-28, SEP-2575): the ClientCapabilities object the call
	// needs, e.g. {"sampling":{}}.
	RequiredCapabilities json.RawMessage `json:"requiredCapabilities,omitempty"`
}

// Error is the one mapping of an error to its JSON-RPC error object and
// HTTP status (docs/architecture.md, Conventions: "One error type, one
// writer"): a *ProtocolError as it says, anything else by its
// gateway.ErrorCode (EInternal for an error that is not a *gateway.Error,
// with a generic message). It logs nothing; the caller does.
func Error(err error) (*ErrorObject, int) {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return &ErrorObject{Code: pe.Code, Message: pe.Msg,
			Data: &ErrorData{Class: string(pe.Class), Status: pe.Status, Supported: pe.Supported, Requested: pe.Requested}}, pe.Status
	}
	code := gateway.ErrorCodeOf(err)
	e := &ErrorObject{Code: RPCCode(code), Message: gateway.ErrorMessageOf(err),
		Data: &ErrorData{Class: code.Class(), Status: HTTPStatus(code)}}
	var ge *gateway.Error
	if errors.As(err, &ge) {
		e.Data.DecisionID, e.Data.Reasons, e.Data.Bucket = ge.DecisionID, ge.Reasons, ge.Bucket
		e.Data.RequiredCapabilities = ge.RequiredCapabilities
	}
	return e, HTTPStatus(code)
}
