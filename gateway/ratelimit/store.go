package ratelimit

import (
	"context"
	"time"

	"github.com/ulule/limiter/v3"
)

// Counters is what the limiter store needs from the audit store (the
// PostgreSQL and embedded stores implement it; STYLE.md, "Interfaces belong
// to their consumer"). A counter is identified by its key and the start of
// its window. When ctx comes from the audit store's reservation
// transaction (server.Store.ReserveAndRecord), every method runs inside
// that transaction, so the change commits or rolls back with the call's
// audit row; otherwise each call commits on its own. Errors are
// *gateway.Error: EUnavailable when the database cannot be reached.
type Counters interface {
	// AddRateCount adds delta (may be negative) to the counter, creating it
	// at delta, and returns the new count. expires is when the window ends
	// and the row may be swept; the zero time means never. Concurrent adds
	// to one counter are serialised (row lock on PostgreSQL, the single
	// write connection on SQLite); none is lost.
	AddRateCount(ctx context.Context, key string, window, expires time.Time, delta int64) (int64, error)
	// RateCount returns the counter's value, 0 when it does not exist.
	RateCount(ctx context.Context, key string, window time.Time) (int64, error)
	// DeleteRateCount removes the counter; removing a missing one is no error.
	DeleteRateCount(ctx context.Context, key string, window time.Time) error
	// ReserveCounts takes one slot of each counter of reqs, in order, all
	// or nothing: it adds one to each and stops after the first whose new
	// count exceeds its Limit, whose slot and those before it it then
	// takes back (the refund of seed 001, "Rate limits"). It returns the
	// new counts of the counters it reached: len(reqs) of them when every
	// counter had room; otherwise fewer, the last being the full counter's
	// count with this call included (its Limit + 1 or more). Concurrent
	// reservations of one counter are serialised as in AddRateCount; a
	// store may do the whole reservation in one round trip.
	ReserveCounts(ctx context.Context, reqs []CountRequest) ([]int64, error)
	// DeleteEndedTaskCounts removes the per-task counters (those written
	// with a TaskID) whose task is in a terminal state (completed, failed
	// or cancelled) last changed at or before t, and returns how many it
	// removed. Counters of a running or unknown task stay.
	DeleteEndedTaskCounts(ctx context.Context, before time.Time) (int64, error)
	// DeleteExpiredRateCounts removes the counters whose window ended at
	// or before t (windows are half-open, [start, end)) and returns how
	// many it removed.
	DeleteExpiredRateCounts(ctx context.Context, before time.Time) (int64, error)
}

// CountRequest is one counter slot of a reservation (Counters.ReserveCounts):
// the counter's key and window start, when the window ends (the zero time
// for never), and the most calls the window admits. A per-task counter also
// names its task (WorkspaceID, TaskID; both empty otherwise), which is how
// Counters.DeleteEndedTaskCounts finds it once the task has ended.
type CountRequest struct {
	Key         string
	Window      time.Time
	Expires     time.Time
	Limit       int64
	WorkspaceID string
	TaskID      string
}

// TaskCounterRetention is how long a task's per-task counters are kept after
// the task reached a terminal state: the 24 hours seed 001 gives the task's
// idempotency keys ("Deploy confirmation protocol"), so that a late retry
// of an ended task still meets its spent budget.
const TaskCounterRetention = 24 * time.Hour

// Store is a limiter.Store (ulule/limiter/v3) whose counters live in the
// audit store. Windows are calendar windows in UTC: a rate with Period p
// counts from t.Truncate(p) to t.Truncate(p)+p (an hour or a UTC day for
// the periods this package uses); a Period ≤ 0 means one window for ever
// (per-task caps). As in ulule's own stores, Get and Increment count
// calls beyond the limit and report Reached; the reservation transaction
// rolls such increments back. It is safe for concurrent use.
type Store struct {
	counters Counters
	prefix   string
	now      func() time.Time
}

var _ limiter.Store = (*Store)(nil)

// epoch is the window start of rates without a period.
var epoch = time.Unix(0, 0).UTC()

// NewStore returns a limiter store over c. prefix qualifies every key
// ("mcpgate" when empty), so that two users of one database cannot share
// counters by accident; now is the clock that picks the window (time.Now
// when nil; tests inject a fake one to cross window boundaries).
func NewStore(c Counters, prefix string, now func() time.Time) *Store {
	if prefix == "" {
		prefix = "mcpgate"
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
// after it (limiter.Store). When ctx carries a reservation of this store
// that holds key (Limiter.Reserve), the first such Get reserves every slot
// of the reservation at once and each Get reads its own slot's result.
func (s *Store) Get(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	if b := batchFrom(ctx, s); b != nil {
		if i := b.index(key, rate); i >= 0 {
			return b.get(ctx, i)
		}
	}
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
