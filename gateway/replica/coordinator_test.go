package replica

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
)

// TestNotifyGarbageIgnoredAndCoalesced: a flood of announcements of every
// workspace (what a payload that is not JSON used to become) costs at most
// one running and one pending full refresh, never one per announcement
// (3,000 cost 4.7 s of CPU per replica). The unreadable payloads
// themselves are ignored by the listener (postgres test of the same name).
func TestNotifyGarbageIgnoredAndCoalesced(t *testing.T) {
	var runs atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	c := NewCoordinator(nopReplica{}, nil, zap.NewNop())
	c.refreshAllHook = func() {
		runs.Add(1)
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
	}
	c.Changed(gateway.Change{Table: "?"})
	<-started // the first refresh runs and blocks
	var wg sync.WaitGroup
	for range 3000 {
		wg.Add(1)
		go func() { defer wg.Done(); c.Changed(gateway.Change{Table: "?"}) }()
	}
	wg.Wait()
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.full.mu.Lock()
		idle := !c.full.running
		c.full.mu.Unlock()
		if idle || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	c.Close()
	if n := runs.Load(); n != 2 {
		t.Fatalf("3,001 announcements of every workspace ran %d full refreshes; want 2 (one running, one pending)", n)
	}
}

// nopReplica is a Replica without caches or streams (a Server with none).
type nopReplica struct{}

func (nopReplica) DropCallers(string)                           {}
func (nopReplica) RefreshTools(func(p *gateway.Principal) bool) {}
func (nopReplica) TokenRevoked(string)                          {}
