package mcpupstream

import (
	"context"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

// Concurrent calls reuse their connections to the upstream: with
// net/http's default of 2 idle connections per host, 16 callers would
// close and dial a connection for most calls (at c=16 the dials were 9 %
// of the gateway's CPU).
func TestConcurrentCallsKeepTheirConnections(t *testing.T) {
	u := startUpstream(t)
	a, err := New(context.Background(), u.url(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	const callers, rounds = 16, 10
	call := gateway.ToolCall{Tool: "echo", Arguments: map[string]any{"project_id": "prj-1"}}
	for range rounds {
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				if _, err := a.CallTool(context.Background(), call); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	// One connection per concurrent caller, and a few more each round when
	// a round's first calls start before the previous round's connections
	// are back in the idle pool (net/http's Transport, where it is used,
	// returns them from its read loop after the caller has its response:
	// on a fast machine 30-60 in all; the inline transport as the caller
	// reads the end of the body).
	// Without keep-alive beyond 2 idle connections it is about 14 per
	// round, 140 in all.
	if n := u.conns.Load(); n > 5*callers {
		t.Fatalf("%d calls from %d callers opened %d connections to the upstream, want at most %d", callers*rounds, callers, n, 5*callers)
	}
}
