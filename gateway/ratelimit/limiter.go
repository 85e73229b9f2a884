package ratelimit

import (
	"context"
	"errors"
	"time"

	"github.com/ulule/limiter/v3"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/config"
)

// Limiter reserves the slots of a call: one ulule limiter.Limiter per
// bucket, all over one Store. It is safe for concurrent use.
type Limiter struct {
	rules    Rules
	store    *Store
	limiters map[string]*limiter.Limiter // by bucket name
}

// New returns a limiter with the buckets of NewRules(limits) over counters
// c. now is the clock that picks calendar windows (time.Now when nil).
func New(c Counters, limits config.Limits, now func() time.Time) *Limiter {
	l := &Limiter{rules: NewRules(limits), store: NewStore(c, "", now), limiters: map[string]*limiter.Limiter{}}
	for _, group := range []map[string]Bucket{l.rules.workspace, l.rules.profile} {
		for _, b := range group {
			l.limiters[b.Name] = limiter.New(l.store, b.Rate)
		}
	}
	for _, b := range l.rules.perTask {
		l.limiters[b.Name] = limiter.New(l.store, b.Rate)
	}
	return l
}

// Rules returns the buckets the limiter enforces.
func (l *Limiter) Rules() Rules { return l.rules }

// Store returns the limiter store, e.g. to Sweep it.
func (l *Limiter) Store() *Store { return l.store }

// Reserve takes one slot of every bucket of s, in the order of Rules.Plan
// (per task, then workspace/day, then profile/hour), all or nothing: at
// the first full bucket it takes back the slots before it (the per-task
// refund of seed 001) and returns an ERateLimited *gateway.Error whose
// Message is the seed 001 text and whose Bucket names the bucket.
//
// Each slot is asked of its bucket's ulule limiter.Limiter; the store
// answers them all from one Counters.ReserveCounts (see batch), so an ops
// call costs one statement, not three. Inside the audit store's
// reservation transaction (ctx from server.Store.ReserveAndRecord) the
// slots commit or roll back with the call's audit row, and the row locks
// they take keep concurrent calls from seeing a slot that is about to be
// refunded. A store failure is returned as the store's *gateway.Error
// (EUnavailable when the database cannot be reached).
func (l *Limiter) Reserve(ctx context.Context, s Subject) error {
	slots, err := l.rules.Plan(s)
	if err != nil || len(slots) == 0 {
		return err
	}
	b := l.store.newBatch(s, slots)
	ctx = b.with(ctx)
	for i, slot := range slots {
		lctx, err := l.limiters[slot.Bucket.Name].Get(ctx, slot.Key)
		if err != nil {
			return storeError(err)
		}
		if lctx.Reached {
			return refusal(s, slot, b.used(i))
		}
	}
	return nil
}

// Usage is one bucket's state for a subject.
type Usage struct {
	Slot  Slot
	Used  int64 // calls counted in the current window
	Limit int64
}

// Usage reports every bucket of s without counting, in Plan order.
func (l *Limiter) Usage(ctx context.Context, s Subject) ([]Usage, error) {
	slots, err := l.rules.Plan(s)
	if err != nil {
		return nil, err
	}
	out := make([]Usage, 0, len(slots))
	for _, slot := range slots {
		n, err := l.store.Used(ctx, slot.Key, slot.Bucket.Rate)
		if err != nil {
			return nil, storeError(err)
		}
		out = append(out, Usage{Slot: slot, Used: n, Limit: slot.Bucket.Rate.Limit})
	}
	return out, nil
}

// storeError keeps a store's *gateway.Error and wraps anything else as
// EInternal, so that a failing counter refuses the call (fail closed).
func storeError(err error) error {
	var ge *gateway.Error
	if errors.As(err, &ge) {
		return err
	}
	return gateway.Wrap(gateway.EInternal, err, "the rate-limit counters could not be read; the call was refused")
}

// Sweeper runs Store.Sweep (ended windows, ended tasks' counters) every
// interval until ctx ends; report, when non-nil, receives each sweep's
// error. It returns at once; the sweeping runs in a goroutine that stops
// when ctx is cancelled. One sweep costs two DELETEs on indexed columns,
// so every replica may run its own.
func (l *Limiter) Sweeper(ctx context.Context, interval time.Duration, report func(error)) {
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := l.store.Sweep(ctx); err != nil && report != nil && ctx.Err() == nil {
					report(err)
				}
			}
		}
	}()
}
