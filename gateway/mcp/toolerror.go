package mcp

import (
	"errors"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// DenialMetaKey is the member of a tool execution error's _meta that holds
// the refusal's machine-readable part, a Denial (docs/http.md, Errors).
const DenialMetaKey = "io.mcpgate/denial"

// Reason codes of a refusal whose error carries none of its own.
const (
	reasonRateLimited  = "rate_limit.exceeded"
	reasonInvalidInput = "arguments.invalid"
	reasonDenied       = "policy.denied"
)

// Denial is _meta["io.mcpgate/denial"] of a tools/call answered with a
// tool execution error: the error class and the HTTP status it stands for
// (never the HTTP status of the reply, which is 200), the first reason's
// code, the policy decision, every reason, and for a rate limit the full
// bucket.
type Denial struct {
	Class      string           `json:"class"`
	Status     int              `json:"status"`
	Code       string           `json:"code"`
	DecisionID string           `json:"decision_id,omitempty"`
	Reasons    []gateway.Reason `json:"reasons"`
	Bucket     string           `json:"bucket,omitempty"`
}

// ToolErrorResult is a CallToolResult with isError true: one text block
// that says what happened and what to do, and the Denial in _meta under
// DenialMetaKey.
type ToolErrorResult struct {
	Content []TextBlock        `json:"content"`
	IsError bool               `json:"isError"`
	Meta    map[string]*Denial `json:"_meta"`
}

// TextBlock is an MCP TextContent block.
type TextBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// ToolError is the one mapping from a tools/call handler's error to its
// reply: it returns the tool execution error that answers err at protocol
// version, or nil when err is answered as a JSON-RPC error (wireError).
//
// MCP hosts show JSON-RPC errors to the user but tool execution errors to
// the model (server/tools, "Error Handling"), so a refusal the model can
// act on is a result: a policy denial (EForbidden) and a rate limit
// (ERateLimited, the refusal limiter's included) at every version, the
// 2024-11-05 of the HTTP+SSE transport too, whose results already had
// isError; arguments that fail the tool's input schema
// (gateway.Error.ToolInput) from 2025-11-25 on, which made input
// validation errors tool execution errors (SEP-1303); before it they are
// -32602; and a failure of the tool's upstream (gateway.Error's
// UpstreamFailure: a bridged upstream that could not take the call).
// Everything else stays a JSON-RPC error: malformed params and an
// unknown tool -32602, a store or policy failure -32603.
func ToolError(err error, version string) *ToolErrorResult {
	var ge *gateway.Error
	if !errors.As(err, &ge) {
		return nil
	}
	fallback := reasonDenied
	switch {
	case ge.Code == gateway.EForbidden:
	case ge.Code == gateway.ERateLimited:
		fallback = reasonRateLimited
	case ge.Code == gateway.EInvalid && ge.ToolInput && versionOf(version).InputErrorsAsResults:
		fallback = reasonInvalidInput
	case ge.UpstreamFailure:
	default:
		return nil
	}
	reasons := ge.Reasons
	if len(reasons) == 0 {
		reasons = []gateway.Reason{{Code: fallback, Message: ge.Message}}
	}
	return &ToolErrorResult{
		Content: []TextBlock{{Type: "text", Text: ge.Message}},
		IsError: true,
		Meta: map[string]*Denial{DenialMetaKey: {
			Class: ge.Code.Class(), Status: wire.HTTPStatus(ge.Code), Code: reasons[0].Code,
			DecisionID: ge.DecisionID, Reasons: reasons, Bucket: ge.Bucket,
		}},
	}
}
