package ratelimit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ulule/limiter/v3"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/config"
)

// recording counters keep counts in memory, implement ReserveCounts' all
// or nothing rule, and record every call the limiter makes.
type recording struct {
	failing // methods the tests below must not reach fail
	counts  map[string]int64
	batches [][]CountRequest
	adds    int
}

func (r *recording) ReserveCounts(_ context.Context, reqs []CountRequest) ([]int64, error) {
	r.batches = append(r.batches, reqs)
	var out []int64
	for i, q := range reqs {
		r.counts[q.Key]++
		out = append(out, r.counts[q.Key])
		if r.counts[q.Key] > q.Limit {
			for _, taken := range reqs[:i+1] {
				r.counts[taken.Key]--
			}
			break
		}
	}
	return out, nil
}

func (r *recording) AddRateCount(_ context.Context, key string, _, _ time.Time, delta int64) (int64, error) {
	r.adds++
	r.counts[key] += delta
	return r.counts[key], nil
}

// One call is one ReserveCounts, whatever its number of buckets, with the
// slots in Plan order, their windows at the clock's now and their limits.
func TestReserveIsOneBatch(t *testing.T) {
	now := time.Date(2025, 3, 4, 13, 30, 0, 0, time.UTC)
	limits := config.DefaultLimits()
	limits.WorkspaceOpsDaily = 2
	rec := &recording{failing: failing{gateway.Errorf(gateway.EInternal, "not expected")}, counts: map[string]int64{}}
	l := New(rec, limits, func() time.Time { return now })
	sub := Subject{WorkspaceID: "ws-a", TaskID: "t1", ProfileID: "p1", Tool: "schedule.pause", Tier: gateway.TierOps}
	for range 2 {
		if err := l.Reserve(context.Background(), sub); err != nil {
			t.Fatalf("Reserve = %v", err)
		}
	}
	day, hour := time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC), time.Date(2025, 3, 4, 13, 0, 0, 0, time.UTC)
	want := []CountRequest{
		{Key: "mcpgate:task:ws-a/t1:task.ops", Window: epoch, Limit: 10, WorkspaceID: "ws-a", TaskID: "t1"},
		{Key: "mcpgate:workspace:ws-a:workspace_day.ops", Window: day, Expires: day.Add(24 * time.Hour), Limit: 2},
		{Key: "mcpgate:profile:ws-a/p1:profile_hour.ops", Window: hour, Expires: hour.Add(time.Hour), Limit: 30},
	}
	if len(rec.batches) != 2 || rec.adds != 0 {
		t.Fatalf("two calls made %d batches and %d single adds, want 2 and 0", len(rec.batches), rec.adds)
	}
	for i, q := range rec.batches[0] {
		if q != want[i] {
			t.Errorf("slot %d = %+v, want %+v", i, q, want[i])
		}
	}
	err := l.Reserve(context.Background(), sub)
	var ge *gateway.Error
	if !errors.As(err, &ge) || ge.Bucket != "workspace_day.ops" || ge.Message != "Workspace daily limit reached for this MCP tool tier (2/2)" {
		t.Fatalf("third call = %v, want the workspace/day refusal (2/2)", err)
	}
}

// A plain ulule Get outside a reservation, or for a key the reservation
// does not hold, still counts on its own.
func TestGetOutsideBatch(t *testing.T) {
	rec := &recording{failing: failing{gateway.Errorf(gateway.EInternal, "not expected")}, counts: map[string]int64{}}
	s := NewStore(rec, "", nil)
	rate := limiter.Rate{Limit: 5, Period: time.Hour}
	b := s.newBatch(Subject{}, []Slot{{Bucket: Bucket{Name: "x", Rate: rate}, Key: "held"}})
	ctx := b.with(context.Background())
	if c, err := limiter.New(s, rate).Get(ctx, "other"); err != nil || c.Remaining != 4 || rec.adds != 1 {
		t.Fatalf("Get of a key outside the batch = %+v, %v (adds %d), want a single add", c, err, rec.adds)
	}
	if _, err := limiter.New(s, limiter.Rate{Limit: 6, Period: time.Hour}).Get(ctx, "held"); err != nil || rec.adds != 2 {
		t.Fatalf("Get of the held key at another rate: %v (adds %d), want a single add", err, rec.adds)
	}
	if c, err := limiter.New(s, rate).Get(ctx, "held"); err != nil || c.Remaining != 3 || len(rec.batches) != 1 {
		t.Fatalf("Get of the held key = %+v, %v (batches %d), want it answered by one batch on top of the single add (3 left)", c, err, len(rec.batches))
	}
}

// Asking for a slot after the full one is a caller's mistake, not a count.
func TestBatchSlotAfterFull(t *testing.T) {
	rec := &recording{failing: failing{gateway.Errorf(gateway.EInternal, "not expected")}, counts: map[string]int64{"mcpgate:a": 1}}
	s := NewStore(rec, "", nil)
	one := limiter.Rate{Limit: 1}
	b := s.newBatch(Subject{}, []Slot{{Bucket: Bucket{Rate: one}, Key: "a"}, {Bucket: Bucket{Rate: one}, Key: "b"}})
	ctx := b.with(context.Background())
	if c, err := s.Get(ctx, "a", one); err != nil || !c.Reached {
		t.Fatalf("full slot = %+v, %v, want Reached", c, err)
	}
	if _, err := s.Get(ctx, "b", one); gateway.ErrorCodeOf(err) != gateway.EInternal {
		t.Fatalf("slot after the full one = %v, want EInternal", err)
	}
}
