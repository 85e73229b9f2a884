package gateway

import (
	"context"
	"encoding/json"
	"fmt"
)

// RelayKind names a kind of message an upstream sends to the client during
// one tools/call, which the policy decides to relay or not.
type RelayKind string

// The kinds of upstream-initiated messages a call can relay, by MCP method.
const (
	RelayProgress    RelayKind = "progress"    // notifications/progress
	RelayLog         RelayKind = "log"         // notifications/message
	RelayElicitation RelayKind = "elicitation" // elicitation/create
	RelaySampling    RelayKind = "sampling"    // sampling/createMessage
	RelayRoots       RelayKind = "roots"       // roots/list
)

// RelayKindOf returns the kind of an upstream-initiated MCP method, and
// false for a method no call relays.
func RelayKindOf(method string) (RelayKind, bool) {
	switch method {
	case "notifications/progress":
		return RelayProgress, true
	case "notifications/message":
		return RelayLog, true
	case "elicitation/create":
		return RelayElicitation, true
	case "sampling/createMessage":
		return RelaySampling, true
	case "roots/list":
		return RelayRoots, true
	}
	return "", false
}

// Relay carries the messages an upstream sends during one tools/call to
// the client that made the call, and the client's answers back. The
// transport makes one per call and puts it in the call's context
// (WithRelay); the pipeline wraps it with the policy's verdict per kind;
// the upstream adapter uses it. Methods are safe for concurrent use and
// only valid until the call returns.
type Relay interface {
	// ProgressToken is the client's _meta.progressToken of the call, as
	// its JSON text; nil when the client asked for no progress.
	ProgressToken() json.RawMessage
	// Notify sends the notification method with params (a JSON object) to
	// the client on the call's stream. A notification that cannot be sent
	// or that the policy does not relay is dropped with an error the
	// caller may ignore.
	Notify(ctx context.Context, method string, params json.RawMessage) error
	// Request sends the request method with params to the client and waits
	// for its answer: the result's JSON, or an error. The client's own
	// JSON-RPC error, and a refusal by the transport or the policy, are a
	// *RPCError, which the caller answers the upstream with.
	Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// RPCError is a JSON-RPC error object (code, message, data) that a relayed
// request ended with, to be answered to the side that sent the request.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

const relayKey ctxKey = requestIDKey + 1

// WithRelay returns ctx carrying r, the relay of the call ctx belongs to.
func WithRelay(ctx context.Context, r Relay) context.Context {
	return context.WithValue(ctx, relayKey, r)
}

// RelayFrom returns the relay carried by ctx, or nil when the call has
// none (a transport that cannot relay, or a call built in Go).
func RelayFrom(ctx context.Context) Relay {
	r, _ := ctx.Value(relayKey).(Relay)
	return r
}
