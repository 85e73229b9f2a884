// Package replica coordinates the replicas of one gateway: what a replica
// does with the changes, ended sessions, relayed answers and policy reload
// requests announced through any replica (Coordinator), how it hears them
// (a Feed: PostgreSQL's LISTEN/NOTIFY, or the in-process Local of the
// embedded store), the session-end cache and the relayed answers that
// ride on that feed, and the policy reloads asked of every replica.
package replica

import (
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/postgres"
)

// Replica is what a Coordinator acts on: this process's caller caches and
// open MCP streams (*server.Server implements it).
type Replica interface {
	// DropCallers drops the cached callers of workspace workspaceID (of
	// every workspace for ""); calls that start after it returns read the
	// store.
	DropCallers(workspaceID string)
	// RefreshTools has the open streams whose principal matches
	// recompute their tools/list, and tells those whose list changed.
	RefreshTools(match func(p *gateway.Principal) bool)
	// TokenRevoked ends this process's sessions of the API token of
	// fingerprint fp once the store no longer holds it active.
	TokenRevoked(fp string)
}

// degradedRefresh is how often, while the feed is not connected, every
// cached caller is dropped and every open stream's tool list recomputed:
// the bound on how long a change made through another replica goes unseen
// by an open stream then (callers are bounded by the cache's TTL anyway,
// tokens are looked up on every request).
const degradedRefresh = time.Second

// Coordinator is what a replica does with an announced change, the same
// for changes of any replica: it is the handler a Feed delivers to
// (postgres.ChangeHandler and its optional interfaces), and this
// process's admin API announces its own changes to it (Announce).
type Coordinator struct {
	r    Replica
	log  *zap.Logger
	ends *SessionEndCache // nil: no session answers kept

	mu       sync.Mutex
	degraded chan struct{} // closed to end the degraded loop; nil when connected
	closed   bool
	wg       sync.WaitGroup

	// policy reloads this replica's policy as another replica asked
	// (Policies.Requested), on a goroutine of its own; a request with no
	// Origin is the check after a gap (Resync). nil: requests are
	// ignored.
	policy func(gateway.PolicyRequest)
	// answered is told the keys of relayed answers recorded by any
	// replica (Answers.Answered); nil: ignored.
	answered func(key string)
	// tables are OnTable's, by table.
	tables map[string]func()
	// announced counts the changes this process's admin API announced.
	announced atomic.Uint64

	// full coalesces the full refreshes (every cached caller dropped,
	// every open stream's tool list recomputed) that announcements ask
	// for: at most one runs, on a goroutine of its own, and at most one
	// more waits, whatever the number of announcements meanwhile.
	full coalescer
	// refreshAllHook, when set, replaces one full refresh (tests).
	refreshAllHook func()
}

// NewCoordinator returns the coordinator of r; ends, when not nil, is the
// session-end cache the feed keeps current; log may be nil.
func NewCoordinator(r Replica, ends *SessionEndCache, log *zap.Logger) *Coordinator {
	if log == nil {
		log = zap.NewNop()
	}
	return &Coordinator{r: r, ends: ends, log: log}
}

// OnPolicy sets what runs a policy reload another replica asked for
// (Policies.Requested). Call it before the feed listens.
func (c *Coordinator) OnPolicy(fn func(gateway.PolicyRequest)) { c.policy = fn }

// OnTable sets what runs when a change of table is announced, instead
// of the callers' refresh (a table no caller is loaded from, such as the
// bridged tools' pins, gateway.PinsTable). Call it before the feed
// listens.
func (c *Coordinator) OnTable(table string, fn func()) {
	if c.tables == nil {
		c.tables = map[string]func(){}
	}
	c.tables[table] = fn
}

// OnAnswer sets what is told the keys of relayed answers recorded by any
// replica (Answers.Answered). Call it before the feed listens.
func (c *Coordinator) OnAnswer(fn func(key string)) { c.answered = fn }

// Announce applies a change made through this process's admin API at
// once (on PostgreSQL the change triggers announce it to every replica as
// well, this one included), and counts it.
func (c *Coordinator) Announce(ch gateway.Change) {
	c.announced.Add(1)
	c.Changed(ch)
}

// Announced counts the changes Announce applied.
func (c *Coordinator) Announced() uint64 { return c.announced.Load() }

// coalescer runs a function on a goroutine of its own, at most once at
// a time: a request while it runs leaves one run pending, and every
// further request joins that pending run.
type coalescer struct {
	mu      sync.Mutex
	running bool
	pending bool
}

// request runs fn on wg (now, or after the running one when one runs).
func (co *coalescer) request(wg *sync.WaitGroup, fn func()) {
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.running {
		co.pending = true
		return
	}
	co.running = true
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			fn()
			co.mu.Lock()
			if !co.pending {
				co.running = false
				co.mu.Unlock()
				return
			}
			co.pending = false
			co.mu.Unlock()
		}
	}()
}

// refreshAll asks for one full refresh (coalesced, in the background):
// announcements of every workspace, the degraded loop and Resync come
// through here, so a flood of them costs at most two rebuilds in a row.
func (c *Coordinator) refreshAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.full.request(&c.wg, c.refreshAllNow)
}

// refreshAllNow is one full refresh; tests replace it through
// refreshAllHook.
func (c *Coordinator) refreshAllNow() {
	if c.refreshAllHook != nil {
		c.refreshAllHook()
		return
	}
	c.r.DropCallers("")
	c.r.RefreshTools(func(*gateway.Principal) bool { return true })
}

// Unreadable implements postgres.UnreadableHandler: the first payload of
// the store's channels that is not JSON is logged (they are all counted
// and ignored).
func (c *Coordinator) Unreadable(channel string) {
	c.log.Warn("ignored a notification that is not JSON of the expected shape on a channel of the store; only mcpgate's triggers and replicas should send there, so check who may connect to the database (further ones are ignored without a log line)",
		zap.String("channel", channel))
}

var (
	_ postgres.ChangeHandler     = (*Coordinator)(nil)
	_ postgres.UnreadableHandler = (*Coordinator)(nil)
	_ postgres.PolicyHandler     = (*Coordinator)(nil)
	_ postgres.AnswerHandler     = (*Coordinator)(nil)
)

// RelayAnswered implements postgres.AnswerHandler.
func (c *Coordinator) RelayAnswered(key string) {
	if c.answered != nil {
		c.answered(key)
	}
}

// PolicyRequested implements postgres.PolicyHandler: the reload runs in
// the background (it runs the candidate's tests).
func (c *Coordinator) PolicyRequested(r gateway.PolicyRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.policy == nil {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.policy(r)
	}()
}

// Changed implements postgres.ChangeHandler: it drops the cached callers
// of the change's workspace and tells that workspace's open streams; for
// a token's change it ends that token's sessions on this replica
// (Replica.TokenRevoked), and for an ended session it drops its kept "not
// ended" answer (SessionEndCache).
func (c *Coordinator) Changed(ch gateway.Change) {
	if ch.Table == postgres.EndedSessionsTable { // a session ended through some replica: no caller changed
		if c.ends != nil {
			c.ends.Forget(ch.SessionID)
		}
		return
	}
	if fn := c.tables[ch.Table]; fn != nil {
		fn()
		return
	}
	if ch.TokenFingerprint != "" { // a token's status is read per request, not cached with callers
		c.r.TokenRevoked(ch.TokenFingerprint)
		return
	}
	if ch.WorkspaceID == "" {
		// The callers go now, so the next call sees the change (an admin
		// change of this process returns only after this); only the
		// streams' tool lists are rebuilt in the background, coalesced.
		c.r.DropCallers("")
		c.refreshAll()
		return
	}
	ws := ch.WorkspaceID
	c.r.DropCallers(ws)
	c.r.RefreshTools(func(p *gateway.Principal) bool { return p.WorkspaceID == ws })
}

// Lost implements postgres.ChangeHandler: until Resync, every
// degradedRefresh drops every cached caller and recomputes every open
// stream's tool list, and no session answer is kept.
func (c *Coordinator) Lost() {
	if c.ends != nil {
		c.ends.SetLive(false)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.degraded != nil {
		return
	}
	c.log.Warn("the change announcements of other replicas stopped (listening connection lost); reconnecting, and until then open streams are re-checked every second",
		zap.Duration("refresh", degradedRefresh))
	stop := make(chan struct{})
	c.degraded = stop
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		tick := time.NewTicker(degradedRefresh)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				c.refreshAll()
			}
		}
	}()
}

// Resync implements postgres.ChangeHandler: changes may have been missed,
// so everything cached is dropped and every open stream re-checked once;
// after a gap, policy reloads asked for meanwhile may have been missed
// too, so the policy folder is checked once (reloaded when its revision
// changed).
func (c *Coordinator) Resync() {
	c.mu.Lock()
	gap := c.degraded != nil
	if gap {
		close(c.degraded)
		c.degraded = nil
		c.log.Info("change announcements of other replicas resumed; every cached caller dropped once, the policy folder checked once")
	}
	c.mu.Unlock()
	if c.ends != nil {
		c.ends.SetLive(true)
	}
	c.refreshAll()
	if gap {
		c.PolicyRequested(gateway.PolicyRequest{})
	}
}

// Close stops the degraded loop for good and waits for the refreshes and
// reloads under way.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	if c.degraded != nil {
		close(c.degraded)
		c.degraded = nil
	}
	c.mu.Unlock()
	c.wg.Wait()
}
