package wire

import "context"

// Elicitor asks the user of the calling MCP client a question through the
// client (MCP elicitation/create, form mode) and waits for the answer. The
// transport puts one into the request context (WithElicitor) only for a
// session whose client declared the elicitation capability; the approval
// step of the pipeline asks through it.
type Elicitor interface {
	// Elicit sends req to the client and returns the user's answer. It
	// returns when the client answers, ctx ends (ctx.Err()) or the session
	// cannot carry the request (a gateway.EUnavailable error).
	Elicit(ctx context.Context, req ElicitRequest) (ElicitResult, error)
}

// ElicitRequest is the params of an elicitation/create request in form
// mode: a message for the user and the flat JSON Schema object of the
// fields the form asks for.
type ElicitRequest struct {
	Message         string         `json:"message"`
	RequestedSchema map[string]any `json:"requestedSchema"`
}

// Elicitation answers (ElicitResult.Action), as MCP names them.
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// ElicitResult is the client's answer: Action is ElicitAccept (Content
// holds the form's fields), ElicitDecline or ElicitCancel.
type ElicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// elicitorKey is the context key of the request's Elicitor.
type elicitorKey struct{}

// WithElicitor returns ctx carrying e, the elicitation path to the user of
// the client that sent the request.
func WithElicitor(ctx context.Context, e Elicitor) context.Context {
	return context.WithValue(ctx, elicitorKey{}, e)
}

// ElicitorFrom returns the Elicitor ctx carries, or nil when the calling
// client did not declare the elicitation capability (or its transport
// cannot send server-to-client requests).
func ElicitorFrom(ctx context.Context) Elicitor {
	e, _ := ctx.Value(elicitorKey{}).(Elicitor)
	return e
}
