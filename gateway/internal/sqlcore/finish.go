package sqlcore

import (
	"context"
	"strconv"

	"github.com/mcpgate/mcpgate/gateway"
)

// MaxFinishBatch is the most audit rows one group commit of FinishAudit
// completes (Dialect.FinishBatch gets at most this many).
const MaxFinishBatch = 64

// finisher is the group commit of FinishAudit: the finishes that arrive
// while a commit is under way share the next commit, and each caller
// returns when the transaction holding its row has committed (or failed),
// so the final status is written before the call's reply.
type finisher = group[*gateway.AuditEvent]

func newFinisher(flush func(ctx context.Context, evs []*gateway.AuditEvent) ([]error, error)) *finisher {
	return newGroup(MaxFinishBatch, flush,
		func(ev *gateway.AuditEvent) string { return strconv.FormatInt(ev.ID, 10) },
		groupMsgs{
			closed:   "audit store closed; audit event %s was not finished",
			queued:   "audit store busy: audit event %s was not finished before the deadline",
			inFlight: "audit store slow: the commit finishing audit event %s did not end before the deadline; it may still be written",
		})
}
