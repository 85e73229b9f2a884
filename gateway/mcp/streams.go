package mcp

import (
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway/mcp/sessionid"
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
	owner sessionid.Identity
	stop  chan struct{} // closed when the stream must end (a newer one took its place, or Close)
	once  sync.Once
}

func (h *streamHold) end() { h.once.Do(func() { close(h.stop) }) }

// holdStream counts a new long-lived stream of owner, ending owner's oldest
// stream when owner already holds MaxStreamsPerPrincipal. It reports false
// once Close has begun. The caller releases the hold when its stream ends
// and ends the stream when hold.stop closes.
func (t *Transport) holdStream(owner sessionid.Identity) (*streamHold, bool) {
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
	t.streams = map[sessionid.Identity][]*streamHold{}
	t.mu.Unlock()
	for _, held := range all {
		for _, h := range held {
			h.end()
		}
	}
}

// stream writes events to an open GET stream until it ends, as one of
// the streams its credential holds (holdStream; after Close it answers
// 503 instead). A non-empty endpoint is sent first as the "endpoint"
// event of the 2024-11-05 transport.
func (t *Transport) stream(w http.ResponseWriter, r *http.Request, s *session, ch <-chan []byte, endpoint string) {
	hold, ok := t.holdStream(s.owner)
	if !ok {
		t.replyError(w, r, nil, errClosed)
		return
	}
	defer t.releaseStream(hold)
	stop := hold.stop
	rc := http.NewResponseController(w)
	t.writeDeadline(rc)
	startSSE(w)
	if endpoint != "" {
		if writeEvent(w, rc, "endpoint", []byte(endpoint)) != nil {
			return
		}
	} else if rc.Flush() != nil {
		return
	}
	t.pump(w, r, rc, s, ch, stop, nil)
}

// pump writes each message of ch as an SSE "message" event, and a
// keep-alive comment every KeepAlive, each write with its own deadline,
// until the client goes, a write fails, the session ends or stop closes
// (MaxStreamsPerPrincipal); then, when last is set, it writes last's event
// (a subscription's closing result).
func (t *Transport) pump(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, s *session, ch <-chan []byte, stop <-chan struct{}, last func() []byte) {
	tick := time.NewTicker(t.opts.KeepAlive)
	defer tick.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			if last != nil {
				t.writeDeadline(rc)
				_ = writeEvent(w, rc, "message", last())
			}
			return
		case <-stop:
			if last != nil {
				t.writeDeadline(rc)
				_ = writeEvent(w, rc, "message", last())
			}
			return
		case msg := <-ch:
			t.writeDeadline(rc)
			err = writeEvent(w, rc, "message", msg)
		case <-tick.C:
			t.writeDeadline(rc)
			if _, err = io.WriteString(w, ": keep-alive\n\n"); err == nil {
				err = rc.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}
