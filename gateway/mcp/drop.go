package mcp

import "github.com/mcpgate/mcpgate/gateway"

// DropSessions drops this replica's state of every session, and ends
// every subscriptions/listen stream, whose principal (as authenticated
// when it was opened) satisfies match: open GET and listen streams close,
// running calls are cancelled. It returns how many it dropped. It is for
// credentials that stopped being valid (a revoked API token): the next
// request of such a session authenticates again and is refused. match
// runs without locks held.
func (t *Transport) DropSessions(match func(p *gateway.Principal) bool) int {
	n := 0
	for _, s := range t.allStreams() {
		if p := s.principal; !match(&p) {
			continue
		}
		t.endSession(s, "credential no longer valid")
		n++
	}
	return n
}
