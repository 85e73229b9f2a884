package replica

import (
	"context"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/mcpgate/mcpgate/gateway/store"
)

// SessionEndStore is what the store-backed mcp.SessionEnds needs: the
// table of ended sessions every replica reads (both stores implement it).
type SessionEndStore = store.Sessions

// StoreSessionEnds returns the mcp.SessionEnds kept in s, shared by every
// replica on the same database, so a DELETE on one replica holds on all.
// Every Ended reads the store; the wiring uses SessionEndCache instead.
func StoreSessionEnds(s SessionEndStore) StoreEnds { return StoreEnds{s} }

// StoreEnds is StoreSessionEnds' mcp.SessionEnds.
type StoreEnds struct{ s SessionEndStore }

// End implements mcp.SessionEnds.
func (e StoreEnds) End(ctx context.Context, id string, until time.Time) error {
	return e.s.EndSession(ctx, id, until)
}

// Ended implements mcp.SessionEnds.
func (e StoreEnds) Ended(ctx context.Context, id string) (bool, error) {
	return e.s.SessionEnded(ctx, id, time.Now())
}

// DefaultSessionEndCacheSize is how many "not ended" answers a
// SessionEndCache keeps (least recently used first out); a session past
// it is looked up in the store again on its next request.
const DefaultSessionEndCacheSize = 16384

// SessionEndCache is the mcp.SessionEnds of the wiring: the store's table of
// ended sessions, with this replica's "not ended" answers kept in memory,
// so that a session's requests do not each read the table.
//
// An answer is dropped when the session is ended: through this replica
// (End) at once, through another one when the change feed announces the
// row (SessionEnded, within the feed's latency, the same bound as every
// other change made elsewhere). While the feed is down (SetLive(false);
// the changes handler calls it on Lost and Resync) nothing is kept and
// every Ended reads the store, so an end is never missed: it fails
// closed, as the direct lookup does. It is safe for concurrent use.
type SessionEndCache struct {
	s SessionEndStore

	mu   sync.Mutex
	live bool   // the feed announces ended sessions: answers may be kept
	gen  uint64 // bumped by every drop, so a lookup under way when one happened keeps nothing
	open *lru.Cache[string, struct{}]
}

// NewSessionEndCache returns the cache over s, holding at most size
// answers (DefaultSessionEndCacheSize when size ≤ 0). live says whether
// the change feed already announces ended sessions: true for the
// embedded store (one process, whose ends all pass through End), false
// for PostgreSQL until the listener's first Resync.
func NewSessionEndCache(s SessionEndStore, size int, live bool) *SessionEndCache {
	if size <= 0 {
		size = DefaultSessionEndCacheSize
	}
	open, _ := lru.New[string, struct{}](size) // size > 0: cannot fail
	return &SessionEndCache{s: s, live: live, open: open}
}

// End implements mcp.SessionEnds: it records the end in the store, then
// drops this replica's answer for id, so the next request of the session
// here is refused at once.
func (c *SessionEndCache) End(ctx context.Context, id string, until time.Time) error {
	err := c.s.EndSession(ctx, id, until)
	c.Forget(id) // also on error: the row may have been written
	return err
}

// Ended implements mcp.SessionEnds: a kept "not ended" answer, else the
// store's, kept when the feed is live and nothing was dropped meanwhile.
func (c *SessionEndCache) Ended(ctx context.Context, id string) (bool, error) {
	c.mu.Lock()
	if c.live {
		if _, ok := c.open.Get(id); ok {
			c.mu.Unlock()
			return false, nil
		}
	}
	gen := c.gen
	c.mu.Unlock()
	ended, err := c.s.SessionEnded(ctx, id, time.Now())
	if err != nil || ended {
		return ended, err
	}
	c.mu.Lock()
	if c.live && c.gen == gen {
		c.open.Add(id, struct{}{})
	}
	c.mu.Unlock()
	return false, nil
}

// Forget drops the answer kept for id; "" drops every answer (an
// announcement that could not name the session).
func (c *SessionEndCache) Forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if id == "" {
		c.open.Purge()
		return
	}
	c.open.Remove(id)
}

// SetLive drops every answer and says whether the feed announces ended
// sessions from now on: false while it is down (every Ended then reads
// the store), true once it listens again.
func (c *SessionEndCache) SetLive(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.live = live
	c.open.Purge()
}

// Len is how many "not ended" answers are kept.
func (c *SessionEndCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open.Len()
}
