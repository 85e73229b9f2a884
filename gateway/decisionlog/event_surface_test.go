package decisionlog

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// A surface's logger names its own query path and bundle.
func TestForSurfaceNamesItsPathAndBundle(t *testing.T) {
	l := &Logger{queue: make(chan Event, 2), now: time.Now}
	d := &gateway.Decision{ID: "d-1", Allow: true}
	l.ForSurface("ccserver").LogDecision(context.Background(), d, map[string]any{}, "list_tickets", "sha256:abc", time.Millisecond)
	l.LogDecision(context.Background(), d, map[string]any{}, "memory.search", "sha256:def", time.Millisecond)
	cc, sc := <-l.queue, <-l.queue
	if cc.Path != "ccserver/decision" || cc.Bundles["ccserver"].Revision != "sha256:abc" {
		t.Errorf("cc_server event path %q bundles %v", cc.Path, cc.Bundles)
	}
	if sc.Path != "supacloud/decision" || sc.Bundles["supacloud"].Revision != "sha256:def" {
		t.Errorf("supacloud event path %q bundles %v", sc.Path, sc.Bundles)
	}
}
