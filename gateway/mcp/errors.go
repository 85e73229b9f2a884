package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
)

// protocolError is a transport-level failure that has no gateway.ErrorCode of
// its own: malformed JSON-RPC, a missing or unknown session, a bad header.
// It carries the HTTP status it is answered with (docs/http.md, Errors: "the HTTP
// status is for transport problems").
type protocolError struct {
	status int               // HTTP status of the reply
	code   int               // JSON-RPC error code
	class  gateway.ErrorCode // data.class
	msg    string
	// supported and requested are the data of UnsupportedProtocolVersion.
	supported []string
	requested string
}

func (e *protocolError) Error() string { return e.msg }

// isProtocolError reports whether err is or wraps a protocolError.
func isProtocolError(err error) bool {
	var pe *protocolError
	return errors.As(err, &pe)
}

// errParse is the reply to a body that is not JSON (HTTP 400, -32700).
func errParse(format string, args ...any) error {
	return &protocolError{status: http.StatusBadRequest, code: gateway.RPCParseError, class: gateway.EInvalid, msg: fmt.Sprintf(format, args...)}
}

// errInvalidRequest is the reply to JSON that is not an acceptable JSON-RPC
// request for this endpoint (HTTP 400, -32600).
func errInvalidRequest(format string, args ...any) error {
	return &protocolError{status: http.StatusBadRequest, code: gateway.RPCInvalidRequest, class: gateway.EInvalid, msg: fmt.Sprintf(format, args...)}
}

// errStatus is a transport error with its own HTTP status (403, 404, 405,
// 406, 409, 413); the JSON-RPC code stays -32600.
func errStatus(status int, class gateway.ErrorCode, format string, args ...any) error {
	return &protocolError{status: status, code: gateway.RPCInvalidRequest, class: class, msg: fmt.Sprintf(format, args...)}
}

// rpcError is the JSON-RPC error object on the wire.
type rpcError struct {
	Code    int        `json:"code"`
	Message string     `json:"message"`
	Data    *errorData `json:"data,omitempty"`
}

// errorData is the "data" member of every JSON-RPC error mcpgate sends
// (docs/http.md, Errors: class, status, and reasons when the error has
// them). Refused tools/calls are not JSON-RPC errors: their Denial rides in
// the tool execution error's _meta (ToolError).
type errorData struct {
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

// wireError is the one place that turns an error into its JSON-RPC error
// object and HTTP status (docs/architecture.md, Conventions: "One error type, one writer"). Errors of
// class Internal are logged at error level with their cause; the caller sees
// only the message meant for people. Everything else is logged at debug.
func (t *Transport) wireError(ctx context.Context, err error) (*rpcError, int) {
	var pe *protocolError
	if errors.As(err, &pe) {
		t.log.Debug("mcp: request refused", zap.String("request_id", gateway.RequestIDFrom(ctx)),
			zap.Int("status", pe.status), zap.String("reason", pe.msg))
		return &rpcError{Code: pe.code, Message: pe.msg,
			Data: &errorData{Class: string(pe.class), Status: pe.status, Supported: pe.supported, Requested: pe.requested}}, pe.status
	}
	code := gateway.ErrorCodeOf(err)
	e := &rpcError{Code: code.RPCCode(), Message: gateway.ErrorMessageOf(err),
		Data: &errorData{Class: code.Class(), Status: code.HTTPStatus()}}
	var ge *gateway.Error
	if errors.As(err, &ge) {
		e.Data.DecisionID, e.Data.Reasons, e.Data.Bucket = ge.DecisionID, ge.Reasons, ge.Bucket
		e.Data.RequiredCapabilities = ge.RequiredCapabilities
	}
	if code.Class() == string(gateway.EInternal) {
		t.log.Error("mcp: internal error", zap.String("request_id", gateway.RequestIDFrom(ctx)), zap.Error(err))
	} else {
		t.log.Debug("mcp: request failed", zap.String("request_id", gateway.RequestIDFrom(ctx)),
			zap.String("class", code.Class()), zap.String("message", e.Message))
	}
	return e, code.HTTPStatus()
}

// challenge is the WWW-Authenticate value of a 401: Options.Challenge when
// set, else a Bearer challenge (RFC 6750 §3) naming the resource metadata
// (RFC 9728 §5.1) and, only when the request carried credentials, the
// invalid_token error with its message (RFC 6750 §3.1).
func (t *Transport) challenge(r *http.Request, err error) string {
	if t.opts.Challenge != nil {
		return t.opts.Challenge(err)
	}
	c := `Bearer realm="mcpgate"`
	if t.opts.ResourceMetadataURL != "" {
		c += `, resource_metadata=` + quoteHeader(t.opts.ResourceMetadataURL)
	}
	if r.Header.Get("Authorization") != "" {
		c += `, error="invalid_token", error_description=` + quoteHeader(gateway.ErrorMessageOf(err))
	}
	return c
}

// quoteHeader renders s as an HTTP quoted-string, dropping control
// characters so that an error message can never split a header.
func quoteHeader(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
