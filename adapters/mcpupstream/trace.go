package mcpupstream

import (
	"context"

	"github.com/mcpgate/mcpgate/gateway/tracing"
)

// The trace context members of params._meta (SEP-414): the gateway's
// dispatch span parents the upstream's work.
const (
	metaTraceparent = "traceparent"
	metaTracestate  = "tracestate"
)

// traceMeta is the traceparent and tracestate of ctx's span for a call's
// params._meta ("" each when the call is not traced).
func traceMeta(ctx context.Context) [2]string {
	tp, ts := tracing.Inject(ctx)
	return [2]string{tp, ts}
}
