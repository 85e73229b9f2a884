package replica

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/postgres"
)

// endTable is a SessionEndStore in memory that counts its lookups; end
// records an end as another replica would (no call through the cache).
type endTable struct {
	mu      sync.Mutex
	ended   map[string]bool
	lookups int
}

func newEndTable() *endTable { return &endTable{ended: map[string]bool{}} }

func (e *endTable) EndSession(_ context.Context, id string, _ time.Time) error {
	e.end(id)
	return nil
}

func (e *endTable) SessionEnded(_ context.Context, id string, _ time.Time) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lookups++
	return e.ended[id], nil
}

func (e *endTable) DeleteEndedSessions(context.Context, time.Time) (int64, error) { return 0, nil }

func (e *endTable) end(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ended[id] = true
}

func (e *endTable) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lookups
}

func mustEnded(t *testing.T, c *SessionEndCache, id string, want bool) {
	t.Helper()
	got, err := c.Ended(context.Background(), id)
	if err != nil || got != want {
		t.Fatalf("Ended(%s) = %v, %v; want %v", id, got, err, want)
	}
}

// While the feed is live, a session's requests read the table once; an
// end through this replica holds at once, an end elsewhere once the feed
// announces it.
func TestSessionEndCacheKeepsAnswersWhileLive(t *testing.T) {
	tbl := newEndTable()
	c := NewSessionEndCache(tbl, 0, true)
	for range 3 {
		mustEnded(t, c, "s1", false)
	}
	if n := tbl.count(); n != 1 {
		t.Fatalf("3 requests of a live session read the table %d times, want 1", n)
	}
	if err := c.End(context.Background(), "s1", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	mustEnded(t, c, "s1", true)

	mustEnded(t, c, "s2", false)
	tbl.end("s2")                // ended through another replica…
	mustEnded(t, c, "s2", false) // …not yet announced
	h := NewCoordinator(nopReplica{}, c, zap.NewNop())
	h.Changed(gateway.Change{Table: postgres.EndedSessionsTable, SessionID: "s2"})
	mustEnded(t, c, "s2", true)

	// An announcement that cannot name its session drops every answer.
	mustEnded(t, c, "s3", false)
	tbl.end("s3")
	h.Changed(gateway.Change{Table: postgres.EndedSessionsTable})
	mustEnded(t, c, "s3", true)
}

// While the listener is down, every request reads the table, so an end
// made through another replica is seen at once (fail closed): nothing
// kept before the loss answers, nothing is kept during it.
func TestSessionEndCacheReadsTableWhileListenerDown(t *testing.T) {
	tbl := newEndTable()
	c := NewSessionEndCache(tbl, 0, true)
	h := NewCoordinator(nopReplica{}, c, zap.NewNop())
	defer h.Close()
	mustEnded(t, c, "s1", false) // kept
	h.Lost()
	tbl.end("s1") // no announcement reaches this replica now
	mustEnded(t, c, "s1", true)
	before := tbl.count()
	for range 3 {
		mustEnded(t, c, "s2", false)
	}
	if n := tbl.count() - before; n != 3 {
		t.Fatalf("3 requests while the listener is down read the table %d times, want 3", n)
	}
	if c.Len() != 0 {
		t.Fatalf("%d answers kept while the listener is down, want 0", c.Len())
	}
}

// The PostgreSQL store's cache keeps nothing until the listener first
// listens (Resync): ends made elsewhere before that were never announced.
func TestSessionEndCacheStartsDownOnSharedStore(t *testing.T) {
	tbl := newEndTable()
	c := NewSessionEndCache(tbl, 0, false)
	mustEnded(t, c, "s1", false)
	mustEnded(t, c, "s1", false)
	if n := tbl.count(); n != 2 {
		t.Fatalf("before the first Resync 2 requests read the table %d times, want 2", n)
	}
	c.SetLive(true)
	mustEnded(t, c, "s1", false)
	mustEnded(t, c, "s1", false)
	if n := tbl.count(); n != 3 {
		t.Fatalf("after SetLive(true) the table was read %d times in all, want 3", n)
	}
}

// A lookup under way when an end is announced keeps no answer: it may
// have read the table before the end committed.
type slowEndTable struct {
	*endTable
	reading chan struct{}
	release chan struct{}
}

func (s slowEndTable) SessionEnded(ctx context.Context, id string, now time.Time) (bool, error) {
	ended, err := s.endTable.SessionEnded(ctx, id, now)
	close(s.reading)
	<-s.release
	return ended, err
}

func TestSessionEndCacheDropsRacingLookup(t *testing.T) {
	tbl := slowEndTable{newEndTable(), make(chan struct{}), make(chan struct{})}
	c := NewSessionEndCache(tbl, 0, true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		mustEnded(t, c, "s1", false) // read before the end
	}()
	<-tbl.reading
	tbl.end("s1")
	c.Forget("s1") // the announcement arrives while the lookup is under way
	close(tbl.release)
	<-done
	if c.Len() != 0 {
		t.Fatal("a lookup that overlapped an announced end kept its stale answer")
	}
}
