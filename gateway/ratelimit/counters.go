package ratelimit

import (
	"context"
	"time"

	"github.com/mcpgate/mcpgate/gateway/store"
)

// TaskCounterRetention is how long a task's per-task counters are kept after
// the task reached a terminal state: the 24 hours the task's
// idempotency keys live (docs/requirements.md#idempotency-keys), so that a late retry
// of an ended task still meets its spent budget.
const TaskCounterRetention = 24 * time.Hour

// Rate is a bucket's cap: Limit calls per Period. A Period ≤ 0 means one
// window for ever (per-task caps).
type Rate struct {
	Limit  int64
	Period time.Duration
}

// window is one counting window of a rate.
type window struct {
	start, end time.Time // end is zero for a rate without a period
}

// epoch is the window start of rates without a period.
var epoch = time.Unix(0, 0).UTC()

// windowAt returns the window of rate that contains t. Windows are
// calendar windows in UTC: a rate with Period p counts from
// t.Truncate(p) to t.Truncate(p)+p (an hour or a UTC day for the periods
// this package uses).
func windowAt(rate Rate, t time.Time) window {
	if rate.Period <= 0 {
		return window{start: epoch}
	}
	start := t.UTC().Truncate(rate.Period)
	return window{start: start, end: start.Add(rate.Period)}
}

// Usage is one bucket's state for a plan.
type Usage struct {
	Slot  Slot
	Used  int64 // calls counted in the slot's window
	Limit int64
}

// ReadUsage reports every slot of p without counting, in p's order, each
// in the window p fixed, from the store's counters c (the keys the
// request path reserves: KeyPrefix + ":" + Slot.Key).
func ReadUsage(ctx context.Context, c store.Counters, p Plan) ([]Usage, error) {
	out := make([]Usage, 0, len(p.Slots))
	for _, slot := range p.Slots {
		n, err := c.RateCount(ctx, KeyPrefix+":"+slot.Key, slot.Window)
		if err != nil {
			return nil, err
		}
		out = append(out, Usage{Slot: slot, Used: n, Limit: slot.Bucket.Rate.Limit})
	}
	return out, nil
}

// sweepLag keeps the sweep off windows that ended moments ago: a
// reservation that picked its windows just before the boundary (or on a
// replica whose clock is a little behind) may still be locking those rows,
// and deleting them under it could deadlock the two.
const sweepLag = time.Minute

// Sweep deletes, at now, the counters of c whose windows ended sweepLag
// ago, and the per-task counters of tasks that ended TaskCounterRetention
// ago, and returns how many it deleted. One sweep costs two DELETEs on
// indexed columns, so every replica may run its own.
func Sweep(ctx context.Context, c store.Counters, now time.Time) (int64, error) {
	now = now.UTC()
	windows, err := c.DeleteExpiredRateCounts(ctx, now.Add(-sweepLag))
	if err != nil {
		return windows, err
	}
	tasks, err := c.DeleteEndedTaskCounts(ctx, now.Add(-TaskCounterRetention))
	return windows + tasks, err
}
