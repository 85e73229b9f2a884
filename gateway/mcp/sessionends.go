package mcp

import (
	"context"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/gateway/mcp/sessionid"
)

// MinSessionSecretBytes is the shortest Options.SessionSecret accepted.
const MinSessionSecretBytes = sessionid.MinSecretBytes

// SessionEnds records ended sessions, so that a session ended on one
// replica (DELETE) is refused by every replica. The transport declares it
// and calls it on DELETE and on each request of a session; every replica
// behind one load balancer must use the same store. MemorySessionEnds is
// the in-process implementation (tests, or a Transport on its own); the
// gateway's wiring uses the store's table of ended sessions
// (server.StoreSessionEnds), shared by every replica.
type SessionEnds interface {
	// End records that session id has ended. until is when the id stops
	// verifying anyway (its creation time plus Options.SessionMaxAge): the
	// record may be forgotten after it.
	End(ctx context.Context, id string, until time.Time) error
	// Ended reports whether End was called for id (and until has not passed).
	Ended(ctx context.Context, id string) (bool, error)
}

// MemorySessionEnds is a SessionEnds held in this process's memory; expired
// records are dropped as new ones are added. Share one value between the
// transports of one process; it does not reach other processes.
type MemorySessionEnds struct {
	mu    sync.Mutex
	ended map[string]time.Time
	now   func() time.Time
}

// NewMemorySessionEnds returns an empty in-memory SessionEnds.
func NewMemorySessionEnds() *MemorySessionEnds {
	return &MemorySessionEnds{ended: map[string]time.Time{}, now: time.Now}
}

// End records id as ended until until.
func (m *MemorySessionEnds) End(_ context.Context, id string, until time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if len(m.ended) >= 1024 && len(m.ended)&1023 == 0 { // amortized sweep
		for k, u := range m.ended {
			if !now.Before(u) {
				delete(m.ended, k)
			}
		}
	}
	m.ended[id] = until
	return nil
}

// Ended reports whether id was ended and its record has not expired.
func (m *MemorySessionEnds) Ended(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	until, ok := m.ended[id]
	return ok && m.now().Before(until), nil
}
