package gateway

import "context"

type ctxKey int

const requestIDKey ctxKey = iota

// WithRequestID returns ctx carrying the request id the transport assigned
// to one JSON-RPC request; the audit row records it.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey, id)
}

// RequestIDFrom returns the request id carried by ctx, or "".
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}
