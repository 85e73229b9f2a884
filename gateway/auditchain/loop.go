package auditchain

import (
	"context"
	"errors"
	"time"
)

// ErrQueueUpkeep marks an error of a sealing round that came after its
// rows were sealed and committed: the upkeep of the store's queue of rows
// to seal failed (on PostgreSQL, its vacuum, or the finding that the
// gateway's role may not vacuum it). Nothing is lost and sealing goes
// on; the queue costs the next rounds more until the upkeep succeeds.
var ErrQueueUpkeep = errors.New("upkeep of the audit chain's queue")

// Sealer is what the loop needs of a store: one sealing round
// (store.AuditChain.SealAudit).
type Sealer interface {
	// SealAudit seals the rows finished since the last round and returns
	// how many it sealed (0 when another replica holds the lease). An
	// error wrapping ErrQueueUpkeep comes with the rows sealed.
	SealAudit(ctx context.Context) (int, error)
}

// Every is how often Loop runs a round: a row is sealed within about
// this long of its commit (well within the second docs/architecture.md
// promises), and an idle round costs one indexed read of the unsealed
// rows.
const Every = 250 * time.Millisecond

// Loop runs a sealing round every interval until ctx ends, then, when cp
// is not nil, a checkpoint round (Checkpointer.Round: at most one
// checkpoint every cp.Every), and reports each failed round to failed
// (the next round tries again; nothing is lost, the rows stay unsealed
// until then). It returns when ctx ends, after the round under way.
// Checkpoints are written here, off the calls' path.
func Loop(ctx context.Context, s Sealer, cp *Checkpointer, interval time.Duration, failed func(error)) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := s.SealAudit(ctx); err != nil && ctx.Err() == nil {
				failed(err)
			}
			if cp == nil {
				continue
			}
			if _, err := cp.Round(ctx, time.Now()); err != nil && ctx.Err() == nil {
				failed(err)
			}
		}
	}
}
