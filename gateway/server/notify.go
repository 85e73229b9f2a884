package server

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/postgres"
)

// ChangeFeed is how a replica hears of changes made through any replica:
// *postgres.Listener (LISTEN/NOTIFY on the shared database) or, for the
// embedded store of one process, localFeed. Either delivers to the
// Server's change handler (Server.Changes).
type ChangeFeed interface {
	// Connected reports whether changes are announced now; while false,
	// the replica falls back to bounded staleness (docs/architecture.md,
	// "Replicas").
	Connected() bool
	// Received counts the announcements received.
	Received() uint64
	// Close stops the feed.
	Close() error
}

var _ ChangeFeed = (*postgres.Listener)(nil)

// degradedRefresh is how often, while the feed is not connected, every
// cached caller is dropped and every open stream's tool list recomputed:
// the bound on how long a change made through another replica goes unseen
// by an open stream then (callers are bounded by the cache's TTL anyway,
// tokens are looked up on every request).
const degradedRefresh = time.Second

// changes is the Server's postgres.ChangeHandler: what a replica does with
// an announced change, the same for changes of any replica.
type changes struct {
	s   *Server
	log *zap.Logger

	mu       sync.Mutex
	degraded chan struct{} // closed to end the degraded loop; nil when connected
	closed   bool
	wg       sync.WaitGroup

	// policy reloads this replica's policy as another replica asked
	// (App.policyRequested), on a goroutine of its own; a request with
	// no Origin is the check after a gap (Resync). nil: requests are
	// ignored (no App around the Server).
	policy func(gateway.PolicyRequest)
	// answered is told the keys of relayed answers recorded by any
	// replica (storeAnswers.answered); nil: ignored.
	answered func(key string)

	// full coalesces the full refreshes (every cached caller dropped,
	// every open stream's tool list recomputed) that announcements ask
	// for: at most one runs, on a goroutine of its own, and at most one
	// more waits, whatever the number of announcements meanwhile.
	full coalescer
	// refreshAllHook, when set, replaces one full refresh (tests).
	refreshAllHook func()
}

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
func (c *changes) refreshAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.full.request(&c.wg, c.refreshAllNow)
}

// refreshAllNow is one full refresh; tests replace it through
// refreshAllHook.
func (c *changes) refreshAllNow() {
	if c.refreshAllHook != nil {
		c.refreshAllHook()
		return
	}
	c.s.WorkspaceChanged("")
}

// Unreadable implements postgres.UnreadableHandler: the first payload of
// the store's channels that is not JSON is logged (they are all counted
// and ignored).
func (c *changes) Unreadable(channel string) {
	c.log.Warn("ignored a notification that is not JSON of the expected shape on a channel of the store; only mcpgate's triggers and replicas should send there, so check who may connect to the database (further ones are ignored without a log line)",
		zap.String("channel", channel))
}

var (
	_ postgres.ChangeHandler     = (*changes)(nil)
	_ postgres.UnreadableHandler = (*changes)(nil)
	_ postgres.PolicyHandler     = (*changes)(nil)
	_ postgres.AnswerHandler     = (*changes)(nil)
)

// RelayAnswered implements postgres.AnswerHandler.
func (c *changes) RelayAnswered(key string) {
	if c.answered != nil {
		c.answered(key)
	}
}

// PolicyRequested implements postgres.PolicyHandler: the reload runs in
// the background (it runs the candidate's tests).
func (c *changes) PolicyRequested(r gateway.PolicyRequest) {
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

// Changes returns the handler a ChangeFeed delivers this replica's
// announcements to. Its Changed drops the cached callers of the change's
// workspace and tells that workspace's open streams (WorkspaceChanged),
// for a token's change ends that token's sessions on this replica
// (TokenRevoked), and for an ended session drops its kept "not ended"
// answer (SessionEndCache); Lost starts the degraded refresh and stops
// keeping session answers, Resync stops the refresh and drops everything
// cached.
func (s *Server) Changes() postgres.ChangeHandler { return s.changes }

// Changed implements postgres.ChangeHandler.
func (c *changes) Changed(ch gateway.Change) {
	if ch.Table == postgres.EndedSessionsTable { // a session ended through some replica: no caller changed
		if c.s.ends != nil {
			c.s.ends.Forget(ch.SessionID)
		}
		return
	}
	if ch.TokenFingerprint != "" { // a token's status is read per request, not cached with callers
		c.s.TokenRevoked(ch.TokenFingerprint)
		return
	}
	if ch.WorkspaceID == "" {
		// The callers go now, so the next call sees the change (an admin
		// change of this process returns only after this); only the
		// streams' tool lists are rebuilt in the background, coalesced.
		c.s.dropCallers("")
		c.refreshAll()
		return
	}
	c.s.WorkspaceChanged(ch.WorkspaceID)
}

// Lost implements postgres.ChangeHandler: until Resync, every
// degradedRefresh drops every cached caller and recomputes every open
// stream's tool list.
func (c *changes) Lost() {
	if c.s.ends != nil {
		c.s.ends.SetLive(false)
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
func (c *changes) Resync() {
	c.mu.Lock()
	gap := c.degraded != nil
	if gap {
		close(c.degraded)
		c.degraded = nil
		c.log.Info("change announcements of other replicas resumed; every cached caller dropped once, the policy folder checked once")
	}
	c.mu.Unlock()
	if c.s.ends != nil {
		c.s.ends.SetLive(true)
	}
	c.refreshAll()
	if gap {
		c.PolicyRequested(gateway.PolicyRequest{})
	}
}

// close stops the degraded loop for good.
func (c *changes) close() {
	c.mu.Lock()
	c.closed = true
	if c.degraded != nil {
		close(c.degraded)
		c.degraded = nil
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// TokenRevoked ends, on this replica, every MCP session and stream opened
// with the API token of fingerprint fp once the store no longer holds that
// token active (revoked or removed; a store that cannot tell counts as
// revoked): their next request authenticates again and is refused (every
// request looks the token up; there is no token cache to drop). The
// announcement alone is not believed: anyone who may connect to the
// database can send one on mcpgate_changes, and ending an active token's
// sessions would cancel their running calls. The admin API of this
// process calls it after a revocation, and the change feed for
// revocations made elsewhere.
func (s *Server) TokenRevoked(fp string) {
	ctx, cancel := context.WithTimeout(context.Background(), tokenCheckTimeout)
	defer cancel()
	active := map[string]bool{} // by the sessions' workspace, the token's own
	match := func(p *gateway.Principal) bool {
		if p.TokenFingerprint != fp {
			return false
		}
		a, ok := active[p.WorkspaceID]
		if !ok {
			a = s.tokenActive(ctx, p.WorkspaceID, fp)
			active[p.WorkspaceID] = a
		}
		return !a
	}
	s.transport.DropSessions(match)
	if s.api != nil {
		s.api.DropSessions(match)
	}
}

// tokenCheckTimeout bounds TokenRevoked's look-up of the token's status.
const tokenCheckTimeout = 2 * time.Second

// tokenActive reports whether the store holds the API token fp of
// workspace ws with the status active.
func (s *Server) tokenActive(ctx context.Context, ws, fp string) bool {
	st, ok := s.store.(interface {
		ListAPITokens(ctx context.Context, workspaceID string) ([]gateway.APIToken, error)
	})
	if !ok {
		return false
	}
	tokens, err := st.ListAPITokens(ctx, ws)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(tokens, func(t gateway.APIToken) bool { return t.Fingerprint == fp && t.Status == admin.TokenActive })
}

// localFeed is the ChangeFeed of the embedded store (one process): the
// admin API's writes reach this process's caches and streams directly
// (Server.WorkspaceChanged, Server.TokenRevoked), so it is always
// connected; it counts those announcements.
type localFeed struct{ s *Server }

func (f localFeed) Connected() bool  { return true }
func (f localFeed) Received() uint64 { return f.s.announced.Load() }
func (f localFeed) Close() error     { return nil }

// announce applies a change made through this process's admin API at
// once (on PostgreSQL the change triggers announce it to every replica as
// well, this one included).
func (s *Server) announce(ch gateway.Change) {
	s.announced.Add(1)
	s.changes.Changed(ch)
}

// revokeAnnouncer is the admin API's store: a successful revocation is
// announced to this process at once.
type revokeAnnouncer struct {
	FullStore
	s *Server
}

func (r revokeAnnouncer) RevokeAPIToken(ctx context.Context, fingerprint string) error {
	if err := r.FullStore.RevokeAPIToken(ctx, fingerprint); err != nil {
		return err
	}
	r.s.announce(gateway.Change{Table: "api_tokens", TokenFingerprint: fingerprint})
	return nil
}

// registerFeed exposes the feed's health on reg:
// mcpgate_store_notify_connected (1 while changes are announced, 0 in the
// degraded fallback) and mcpgate_store_notifications_received_total.
func registerFeed(reg prometheus.Registerer, f ChangeFeed) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "mcpgate_store_notify_connected",
			Help: "1 while this replica hears the changes made through other replicas (PostgreSQL LISTEN/NOTIFY; always 1 on the embedded store), 0 while it falls back to bounded staleness.",
		}, func() float64 {
			if f.Connected() {
				return 1
			}
			return 0
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "mcpgate_store_notifications_received_total",
			Help: "Change announcements received by this replica (PostgreSQL notifications of its schema; on the embedded store, this process's admin changes).",
		}, func() float64 { return float64(f.Received()) }),
	)
}
