package policy

import (
	"crypto/sha256"
	"strconv"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpgate/mcpgate/gateway"
)

// DefaultCacheSize is the number of decisions (and visible tool sets) the
// engine keeps when Options.CacheSize is 0.
const DefaultCacheSize = 8192

// DefaultCacheBytes is the memory budget of each of the two caches
// (decisions, visible tool sets) when Options.CacheBytes is 0.
const DefaultCacheBytes = 32 << 20

// decisionCache memoises policy results by their complete input. The bundle
// and its data are fixed for an Engine's lifetime, so for a bundle that
// calls no nondeterministic builtin (time, http.send, random, …; the engine
// turns the cache off for bundles that do) an identical input always yields
// the identical result: caching by the full input is exact, never stale. A
// reload builds a new Engine and so a new cache.
//
// A key is derived from the input itself: the function that writes the
// input for evaluation also writes the bytes the key digests (inputWriter),
// so the key holds every member of the input and nothing else.
//
// Its memory is bounded whatever the callers send. A key is the SHA-256
// digest of that encoding (keyWriter), 32 bytes however large the
// arguments are; two different inputs sharing a digest would need a
// SHA-256 collision. Each entry is charged its key, its value's strings
// and a fixed overhead, and a cache evicts its least recently used entries
// once the charges pass its byte budget, as well as beyond its entry
// count. An entry that alone would take more than a sixteenth of the
// budget is not cached at all (it is still answered, by evaluation).
type decisionCache struct {
	decisions *sizedLRU[*gateway.Decision]
	visible   *sizedLRU[map[string]bool]
}

func newDecisionCache(size int, budget int64) *decisionCache {
	if size < 0 {
		return nil
	}
	if size == 0 {
		size = DefaultCacheSize
	}
	if budget <= 0 {
		budget = DefaultCacheBytes
	}
	return &decisionCache{
		decisions: newSizedLRU[*gateway.Decision](size, budget),
		visible:   newSizedLRU[map[string]bool](size, budget),
	}
}

// cacheKey is a digest of a complete policy input.
type cacheKey [sha256.Size]byte

// entryOverhead is what an entry costs beyond its strings: the list
// element, the map slot, the key and the value's headers.
const entryOverhead = 256

// sizedLRU is an LRU bounded both in entries and in accounted bytes. It is
// safe for concurrent use.
type sizedLRU[V any] struct {
	mu     sync.Mutex
	lru    *simplelru.LRU[cacheKey, sized[V]]
	bytes  int64
	budget int64
}

type sized[V any] struct {
	v    V
	cost int64
}

func newSizedLRU[V any](size int, budget int64) *sizedLRU[V] {
	c := &sizedLRU[V]{budget: budget}
	c.lru, _ = simplelru.NewLRU(size, func(_ cacheKey, e sized[V]) { c.bytes -= e.cost })
	return c
}

func (c *sizedLRU[V]) get(k cacheKey) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(k)
	return e.v, ok
}

// add caches v under k at the given cost (entryOverhead is added), then
// evicts the oldest entries until the cache is within its budget.
func (c *sizedLRU[V]) add(k cacheKey, v V, cost int64) {
	cost += entryOverhead
	if cost > c.budget/16 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.lru.Peek(k); ok {
		c.bytes -= old.cost
	}
	c.lru.Add(k, sized[V]{v: v, cost: cost})
	c.bytes += cost
	for c.bytes > c.budget {
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			break
		}
	}
}

func (c *sizedLRU[V]) stats() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.bytes
}

// decisionCost is what a cached decision holds in strings.
func decisionCost(d *gateway.Decision) int64 {
	n := int64(len(d.ID) + len(d.Tier))
	for _, r := range d.Reasons {
		n += int64(32 + len(r.Code) + len(r.Message))
	}
	for _, f := range d.Obligations.Redact {
		n += int64(16 + len(f))
	}
	return n
}

// visibleCost is what a cached visible tool set holds: its names and the
// map's slots.
func visibleCost(v map[string]bool) int64 {
	n := int64(0)
	for name := range v {
		n += int64(48 + len(name))
	}
	return n
}

// CacheStats describes the decision cache's current contents.
type CacheStats struct {
	// Decisions and DecisionBytes are the cached tools/call decisions and
	// the bytes they are charged (keys, strings and per-entry overhead).
	Decisions     int
	DecisionBytes int64
	// Visible and VisibleBytes are the same for cached tools/list sets.
	Visible      int
	VisibleBytes int64
}

// CacheStats reports how many entries the decision cache holds and the
// bytes they are charged; all zero when caching is off.
func (e *Engine) CacheStats() CacheStats {
	if e.cache == nil {
		return CacheStats{}
	}
	var st CacheStats
	st.Decisions, st.DecisionBytes = e.cache.decisions.stats()
	st.Visible, st.VisibleBytes = e.cache.visible.stats()
	return st
}

// callKey is the cache key of the tools/call input writeCall describes.
func (e *Engine) callKey(p *gateway.Principal, c *gateway.Caller, tool ToolRef, args *ast.Term) (cacheKey, bool) {
	w := getKeyWriter()
	defer putKeyWriter(w)
	e.writeCall(w, p, c, tool, args)
	return w.sum()
}

// visibleKey is the cache key of the tools/list input: writeBase, without
// input.tools, which is the engine's catalog term, built once in New and
// the same in every tools/list input of this engine and so of this cache;
// with a ToolSet, the list's version (toolsNow; 0 without one) stands
// for it, so a changed registry is evaluated anew.
func (e *Engine) visibleKey(p *gateway.Principal, c *gateway.Caller, version uint64) (cacheKey, bool) {
	w := getKeyWriter()
	defer putKeyWriter(w)
	e.writeBase(w, p, c)
	if version != 0 {
		w.str("tools_version", strconv.FormatUint(version, 10))
	}
	w.close()
	return w.sum()
}

// keyWriters keeps keyWriters with their buffers, so that a cache key
// costs no allocation once the buffers have grown to the inputs' size.
var keyWriters = sync.Pool{New: func() any { return &keyWriter{b: make([]byte, 0, 512)} }}

func getKeyWriter() *keyWriter {
	w := keyWriters.Get().(*keyWriter)
	w.b, w.scratch, w.keys, w.failed = w.b[:0], w.scratch[:0], w.keys[:0], false
	return w
}

// putKeyWriter returns w to keyWriters unless one huge input grew its
// buffers, which are then left to the collector.
func putKeyWriter(w *keyWriter) {
	if cap(w.b)+cap(w.scratch) > 64<<10 || cap(w.keys) > 1024 {
		return
	}
	clear(w.keys[:cap(w.keys)]) // hold no permission names
	keyWriters.Put(w)
}
