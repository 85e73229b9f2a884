package mcpupstream

import (
	"context"
	"errors"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// The reason codes of ReasonOf: why a call to an upstream failed, for a
// tool execution error that names the upstream (adapters/bridge) and the
// audit row.
const (
	// ReasonUnreachable: the upstream could not be reached (connection
	// refused, session lost); the call never ran.
	ReasonUnreachable = "upstream.unreachable"
	// ReasonTimeout: no answer within the timeout (a slow upstream, or a
	// reply that never ends).
	ReasonTimeout = "upstream.timeout"
	// ReasonRPCError: the upstream answered a JSON-RPC error.
	ReasonRPCError = "upstream.rpc_error"
	// ReasonTooLarge: the reply went past one of the reply's bounds.
	ReasonTooLarge = "upstream.reply_too_large"
	// ReasonMalformed: the reply is not JSON, or not a JSON-RPC result.
	ReasonMalformed = "upstream.malformed_reply"
)

// ReasonOf classifies an error of CallTool into one of the reason codes
// above; a caller's own cancellation is context.Canceled's text
// ("upstream.cancelled").
func ReasonOf(err error) string {
	var big *errReplyLimit
	var rpc *wire.RPCError
	switch {
	case errors.As(err, &big):
		return ReasonTooLarge
	case errors.Is(err, context.DeadlineExceeded):
		return ReasonTimeout
	case errors.Is(err, context.Canceled):
		return "upstream.cancelled"
	case errors.As(err, &rpc):
		return ReasonRPCError
	case neverDelivered(err), errors.Is(err, gateway.ErrNotDispatched) && gateway.ErrorCodeOf(err) == gateway.EUnavailable:
		return ReasonUnreachable
	}
	return ReasonMalformed
}
