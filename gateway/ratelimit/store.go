package ratelimit

import (
	"context"
	"time"

	"github.com/ulule/limiter/v3"
)

// Counters is what Store needs from the audit store (the PostgreSQL and
// embedded stores implement it): single counters, read and changed one
// statement at a time, each committing on its own. A counter is identified
// by its key and the start of its window. The request path does not use
// them: its slots are taken by the audit store's reservation
// (gateway.Reservation). Errors are *gateway.Error: EUnavailable when the
// database cannot be reached.
type Counters interface {
	// AddRateCount adds delta (may be negative) to the counter, creating it
	// at delta, and returns the new count. expires is when the window ends
	// and the row may be swept; the zero time means never. Concurrent adds
	// to one counter, and reservations that take it, are serialised (row
	// lock on PostgreSQL, the single write connection on SQLite); none is
	// lost.
	AddRateCount(ctx context.Context, key string, window, expires time.Time, delta int64) (int64, error)
	// RateCount returns the counter's value, 0 when it does not exist.
	RateCount(ctx context.Context, key string, window time.Time) (int64, error)
	// DeleteRateCount removes the counter; removing a missing one is no error.
	DeleteRateCount(ctx context.Context, key string, window time.Time) error
	// DeleteEndedTaskCounts removes the per-task counters (those reserved
	// with a TaskID) whose task is in a terminal state (completed, failed
	// or cancelled) last changed at or before before, and returns how many
	// it removed. Counters of a running or unknown task stay.
	DeleteEndedTaskCounts(ctx context.Context, before time.Time) (int64, error)
	// DeleteExpiredRateCounts removes the counters whose window ended at
	// or before before (windows are half-open, [start, end)) and returns
	// how many it removed.
	DeleteExpiredRateCounts(ctx context.Context, before time.Time) (int64, error)
}

// TaskCounterRetention is how long a task's per-task counters are kept after
// the task reached a terminal state: the 24 hours the task's
// idempotency keys live (docs/requirements.md#idempotency-keys), so that a late retry
// of an ended task still meets its spent budget.
const TaskCounterRetention = 24 * time.Hour

// Store is a limiter.Store (ulule/limiter/v3) whose counters live in the
// audit store. Windows are calendar windows in UTC: a rate with Period p
// counts from t.Truncate(p) to t.Truncate(p)+p (an hour or a UTC day for
// the periods this package uses); a Period ≤ 0 means one window for ever
// (per-task caps). As in ulule's own stores, Get and Increment count
// calls beyond the limit and report Reached. Its jobs besides ulule's
// contract: reading a plan's usage and sweeping ended counters. It is safe
// for concurrent use.
type Store struct {
	counters Counters
	prefix   string
	now      func() time.Time
}

var _ limiter.Store = (*Store)(nil)

// epoch is the window start of rates without a period.
var epoch = time.Unix(0, 0).UTC()

// NewStore returns a limiter store over c. prefix qualifies every key
// (KeyPrefix when empty, the request path's own), so that two users of one database cannot share
// counters by accident; now is the clock that picks the window (time.Now
// when nil; tests inject a fake one to cross window boundaries).
func NewStore(c Counters, prefix string, now func() time.Time) *Store {
	if prefix == "" {
		prefix = KeyPrefix
	}
	if now == nil {
		now = time.Now
	}
	return &Store{counters: c, prefix: prefix, now: now}
}

// window is one counting window of a rate.
type window struct {
	start, end time.Time // end is zero for a rate without a period
}

// windowOf returns the window of rate that contains the store's now.
func (s *Store) windowOf(rate limiter.Rate) window { return windowAt(rate, s.now()) }

// windowAt returns the window of rate that contains t.
func windowAt(rate limiter.Rate, t time.Time) window {
	if rate.Period <= 0 {
		return window{start: epoch}
	}
	start := t.UTC().Truncate(rate.Period)
	return window{start: start, end: start.Add(rate.Period)}
}

// context reports count against rate the way ulule's stores do: Remaining
// is what is left (0 once reached), Reached means count > Limit, Reset is
// the window end in Unix seconds (0 for a window that never ends).
func (w window) context(rate limiter.Rate, count int64) limiter.Context {
	c := limiter.Context{Limit: rate.Limit, Remaining: max(rate.Limit-count, 0), Reached: count > rate.Limit}
	if !w.end.IsZero() {
		c.Reset = w.end.Unix()
	}
	return c
}

func (s *Store) key(k string) string { return s.prefix + ":" + k }

// Get counts one call for key in the current window and returns the state
// after it (limiter.Store).
func (s *Store) Get(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	return s.Increment(ctx, key, 1, rate)
}

// Increment adds count (negative to refund) to key's counter in the
// current window and returns the state after it (limiter.Store).
func (s *Store) Increment(ctx context.Context, key string, count int64, rate limiter.Rate) (limiter.Context, error) {
	w := s.windowOf(rate)
	n, err := s.counters.AddRateCount(ctx, s.key(key), w.start, w.end, count)
	if err != nil {
		return limiter.Context{}, err
	}
	return w.context(rate, n), nil
}

// Peek returns key's state in the current window without counting
// (limiter.Store).
func (s *Store) Peek(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	w := s.windowOf(rate)
	n, err := s.Used(ctx, key, rate)
	if err != nil {
		return limiter.Context{}, err
	}
	return w.context(rate, n), nil
}

// Reset sets key's counter in the current window back to zero
// (limiter.Store).
func (s *Store) Reset(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	w := s.windowOf(rate)
	if err := s.counters.DeleteRateCount(ctx, s.key(key), w.start); err != nil {
		return limiter.Context{}, err
	}
	return w.context(rate, 0), nil
}

// Used returns the number of calls counted for key in the current window,
// which limiter.Context does not carry (the refusal messages report it).
func (s *Store) Used(ctx context.Context, key string, rate limiter.Rate) (int64, error) {
	return s.counters.RateCount(ctx, s.key(key), s.windowOf(rate).start)
}

// Usage is one bucket's state for a plan.
type Usage struct {
	Slot  Slot
	Used  int64 // calls counted in the slot's window
	Limit int64
}

// Usage reports every slot of p without counting, in p's order, each in
// the window p fixed.
func (s *Store) Usage(ctx context.Context, p Plan) ([]Usage, error) {
	out := make([]Usage, 0, len(p.Slots))
	for _, slot := range p.Slots {
		n, err := s.counters.RateCount(ctx, s.key(slot.Key), slot.Window)
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

// Sweep deletes the counters of windows that ended sweepLag ago, and the
// per-task counters of tasks that ended TaskCounterRetention ago, and
// returns how many it deleted.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	now := s.now().UTC()
	windows, err := s.counters.DeleteExpiredRateCounts(ctx, now.Add(-sweepLag))
	if err != nil {
		return windows, err
	}
	tasks, err := s.counters.DeleteEndedTaskCounts(ctx, now.Add(-TaskCounterRetention))
	return windows + tasks, err
}

// Sweeper runs Sweep (ended windows, ended tasks' counters) every interval
// until ctx ends; report, when non-nil, receives each sweep's error. It
// returns at once; the sweeping runs in a goroutine that stops when ctx is
// cancelled. One sweep costs two DELETEs on indexed columns, so every
// replica may run its own.
func (s *Store) Sweeper(ctx context.Context, interval time.Duration, report func(error)) {
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := s.Sweep(ctx); err != nil && report != nil && ctx.Err() == nil {
					report(err)
				}
			}
		}
	}()
}
