package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/gateway/callercache"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
	"github.com/mcpgate/mcpgate/gateway/server"
	"github.com/mcpgate/mcpgate/gateway/sqlite"
	"github.com/mcpgate/mcpgate/tools"
)

// countingStore counts the store's LoadCaller calls.
type countingStore struct {
	server.FullStore
	loads atomic.Int64
}

func (s *countingStore) LoadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error) {
	s.loads.Add(1)
	return s.FullStore.LoadCaller(ctx, p)
}

// infoAdapter answers every call with a workspace.info-like result, so that
// redactions (obligations of the seat type and plan) show.
type infoAdapter struct{ calls atomic.Int64 }

func (a *infoAdapter) CallTool(context.Context, gateway.ToolCall) (*gateway.ToolResult, error) {
	a.calls.Add(1)
	return &gateway.ToolResult{StructuredContent: map[string]any{"plan_tier": "team", "budget_remaining": 10, "member_count": 1}}, nil
}

// cachedGateway is the real policy engine, pipeline and HTTP server (with
// its admin API) over an in-memory store, with a caller cache whose TTL
// is long enough that only invalidation can make a change show.
type cachedGateway struct {
	store   *countingStore
	pl      *pipeline.Pipeline
	srv     *server.Server
	adapter *infoAdapter
	p       *gateway.Principal
}

// memoryStore is a migrated embedded store in memory, closed with the test.
func memoryStore(t *testing.T) *sqlite.Store {
	t.Helper()
	sq, err := sqlite.Open(context.Background(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sq.Close() })
	if err := sq.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return sq
}

func newCachedGateway(t *testing.T) *cachedGateway {
	t.Helper()
	sq := memoryStore(t)
	return newCachedGatewayOn(t, sq, time.Hour, config.DefaultLimits())
}

// newCachedGatewayOn is newCachedGateway on a migrated store fs, with a
// cache of TTL ttl (0: no cache) and the rate limits limits.
func newCachedGatewayOn(t testing.TB, fs server.FullStore, ttl time.Duration, limits config.Limits) *cachedGateway {
	t.Helper()
	ctx := context.Background()
	s := &countingStore{FullStore: fs}
	rules := ratelimit.NewRules(server.RateLimits(limits))
	for _, err := range []error{
		s.PutOrgPlan(ctx, &gateway.OrgPlan{Name: "team", Permissions: gateway.Permissions{}}),
		s.PutSeatType(ctx, &gateway.SeatType{Name: "developer", Permissions: gateway.Permissions{"workspace.plan.view": false}}),
		s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-a", Name: "A", Slug: "a", OrgPlan: "team"}),
		s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-b", Name: "B", Slug: "b", OrgPlan: "team"}),
		s.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-a", UserID: "alice", Role: gateway.RoleOwner, SeatType: "developer"}),
		s.PutTask(ctx, &gateway.Task{WorkspaceID: "ws-a", ID: "t1", Status: gateway.TaskRunning}),
		s.PutProfile(ctx, &gateway.Profile{WorkspaceID: "ws-a", ID: "bot", Name: "bot", Allowlist: []string{"supacloud.read.*"}}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	cat, err := tools.Load()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Edition: gateway.EditionCommunity}
	engine, err := server.NewEngine(ctx, cfg, cat)
	if err != nil {
		t.Fatal(err)
	}
	jwt, err := auth.NewJWT(auth.JWTConfig{Secret: []byte(strings.Repeat("k", 32)), Audience: "mcpgate"})
	if err != nil {
		t.Fatal(err)
	}
	cache := callercache.New(s, callercache.Options{TTL: ttl})
	up := &infoAdapter{}
	pl := &pipeline.Pipeline{Store: s, Callers: cache, Decider: engine, Catalog: cat, Adapter: up,
		Logger: zap.NewNop(), RateLimits: &rules}
	srv, err := server.New(server.Deps{Store: s, Pipeline: pl, Auth: jwt, AdminToken: "admin-token",
		ValidateGrant: server.GrantValidator(engine, cat), Logger: zap.NewNop(), Registry: prometheus.NewRegistry(),
		Callers: cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return &cachedGateway{store: s, pl: pl, srv: srv, adapter: up,
		p: &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "alice", WorkspaceID: "ws-a", TaskID: "t1", ProfileID: "bot"}}
}

// admin sends one admin API request through the server's handler.
func (g *cachedGateway) admin(t testing.TB, method, path, body string) {
	t.Helper()
	r := httptest.NewRequest(method, "/admin/v1"+path, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer admin-token")
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	g.srv.ServeHTTP(w, r)
	if w.Code/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body.String())
	}
}

// call runs one tools/call and returns its result, or nil and the error.
func (g *cachedGateway) call(t testing.TB, tool string) (*gateway.ToolResult, error) {
	t.Helper()
	args := map[string]any{}
	if tool == "schedule.pause" {
		args["schedule_id"] = "s1"
	}
	raw, _ := json.Marshal(args)
	return g.pl.CallTool(context.Background(), g.p, &gateway.CallRequest{Name: tool, Arguments: args, RawArguments: raw})
}

func (g *cachedGateway) allowed(t testing.TB, tool string) bool {
	t.Helper()
	_, err := g.call(t, tool)
	if err != nil && gateway.ErrorCodeOf(err) != gateway.EForbidden {
		t.Fatalf("%s: %v", tool, err)
	}
	return err == nil
}

func (g *cachedGateway) listed(t testing.TB, tool string) bool {
	t.Helper()
	ts, err := g.pl.ListTools(context.Background(), g.p)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ts {
		if x.Name == tool {
			return true
		}
	}
	return false
}

// loadsSince returns how many store loads happened since the last call.
func (g *cachedGateway) loadsSince(last *int64) int64 {
	n := g.store.loads.Load()
	d := n - *last
	*last = n
	return d
}

// Many calls of one session read the store once; every change through the
// admin API (profile, default profile, task status, overrides, member,
// seat type, org plan) shows on the very next tools/call and tools/list,
// granting and revoking: no stale allow.
func TestCallerCacheThroughTheAdminAPI(t *testing.T) {
	g := newCachedGateway(t)
	var last int64
	for range 20 {
		if !g.allowed(t, "workspace.info") {
			t.Fatal("workspace.info denied")
		}
	}
	if g.allowed(t, "schedule.pause") || g.listed(t, "schedule.pause") {
		t.Fatal("schedule.pause allowed or listed before the grant")
	}
	if n := g.loadsSince(&last); n != 1 {
		t.Fatalf("22 calls of one session read the store %d times, want 1", n)
	}

	// Profile: grant ops, then take it away again.
	g.admin(t, http.MethodPut, "/workspaces/ws-a/profiles/bot", `{"name":"bot","allowlist":["supacloud.read.*","supacloud.ops.*"]}`)
	if !g.allowed(t, "schedule.pause") {
		t.Fatal("the next call after granting ops was denied: stale caller")
	}
	if !g.listed(t, "schedule.pause") {
		t.Fatal("the next tools/list after granting ops lacks schedule.pause")
	}
	g.admin(t, http.MethodPut, "/workspaces/ws-a/profiles/bot", `{"name":"bot","allowlist":["supacloud.read.*"]}`)
	if g.listed(t, "schedule.pause") {
		t.Fatal("the next tools/list after revoking ops still lists schedule.pause")
	}
	if g.allowed(t, "schedule.pause") {
		t.Fatal("the next call after revoking ops was allowed: stale allow")
	}
	if n := g.loadsSince(&last); n != 2 {
		t.Fatalf("after two changes the store was read %d times, want 2 (one per change)", n)
	}

	// Default profile: a session without a profile claim.
	noProfile := *g.p
	noProfile.ProfileID = ""
	g.p = &noProfile
	if !g.allowed(t, "workspace.info") || g.allowed(t, "schedule.pause") {
		t.Fatal("the read-only fallback should allow workspace.info and deny schedule.pause")
	}
	g.admin(t, http.MethodPut, "/workspaces/ws-a/profiles/ops", `{"name":"ops","allowlist":["supacloud.read.*","supacloud.ops.*"]}`)
	g.admin(t, http.MethodPut, "/workspaces/ws-a/default-profile", `{"profile_id":"ops"}`)
	if !g.allowed(t, "schedule.pause") {
		t.Fatal("the next call after setting the default profile was denied")
	}
	g.admin(t, http.MethodPut, "/workspaces/ws-a/default-profile", `{"profile_id":null}`)
	if g.allowed(t, "schedule.pause") {
		t.Fatal("the next call after clearing the default profile was allowed: stale allow")
	}

	// Task status: a completed task may call nothing.
	g.admin(t, http.MethodPut, "/workspaces/ws-a/tasks/t1", `{"status":"completed"}`)
	if g.allowed(t, "workspace.info") || g.listed(t, "workspace.info") {
		t.Fatal("the next call after completing the task was allowed or listed")
	}
	g.admin(t, http.MethodPut, "/workspaces/ws-a/tasks/t1", `{"status":"running"}`)
	if !g.allowed(t, "workspace.info") {
		t.Fatal("the next call after restarting the task was denied")
	}

	// Global changes (seat types, org plans) reach every workspace: the
	// seat type's plan.view grant decides the plan_tier redaction.
	plan := func() bool {
		t.Helper()
		res, err := g.call(t, "workspace.info")
		if err != nil {
			t.Fatal(err)
		}
		_, ok := res.StructuredContent["plan_tier"]
		return ok
	}
	if plan() {
		t.Fatal("plan_tier shown although the seat type denies workspace.plan.view")
	}
	g.admin(t, http.MethodPut, "/seat-types/developer", `{"permissions":{"workspace.plan.view":true}}`)
	if !plan() {
		t.Fatal("the next call after the seat type change still redacts plan_tier")
	}
	g.admin(t, http.MethodPut, "/workspaces/ws-a/members/alice/permission-overrides", `{"workspace.plan.view":false}`)
	if plan() {
		t.Fatal("the next call after the member override still shows plan_tier")
	}
}

// A change to another workspace keeps this workspace's entry.
func TestCallerCacheOtherWorkspace(t *testing.T) {
	g := newCachedGateway(t)
	var last int64
	g.allowed(t, "workspace.info")
	g.admin(t, http.MethodPut, "/workspaces/ws-b/profiles/bot", `{"name":"bot","allowlist":["supacloud.ops.*"]}`)
	g.allowed(t, "workspace.info")
	if n := g.loadsSince(&last); n != 1 {
		t.Fatalf("a change to ws-b made ws-a read the store again (%d reads, want 1)", n)
	}
}

// Concurrent calls share one cached Caller; with -race this shows that
// nothing on the request path writes to it.
func TestCallerCacheSharedCallerIsReadOnly(t *testing.T) {
	g := newCachedGateway(t)
	g.admin(t, http.MethodPut, "/workspaces/ws-a/profiles/bot", `{"name":"bot","allowlist":["supacloud.read.*","supacloud.ops.*"]}`)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 10 {
				tool := "workspace.info"
				if i%2 == 0 {
					tool = "schedule.pause"
				}
				if _, err := g.call(t, tool); err != nil && gateway.ErrorCodeOf(err) != gateway.ERateLimited {
					t.Error(err)
				}
				if _, err := g.pl.ListTools(context.Background(), g.p); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n := g.store.loads.Load(); n != 1 {
		t.Fatalf("%d store reads, want 1", n)
	}
}
