package wire

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpgate/mcpgate/gateway"
)

// RelayKindOf returns the kind of an upstream-initiated MCP method, and
// false for a method no call relays.
func RelayKindOf(method string) (gateway.RelayKind, bool) {
	switch method {
	case "notifications/progress":
		return gateway.RelayProgress, true
	case "notifications/message":
		return gateway.RelayLog, true
	case "elicitation/create":
		return gateway.RelayElicitation, true
	case "sampling/createMessage":
		return gateway.RelaySampling, true
	case "roots/list":
		return gateway.RelayRoots, true
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

// relayKey is the context key of the call's Relay.
type relayKey struct{}

// WithRelay returns ctx carrying r, the relay of the call ctx belongs to.
func WithRelay(ctx context.Context, r Relay) context.Context {
	return context.WithValue(ctx, relayKey{}, r)
}

// RelayFrom returns the relay carried by ctx, or nil when the call has
// none (a transport that cannot relay, or a call built in Go).
func RelayFrom(ctx context.Context) Relay {
	r, _ := ctx.Value(relayKey{}).(Relay)
	return r
}

// InputRound is the client's side of one request of the multi round-trip
// pattern of MCP 2026-07-28 (basic/utilities/mrtr): a stateless tools/call
// that may answer with an input-required result, and the client's retry
// that carries the answers. Each attempt is a tools/call of its own,
// authorized and audited as every call is.
type InputRound struct {
	// Capabilities is the client's _meta clientCapabilities object as
	// JSON, limited (by the pipeline) to the kinds the policy relays, so
	// the upstream never asks for input the gateway would refuse; "{}"
	// when none is left.
	Capabilities json.RawMessage
	// Responses is params.inputResponses of a retry as the client sent it
	// (a JSON object keyed like the inputRequests it answers); nil when
	// absent.
	Responses json.RawMessage
	// State is params.requestState of a retry (a JSON string, opaque to the
	// gateway and to the client); nil when absent.
	State json.RawMessage
}

// InputRelay is a Relay of a stateless 2026-07-28 call, where the upstream
// asks for input with an input-required result instead of requests during
// the call. The upstream adapter asserts it on the relay it gets.
type InputRelay interface {
	Relay
	// Round is the client's side of the round; nil when the client's call
	// is not a stateless one (then the upstream is called on a session and
	// asks with requests during the call).
	Round() *InputRound
	// InputRequired checks the upstream's inputRequests (a JSON object
	// whose values are {"method", "params"}) before they are relayed to the
	// client: nil when every one may be, else a *gateway.Error EForbidden whose
	// reason names the refusal (a kind the policy does not relay, or a form
	// elicitation that asks for a secret).
	InputRequired(ctx context.Context, requests json.RawMessage) error
}

// ElicitationModes is implemented by a Relay that knows which elicitation
// modes (MCP 2025-11-25 client/elicitation: form, url) its client
// declared; an elicitation of a mode the client did not declare is not
// relayed to it. A Relay without it counts as a form-only client.
type ElicitationModes interface {
	ElicitationModes() (form, url bool)
}

// ElicitationModesOf reads the elicitation modes a client capabilities
// object declares: "elicitation": {} is form only (the 2025-06-18 form),
// {"form": {}} form, {"url": {}} url; capabilities that do not parse, or
// without elicitation, declare none.
func ElicitationModesOf(caps json.RawMessage) (form, url bool) {
	var in struct {
		Elicitation *struct {
			Form *json.RawMessage `json:"form"`
			URL  *json.RawMessage `json:"url"`
		} `json:"elicitation"`
	}
	if json.Unmarshal(caps, &in) != nil || in.Elicitation == nil {
		return false, false
	}
	e := in.Elicitation
	return e.Form != nil || e.URL == nil, e.URL != nil
}
