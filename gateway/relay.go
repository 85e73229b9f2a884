package gateway

import "encoding/json"

// RelayKind names a kind of message an upstream sends to the client during
// one tools/call, which the policy decides to relay or not (the decision's
// RelayPolicy). The relay itself, and the MCP method of each kind, are the
// wire's (gateway/mcp/wire.Relay, wire.RelayKindOf).
type RelayKind string

// The kinds of upstream-initiated messages a call can relay, by MCP method.
const (
	RelayProgress    RelayKind = "progress"    // notifications/progress
	RelayLog         RelayKind = "log"         // notifications/message
	RelayElicitation RelayKind = "elicitation" // elicitation/create
	RelaySampling    RelayKind = "sampling"    // sampling/createMessage
	RelayRoots       RelayKind = "roots"       // roots/list
)

// InputRequired is an input-required result of MCP 2026-07-28 (a
// ToolResult's Input): what the upstream asks the client for before it
// completes the call, passed to the client as the upstream wrote it.
type InputRequired struct {
	// Requests is the inputRequests object; nil when the upstream sent
	// only requestState.
	Requests json.RawMessage
	// State is the requestState JSON string; nil when absent. The client
	// echoes it unchanged, and the upstream that minted it verifies it.
	State json.RawMessage
}
