package callercache_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/callercache"
)

// loader is a fake store: each load returns a new Caller whose task status
// names the load ("v1", "v2", …), so a test sees which load answered.
// When gate is set, each load waits for a value on it (or for its ctx);
// when gates is set, load n waits on gates[n-1] instead.
type loader struct {
	loads atomic.Int64
	gate  chan struct{}
	gates []chan struct{}
	// started receives the principal of each load as it begins, when set.
	started chan gateway.Principal
	err     func(n int64) error
	// during runs inside each load, before it returns (e.g. to move a clock).
	during func()
	// ctxErr records the load context's error at the end of the last load.
	ctxErr atomic.Value
}

func (l *loader) LoadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error) {
	n := l.loads.Add(1)
	if l.started != nil {
		l.started <- *p
	}
	gate := l.gate
	if l.gates != nil {
		gate = l.gates[n-1]
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if l.during != nil {
		l.during()
	}
	l.ctxErr.Store(fmt.Sprint(ctx.Err()))
	if l.err != nil {
		if err := l.err(n); err != nil {
			return nil, err
		}
	}
	return &gateway.Caller{
		Workspace:        &gateway.Workspace{ID: p.WorkspaceID},
		Member:           &gateway.Member{WorkspaceID: p.WorkspaceID, UserID: p.Subject},
		ProfileRequested: p.ProfileID,
		Task:             &gateway.Task{WorkspaceID: p.WorkspaceID, ID: p.TaskID, Status: fmt.Sprintf("v%d", n)},
	}, nil
}

// clock is an injected time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var alice = &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "alice", WorkspaceID: "ws-a", TaskID: "t1", ProfileID: "bot"}

func load(t *testing.T, c *callercache.Cache, p *gateway.Principal) *gateway.Caller {
	t.Helper()
	got, err := c.LoadCaller(context.Background(), p)
	if err != nil {
		t.Fatalf("LoadCaller(%+v): %v", p, err)
	}
	return got
}

// began waits for the next load to begin and returns its principal.
func began(t *testing.T, l *loader) gateway.Principal {
	t.Helper()
	select {
	case p := <-l.started:
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("no load began")
		return gateway.Principal{}
	}
}

// version is the load that produced c ("v1", …).
func version(c *gateway.Caller) string { return c.Task.Status }

func wantLoads(t *testing.T, l *loader, n int64) {
	t.Helper()
	if got := l.loads.Load(); got != n {
		t.Fatalf("%d loads, want %d", got, n)
	}
}

func TestHitAndKey(t *testing.T) {
	l := &loader{}
	c := callercache.New(l, callercache.Options{TTL: time.Second})
	first := load(t, c, alice)
	if again := load(t, c, alice); again != first {
		t.Fatal("second load of the same principal did not come from the cache")
	}
	// Kind, token fingerprint, scopes and expiry are not read by the
	// store: they share the entry.
	other := *alice
	other.Kind, other.TokenFingerprint, other.Scopes, other.ExpiresAt = gateway.PrincipalCoordinator, "fp", []string{"mcp:read"}, time.Now()
	if got := load(t, c, &other); got != first {
		t.Fatal("a principal differing only in parts the store does not read missed the cache")
	}
	wantLoads(t, l, 1)

	// Each part the store reads is part of the key.
	for _, tc := range []struct {
		note string
		edit func(p *gateway.Principal)
	}{
		{"workspace", func(p *gateway.Principal) { p.WorkspaceID = "ws-b" }},
		{"subject", func(p *gateway.Principal) { p.Subject = "bob" }},
		{"task", func(p *gateway.Principal) { p.TaskID = "t2" }},
		{"profile", func(p *gateway.Principal) { p.ProfileID = "" }},
		{"no ambiguity between parts", func(p *gateway.Principal) { p.Subject, p.TaskID = "alicet", "1" }},
	} {
		t.Run(tc.note, func(t *testing.T) {
			p := *alice
			tc.edit(&p)
			before := l.loads.Load()
			got := load(t, c, &p)
			if l.loads.Load() != before+1 {
				t.Fatal("served from another principal's entry")
			}
			if got.Workspace.ID != p.WorkspaceID || got.Member.UserID != p.Subject || got.Task.ID != p.TaskID || got.ProfileRequested != p.ProfileID {
				t.Fatalf("caller %+v does not belong to %+v", got, p)
			}
		})
	}
}

func TestTTL(t *testing.T) {
	clk := newClock()
	l := &loader{}
	c := callercache.New(l, callercache.Options{TTL: time.Second, Now: clk.Now})
	if got := version(load(t, c, alice)); got != "v1" {
		t.Fatalf("first load %s", got)
	}
	clk.Advance(999 * time.Millisecond)
	if got := version(load(t, c, alice)); got != "v1" {
		t.Fatalf("within the TTL: %s, want v1 from the cache", got)
	}
	clk.Advance(time.Millisecond) // exactly TTL after the load began: expired
	if got := version(load(t, c, alice)); got != "v2" {
		t.Fatalf("at the TTL: %s, want a new load", got)
	}
	wantLoads(t, l, 2)
}

// The TTL counts from when the load began, not when it ended: a slow
// load does not make its entry outlive TTL after what it read.
func TestTTLCountsFromLoadStart(t *testing.T) {
	clk := newClock()
	l := &loader{during: func() { clk.Advance(400 * time.Millisecond) }}
	c := callercache.New(l, callercache.Options{TTL: time.Second, Now: clk.Now})
	load(t, c, alice) // began at 0, ended at 400 ms
	l.during = nil
	clk.Advance(599 * time.Millisecond)
	if got := version(load(t, c, alice)); got != "v1" {
		t.Fatalf("999 ms after the load began: %s, want v1", got)
	}
	clk.Advance(time.Millisecond)
	if got := version(load(t, c, alice)); got != "v2" {
		t.Fatalf("1 s after the load began: %s, want a new load", got)
	}
}

func TestOff(t *testing.T) {
	for _, ttl := range []time.Duration{0, -time.Second} {
		l := &loader{}
		c := callercache.New(l, callercache.Options{TTL: ttl})
		for range 3 {
			load(t, c, alice)
		}
		c.InvalidateWorkspace("ws-a")
		c.InvalidateAll()
		wantLoads(t, l, 3)
		if c.TTL() != 0 || c.Len() != 0 {
			t.Fatalf("TTL %v: TTL() %v, Len() %d; want 0, 0", ttl, c.TTL(), c.Len())
		}
	}
}

func TestInvalidate(t *testing.T) {
	l := &loader{}
	c := callercache.New(l, callercache.Options{TTL: time.Minute})
	bob := &gateway.Principal{Subject: "bob", WorkspaceID: "ws-a", TaskID: "t1"}
	carol := &gateway.Principal{Subject: "carol", WorkspaceID: "ws-b", TaskID: "t1"}
	a1, b1, c1 := load(t, c, alice), load(t, c, bob), load(t, c, carol)

	c.InvalidateWorkspace("ws-a")
	if load(t, c, alice) == a1 || load(t, c, bob) == b1 {
		t.Fatal("an entry of the invalidated workspace was served")
	}
	if load(t, c, carol) != c1 {
		t.Fatal("an entry of another workspace was dropped")
	}
	wantLoads(t, l, 5)

	for _, tc := range []struct {
		note       string
		invalidate func()
	}{
		{"InvalidateAll", c.InvalidateAll},
		{`InvalidateWorkspace("")`, func() { c.InvalidateWorkspace("") }},
	} {
		t.Run(tc.note, func(t *testing.T) {
			before := []*gateway.Caller{load(t, c, alice), load(t, c, carol)}
			tc.invalidate()
			if c.Len() != 0 {
				t.Fatalf("%d entries left", c.Len())
			}
			if load(t, c, alice) == before[0] || load(t, c, carol) == before[1] {
				t.Fatal("an entry survived")
			}
		})
	}
}

// A load that began before an invalidation answers the calls that were
// waiting for it, but is not stored: the next call loads again. And a call
// that starts after the invalidation does not join it.
func TestInvalidateDuringLoad(t *testing.T) {
	for _, tc := range []struct {
		note       string
		invalidate func(c *callercache.Cache)
	}{
		{"workspace", func(c *callercache.Cache) { c.InvalidateWorkspace("ws-a") }},
		{"all", func(c *callercache.Cache) { c.InvalidateAll() }},
		{"another workspace", func(c *callercache.Cache) { c.InvalidateWorkspace("ws-b") }},
	} {
		t.Run(tc.note, func(t *testing.T) {
			l := &loader{gates: []chan struct{}{make(chan struct{}), make(chan struct{}), nil}, started: make(chan gateway.Principal, 4)}
			c := callercache.New(l, callercache.Options{TTL: time.Minute})
			old := make(chan *gateway.Caller, 1)
			go func() {
				got, _ := c.LoadCaller(context.Background(), alice)
				old <- got
			}()
			began(t, l) // the load has read its generation and begun

			tc.invalidate(c)
			fresh := make(chan *gateway.Caller, 1)
			go func() {
				got, _ := c.LoadCaller(context.Background(), alice)
				fresh <- got
			}()
			began(t, l) // a second load: the new call did not join the old one

			close(l.gates[1]) // the new load ends first, then the old one
			if got := <-fresh; got == nil || version(got) != "v2" {
				t.Fatalf("the call after the invalidation got %v, want v2", got)
			}
			close(l.gates[0])
			if got := <-old; got == nil || version(got) != "v1" {
				t.Fatalf("the call waiting for the old load got %v", got)
			}
			// What stays cached is the load that began after the
			// invalidation, never the one from before it, although the
			// old one ended last.
			if got := version(load(t, c, alice)); got != "v2" {
				t.Fatalf("cached: %s, want v2", got)
			}
			wantLoads(t, l, 2)
		})
	}
}

// Only the old load, and an invalidation while it runs: it is not stored.
func TestInvalidatedLoadIsNotStored(t *testing.T) {
	l := &loader{gate: make(chan struct{}), started: make(chan gateway.Principal, 2)}
	c := callercache.New(l, callercache.Options{TTL: time.Minute})
	done := make(chan *gateway.Caller, 1)
	go func() {
		got, _ := c.LoadCaller(context.Background(), alice)
		done <- got
	}()
	began(t, l)
	c.InvalidateWorkspace("ws-a")
	l.gate <- struct{}{}
	if got := <-done; version(got) != "v1" {
		t.Fatalf("got %s", version(got))
	}
	if c.Len() != 0 {
		t.Fatal("the invalidated load was stored")
	}
	close(l.gate)
	if got := version(load(t, c, alice)); got != "v2" {
		t.Fatalf("next call: %s, want a new load", got)
	}
}

func TestSingleflight(t *testing.T) {
	l := &loader{gate: make(chan struct{}), started: make(chan gateway.Principal, 64)}
	c := callercache.New(l, callercache.Options{TTL: time.Minute})
	const n = 32
	var wg sync.WaitGroup
	got := make([]*gateway.Caller, n)
	for i := range n {
		wg.Go(func() {
			var err error
			if got[i], err = c.LoadCaller(context.Background(), alice); err != nil {
				t.Error(err)
			}
		})
	}
	p := began(t, l)
	if p.Kind != "" || p.Scopes != nil || p.WorkspaceID != "ws-a" || p.Subject != "alice" || p.TaskID != "t1" || p.ProfileID != "bot" {
		t.Fatalf("the loader got %+v, want only the key's parts", p)
	}
	time.Sleep(20 * time.Millisecond) // let the others reach the flight (or, later, the entry)
	close(l.gate)
	wg.Wait()
	wantLoads(t, l, 1)
	for i := range got {
		if got[i] != got[0] {
			t.Fatalf("call %d got another caller", i)
		}
	}
}

// A waiting call whose context ends returns at once; the load goes on
// for the others, unaffected by that cancellation.
func TestWaiterCancellation(t *testing.T) {
	l := &loader{gate: make(chan struct{}), started: make(chan gateway.Principal, 2)}
	c := callercache.New(l, callercache.Options{TTL: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	leader := make(chan error, 1)
	go func() {
		_, err := c.LoadCaller(ctx, alice)
		leader <- err
	}()
	began(t, l)
	other := make(chan *gateway.Caller, 1)
	go func() {
		got, _ := c.LoadCaller(context.Background(), alice)
		other <- got
	}()
	cancel()
	if err := <-leader; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v, want context.Canceled", err)
	}
	close(l.gate)
	if got := <-other; got == nil || version(got) != "v1" {
		t.Fatalf("the other call got %v", got)
	}
	if e := l.ctxErr.Load(); e != "<nil>" {
		t.Fatalf("the load's context ended with the first call's: %v", e)
	}
	wantLoads(t, l, 1)
}

func TestErrorsAreNotCached(t *testing.T) {
	notFound := gateway.Errorf(gateway.ENotFound, "workspace ws-a not found")
	l := &loader{err: func(n int64) error {
		switch n {
		case 1:
			return notFound
		case 2:
			return gateway.Errorf(gateway.EUnavailable, "store down")
		}
		return nil
	}}
	c := callercache.New(l, callercache.Options{TTL: time.Minute})
	if _, err := c.LoadCaller(context.Background(), alice); !errors.Is(err, notFound) {
		t.Fatalf("first: %v, want the loader's error unchanged", err)
	}
	if _, err := c.LoadCaller(context.Background(), alice); gateway.ErrorCodeOf(err) != gateway.EUnavailable {
		t.Fatalf("second: %v, want a new load and its EUnavailable", err)
	}
	if got := version(load(t, c, alice)); got != "v3" {
		t.Fatalf("third: %s", got)
	}
	load(t, c, alice)
	wantLoads(t, l, 3)
}

func TestSizeBound(t *testing.T) {
	l := &loader{}
	c := callercache.New(l, callercache.Options{TTL: time.Minute, Size: 2})
	p := func(user string) *gateway.Principal { return &gateway.Principal{WorkspaceID: "ws-a", Subject: user} }
	load(t, c, p("u1"))
	load(t, c, p("u2"))
	load(t, c, p("u1")) // u1 is now the most recently used
	load(t, c, p("u3")) // pushes out u2
	if c.Len() != 2 {
		t.Fatalf("%d entries, want 2", c.Len())
	}
	wantLoads(t, l, 3)
	load(t, c, p("u1"))
	wantLoads(t, l, 3)
	load(t, c, p("u2"))
	wantLoads(t, l, 4)
}

// Loads, hits and invalidations from many goroutines (run with -race);
// afterwards nothing from before the last invalidation is served.
func TestConcurrentUse(t *testing.T) {
	l := &loader{}
	c := callercache.New(l, callercache.Options{TTL: time.Minute, Size: 8})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				p := &gateway.Principal{WorkspaceID: fmt.Sprintf("ws-%d", i%3), Subject: fmt.Sprintf("u%d", (g+i)%5)}
				if _, err := c.LoadCaller(context.Background(), p); err != nil {
					t.Error(err)
				}
				switch {
				case i%50 == g:
					c.InvalidateWorkspace(p.WorkspaceID)
				case i%97 == g:
					c.InvalidateAll()
				}
			}
		})
	}
	wg.Wait()
	c.InvalidateAll()
	before := l.loads.Load()
	load(t, c, alice)
	wantLoads(t, l, before+1)
}
