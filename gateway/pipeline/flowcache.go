package pipeline

import (
	"slices"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// flowCacheTTL is how long a session's history as this process last read
// it stands in for a read of the store (loadSession). Its reads cannot be
// stale in a decision that counts: the reservation compares the number
// of labels the call was decided on with the store's under the key's
// lock, and a call decided on fewer is decided again on a fresh read
// (errFlowChanged). Its tools may lag another replica's calls by this
// much; the shipped policies read only its reads. Kept short so that a
// history deleted and built up again meanwhile (an ended task's, an idle
// one's) is never mistaken for the cached one.
const flowCacheTTL = time.Second

// flowCacheMax bounds the histories kept; past it the cache starts over.
const flowCacheMax = 10_000

// flowCache holds the session histories read within flowCacheTTL, by
// flow key. Its zero value is ready; it is safe for concurrent use. The
// histories are shared and never modified.
type flowCache struct {
	mu sync.Mutex
	m  map[string]flowCached
}

type flowCached struct {
	s  *gateway.FlowSession
	at time.Time
}

// get returns key's history if it was read within flowCacheTTL of now.
func (fc *flowCache) get(key string, now time.Time) *gateway.FlowSession {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	e, ok := fc.m[key]
	if !ok || now.Sub(e.at) >= flowCacheTTL || now.Before(e.at) {
		return nil
	}
	return e.s
}

// put keeps s as key's history, read at now.
func (fc *flowCache) put(key string, s *gateway.FlowSession, now time.Time) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.m == nil || len(fc.m) >= flowCacheMax {
		fc.m = make(map[string]flowCached)
	}
	fc.m[key] = flowCached{s: s, at: now}
}

// drop forgets key's history.
func (fc *flowCache) drop(key string) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	delete(fc.m, key)
}

// changes reports whether r, once its reservation commits, changes the
// history s it was decided on: a label s lacks, or a tool s does not list
// yet while it has room. The cached history is then dropped, so the
// session's next call reads what the record made of it.
func changes(s *gateway.FlowSession, r *gateway.FlowRecord) bool {
	for _, label := range r.Reads {
		if !slices.ContainsFunc(s.Reads, func(fr gateway.FlowRead) bool { return fr.Label == label }) {
			return true
		}
	}
	return r.Tool != "" && len(s.Tools) < gateway.MaxFlowTools && !slices.Contains(s.Tools, r.Tool)
}
