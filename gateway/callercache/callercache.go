// Package callercache keeps the callers the store loaded (gateway.Caller:
// workspace, member, profiles, seat type, plan, overrides, task) in memory
// for a short time, so that the request path does not read the store on
// every call.
//
// It imports only the domain package and two small libraries (an LRU and
// singleflight); the loader it wraps is declared here, by its consumer.
package callercache

import (
	"context"
	"encoding/binary"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/sync/singleflight"

	"github.com/mcpgate/mcpgate/gateway"
)

// Loader loads what the policy needs about a principal from the store. The
// PostgreSQL and embedded stores implement it. The cache passes it a
// principal with only WorkspaceID, Subject, TaskID and ProfileID set (the
// cache key), so its result must depend on nothing else. Its errors are
// never cached.
type Loader interface {
	LoadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error)
}

// DefaultTTL is the usual lifetime of an entry: a change made outside
// this process (another replica, the database directly) is seen within
// that time.
const DefaultTTL = time.Second

// DefaultSize is the number of entries kept when Options.Size is 0. One
// entry is one (workspace, user, task, requested profile); a few hundred
// bytes each.
const DefaultSize = 10000

// Options configures New.
type Options struct {
	// TTL is how long an entry is used after its load began. 0 or less
	// turns the cache off: every LoadCaller reads the loader.
	TTL time.Duration
	// Size bounds the number of entries; the least recently used goes
	// first. 0 or less means DefaultSize.
	Size int
	// Now returns the current time; nil means time.Now. Tests inject a
	// clock here.
	Now func() time.Time
}

// Cache is a Loader that answers from memory for up to Options.TTL.
//
// Entries are keyed by exactly what the store's LoadCaller reads of a
// principal: workspace, subject, task and requested profile. The
// returned *gateway.Caller is shared by every call that hits its entry:
// callers must not modify it (the pipeline and the policy engine only
// read it).
//
// Errors are not cached: an unknown workspace or a store failure is read
// again on the next call, so a fixed workspace cannot stay refused after
// an operator registers it, and a store that recovers is used at once. A
// flood of calls for one unknown workspace therefore reaches the store,
// but concurrent misses of one key share a single load (singleflight), so
// it reaches the store at most once per load time, not once per call.
//
// Invalidation (InvalidateWorkspace, InvalidateAll) is immediate for the
// calls that start after it returns: their entries are gone, and a load
// that began before the invalidation is neither stored nor shared with
// them. A Cache is safe for concurrent use; the zero value is not usable,
// call New.
type Cache struct {
	loader  Loader
	ttl     time.Duration
	now     func() time.Time
	flights singleflight.Group

	mu      sync.Mutex
	entries *simplelru.LRU[key, entry] // nil when the cache is off
	// gen counts invalidations. A load remembers the generation it began
	// in and stores its result only if no invalidation happened since;
	// the generation is part of the singleflight key, so a call that
	// starts after an invalidation never joins a load from before it.
	gen uint64
}

var _ Loader = (*Cache)(nil)

// key is what the store's LoadCaller reads of a principal (its query
// parameters, and ProfileRequested); nothing else may change its result.
type key struct {
	workspace, subject, task, profile string
}

func keyOf(p *gateway.Principal) key {
	return key{workspace: p.WorkspaceID, subject: p.Subject, task: p.TaskID, profile: p.ProfileID}
}

// flightKey is k and gen as one string, each part length-prefixed so that
// no two different keys share it.
func (k key) flightKey(gen uint64) string {
	b := make([]byte, 0, len(k.workspace)+len(k.subject)+len(k.task)+len(k.profile)+24)
	for _, s := range []string{k.workspace, k.subject, k.task, k.profile} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return string(strconv.AppendUint(b, gen, 10))
}

type entry struct {
	caller  *gateway.Caller
	expires time.Time
}

// New returns a cache in front of loader.
func New(loader Loader, opts Options) *Cache {
	c := &Cache{loader: loader, ttl: opts.TTL, now: opts.Now}
	if c.now == nil {
		c.now = time.Now
	}
	if c.ttl <= 0 {
		return c
	}
	size := opts.Size
	if size <= 0 {
		size = DefaultSize
	}
	c.entries, _ = simplelru.NewLRU[key, entry](size, nil) // errors only for size <= 0
	return c
}

// TTL returns the lifetime of an entry; 0 when the cache is off.
func (c *Cache) TTL() time.Duration {
	if c.entries == nil {
		return 0
	}
	return c.ttl
}

// LoadCaller returns p's caller: from memory when an entry of p's key was
// loaded less than TTL ago and not invalidated since, else from the
// loader (one load for all concurrent misses of the key). The result must
// not be modified. Errors are the loader's, unchanged and not cached, or
// ctx's error when ctx ends while the call waits for a load.
func (c *Cache) LoadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error) {
	if c.entries == nil {
		return c.loader.LoadCaller(ctx, p)
	}
	k := keyOf(p)
	now := c.now()
	c.mu.Lock()
	if e, ok := c.entries.Get(k); ok {
		if now.Before(e.expires) {
			c.mu.Unlock()
			return e.caller, nil
		}
		c.entries.Remove(k)
	}
	gen := c.gen
	c.mu.Unlock()

	ch := c.flights.DoChan(k.flightKey(gen), func() (any, error) {
		return c.fill(ctx, k, gen)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*gateway.Caller), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fill loads k for every call waiting on its flight and stores the result
// unless an invalidation happened since generation gen. The load runs
// with ctx's values and deadline but not its cancellation: the call that
// started it may give up (its client went away) while others still wait.
// The entry expires TTL after the load began, so that what it holds is
// never older than TTL.
func (c *Cache) fill(ctx context.Context, k key, gen uint64) (*gateway.Caller, error) {
	lctx := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		lctx, cancel = context.WithDeadline(lctx, dl)
		defer cancel()
	}
	began := c.now()
	caller, err := c.loader.LoadCaller(lctx, &gateway.Principal{
		WorkspaceID: k.workspace, Subject: k.subject, TaskID: k.task, ProfileID: k.profile,
	})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.gen == gen {
		c.entries.Add(k, entry{caller: caller, expires: began.Add(c.ttl)})
	}
	c.mu.Unlock()
	return caller, nil
}

// InvalidateWorkspace drops every entry of workspace ws; "" drops every
// entry (InvalidateAll), the admin API's value for global changes (seat
// types, org plans). Loads that began before the call are not stored. It
// costs one pass over the entries.
//
// This is the seam for changes made elsewhere: the admin API of this
// process calls it (through the server) after each successful change, and
// a listener for changes made through other replicas calls it the same
// way when one is announced.
func (c *Cache) InvalidateWorkspace(ws string) {
	if ws == "" {
		c.InvalidateAll()
		return
	}
	if c.entries == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, k := range c.entries.Keys() {
		if k.workspace == ws {
			c.entries.Remove(k)
		}
	}
}

// InvalidateAll drops every entry, for changes that reach every workspace
// (seat types, org plans) or when it is not known what changed. Loads that
// began before the call are not stored.
func (c *Cache) InvalidateAll() {
	if c.entries == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.entries.Purge()
}

// Len returns the number of entries held, expired ones included until
// they are used or pushed out.
func (c *Cache) Len() int {
	if c.entries == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries.Len()
}
