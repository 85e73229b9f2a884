package mcp

import (
	"context"
	"crypto/sha256"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
)

// toolSet identifies a visible tool set by the SHA-256 of its tool names in
// order; the zero value is "unknown" (the client never listed tools).
type toolSet struct {
	known bool
	sum   [sha256.Size]byte
}

func toolSetHash(tools []gateway.ListedTool) toolSet {
	h := sha256.New()
	for _, t := range tools {
		h.Write([]byte(t.Name))
		h.Write([]byte{'\n'}) // names hold no newline, so the join is unambiguous
	}
	ts := toolSet{known: true}
	h.Sum(ts.sum[:0])
	return ts
}

// sawTools records the tool set the client was just sent by tools/list.
func (s *session) sawTools(ts toolSet) {
	s.mu.Lock()
	s.tools = ts
	s.mu.Unlock()
}

// changedTo records ts as the set the client will know once notified and
// reports whether it differs from the one it knew (always, when unknown).
func (s *session) changedTo(ts toolSet) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tools == ts {
		return false
	}
	s.tools = ts
	return true
}

// refreshTimeout bounds one RefreshTools pass.
const refreshTimeout = 30 * time.Second

// RefreshTools recomputes, in the background, the tools/list of every
// session whose principal (as authenticated at initialize) satisfies match
// and that has an open stream (a GET stream, or a 2024-11-05 SSE stream),
// and of every 2026-07-28 subscriptions/listen stream that asked for tool
// list changes and whose principal satisfies match,
// by calling Handler.ListTools, and sends notifications/tools/list_changed
// to each session whose tool names differ from those its client last
// listed (or was last told about). A session whose client never listed
// tools, or whose list cannot be computed (the error is logged at debug),
// is notified. It returns at once; Close waits for the pass and cancels its
// context. This is how the admin API's changes reach connected clients
// (MCP 2025-11-25, server/tools, "List Changed Notification").
func (t *Transport) RefreshTools(match func(p *gateway.Principal) bool) {
	t.goTracked(func() { t.refreshTools(match) })
}

// refreshTools is one RefreshTools pass; it returns how many sessions it
// notified.
func (t *Transport) refreshTools(match func(p *gateway.Principal) bool) int {
	ctx, cancel := context.WithTimeout(t.ctx, refreshTimeout)
	defer cancel()
	n := 0
	for _, s := range t.streaming(match) {
		p := s.principal
		tools, err := t.opts.Handler.ListTools(gateway.WithRequestID(ctx, newRequestID()), &p)
		changed := true
		if err == nil {
			changed = s.changedTo(toolSetHash(tools))
		} else { // unknown: the client should re-list and see the error
			s.sawTools(toolSet{})
			t.log.Debug("mcp: tools/list for a change notification failed", zap.String("session", s.id), zap.Error(err))
		}
		if changed && t.notifyOne(s) {
			n++
		}
	}
	return n
}

// notifyOne sends tools/list_changed on s's stream; when it cannot, the
// session's known set is forgotten so that the next pass notifies again.
func (t *Transport) notifyOne(s *session) bool {
	if s.send(s.listChanged()) {
		return true
	}
	s.sawTools(toolSet{})
	t.log.Debug("mcp: tools/list_changed not delivered", zap.String("session", s.id))
	return false
}

// streaming returns the live sessions with an open stream whose principal
// satisfies match; match runs without locks held.
func (t *Transport) streaming(match func(p *gateway.Principal) bool) []*session {
	all := t.allStreams()
	out := all[:0]
	for _, s := range all {
		s.mu.Lock()
		open := s.stream != nil
		s.mu.Unlock()
		if p := s.principal; open && !s.ended() && match(&p) {
			out = append(out, s)
		}
	}
	return out
}

// allStreams returns every session held and every subscriptions/listen
// stream that wants tool list changes.
func (t *Transport) allStreams() []*session {
	t.mu.RLock()
	defer t.mu.RUnlock()
	all := make([]*session, 0, len(t.sessions)+len(t.listeners))
	for _, s := range t.sessions {
		all = append(all, s)
	}
	for s := range t.listeners {
		all = append(all, s)
	}
	return all
}

// listChanged is the tools/list_changed notification for s's stream: the
// plain one, or a listen stream's, tagged with its subscription id.
func (s *session) listChanged() []byte {
	if s.notice != nil {
		return s.notice
	}
	return toolsChanged
}

// goTracked runs f on a goroutine that Close waits for; once Close has
// begun it does nothing and reports false. Adding to the WaitGroup under the
// read lock orders every Add before Close's Wait.
func (t *Transport) goTracked(f func()) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return false
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		f()
	}()
	return true
}
