package mcp

import (
	"slices"
	"sync"

	"go.uber.org/zap"
)

// MaxStreamsPerPrincipal bounds the long-lived streams one credential
// holds open on one endpoint at once, of every kind together: GET streams
// of Streamable HTTP sessions, HTTP+SSE (/sse) streams and 2026-07-28
// subscriptions/listen streams. Each holds a connection for as long as the
// client likes, so without one bound a single token could take every
// connection of the listener (MCPGATE_HTTP_MAX_CONNECTIONS) and leave
// other clients waiting. Opening one more closes the credential's oldest
// stream (a listen stream with its graceful-closure result; a GET stream
// only, its session stays; an SSE stream with its session, which it is).
const MaxStreamsPerPrincipal = 64

// streamHold is one open long-lived stream counted against its owner's
// MaxStreamsPerPrincipal.
type streamHold struct {
	owner identity
	stop  chan struct{} // closed when the stream must end (a newer one took its place, or Close)
	once  sync.Once
}

func (h *streamHold) end() { h.once.Do(func() { close(h.stop) }) }

// holdStream counts a new long-lived stream of owner, ending owner's oldest
// stream when owner already holds MaxStreamsPerPrincipal. It reports false
// once Close has begun. The caller releases the hold when its stream ends
// and ends the stream when hold.stop closes.
func (t *Transport) holdStream(owner identity) (*streamHold, bool) {
	h := &streamHold{owner: owner, stop: make(chan struct{})}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, false
	}
	held := append(t.streams[owner], h) // oldest first
	var oldest *streamHold
	if len(held) > MaxStreamsPerPrincipal {
		oldest, held = held[0], held[1:]
	}
	t.streams[owner] = held
	t.mu.Unlock()
	if oldest != nil {
		oldest.end()
		t.log.Debug("mcp: oldest stream of a principal closed", zap.Int("limit", MaxStreamsPerPrincipal))
	}
	return h, true
}

// releaseStream uncounts h (its stream has ended). Safe after Close.
func (t *Transport) releaseStream(h *streamHold) {
	t.mu.Lock()
	held := slices.DeleteFunc(t.streams[h.owner], func(o *streamHold) bool { return o == h })
	if len(held) == 0 {
		delete(t.streams, h.owner)
	} else {
		t.streams[h.owner] = held
	}
	t.mu.Unlock()
	h.end()
}

// endStreams ends every held stream (Close); t.closed is set, so no new
// one is held.
func (t *Transport) endStreams() {
	t.mu.Lock()
	all := t.streams
	t.streams = map[identity][]*streamHold{}
	t.mu.Unlock()
	for _, held := range all {
		for _, h := range held {
			h.end()
		}
	}
}
