package gateway

import "context"

type ctxKey int

const requestIDKey ctxKey = iota

// carrierKey is the context key of WithCarrier.
type carrierKey struct{}

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

// WithCarrier returns ctx carrying carrier, the context of the HTTP
// request that carries one call. The transports run a call on a context
// detached from that request (a disconnect is not a cancellation: a call
// that is running finishes and its audit row is settled), so a step that
// only waits for the client — a person's approval — ends its wait with
// the carrier instead (CarrierFrom).
func WithCarrier(ctx, carrier context.Context) context.Context {
	return context.WithValue(ctx, carrierKey{}, carrier)
}

// CarrierFrom returns the carrying request's context recorded by
// WithCarrier, or nil when none was (a call built in Go).
func CarrierFrom(ctx context.Context) context.Context {
	c, _ := ctx.Value(carrierKey{}).(context.Context)
	return c
}
