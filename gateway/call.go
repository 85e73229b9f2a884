package gateway

import "encoding/json"

// CallRequest is one tools/call as the transport parsed it, once, and every
// later step reads it, never parsing again. Arguments is never nil: absent
// or null arguments become an empty map and RawArguments "{}". Numbers in
// Arguments are json.Number with the client's digits (no float64 round
// trip), and no object in them repeats a member name (canon.Decode);
// RawArguments keeps the exact bytes the client sent, which an adapter
// that forwards the call passes on. Meta is the request's "_meta" object
// as the client sent it (a JSON object, not decoded), nil when absent or
// null.
type CallRequest struct {
	Name         string
	Arguments    map[string]any
	RawArguments json.RawMessage
	Meta         json.RawMessage
	// ArgumentsErr is an EInvalid error when the params were malformed
	// (not an object, no string name, "arguments" not an object, bad
	// "_meta"); Arguments is then empty and Name is whatever could be read.
	// The handler must refuse the call with it (after auditing it).
	ArgumentsErr error
	// Header is the HTTP request's header (canonical names, as net/http's
	// Header) of a call at protocol 2026-07-28, nil at the session-based
	// versions: its Mcp-Param-* headers are checked against the arguments
	// once the policy allowed the tool (gateway/mcp/wire.CheckParamHeaders).
	Header map[string][]string
}

// ListedTool is one tool as a caller's tool list shows it (MCP Tool: name,
// title, description, inputSchema, annotations). An empty InputSchema
// stands for {"type":"object"}.
type ListedTool struct {
	Name        string
	Title       string
	Description string
	InputSchema json.RawMessage
	Annotations map[string]any
}
