package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway"
)

// TestCallerCache: with the caller cache on (the default), a change through
// the admin API shows on the very next tools/call and tools/list of an open
// session, granting and revoking, and a change made behind the gateway's
// back (as through another replica) shows within the cache's TTL of 1 s.
// With MCPGATE_CALLER_CACHE_TTL=0 that change shows on the next call.
func TestCallerCache(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, dbURL(t), nil)
			s, ctx := g.app.Store, context.Background()
			must(t, s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-c", Name: "C", Slug: "c", OrgPlan: "team"}))
			must(t, s.PutTask(ctx, &gateway.Task{WorkspaceID: "ws-c", ID: "task-1", Status: gateway.TaskRunning}))
			must(t, s.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-c", UserID: "alice", Role: "owner", SeatType: "developer"}))
			must(t, s.PutProfile(ctx, &gateway.Profile{WorkspaceID: "ws-c", ID: "bot", Name: "bot", Allowlist: []string{}}))
			cs := g.connect(t, g.token(t, "ws-c", "alice", "task-1", "bot"))
			call := func(tool string) bool { // allowed: a result that is not a tool execution error
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
				return err == nil && !res.IsError
			}
			for range 5 {
				if call("workspace.info") || listed(t, cs)["workspace.info"] {
					t.Fatal("workspace.info (read tier) allowed or listed for a baseline-only profile")
				}
			}

			adminPUT(t, g.srv.URL, "/workspaces/ws-c/profiles/bot", `{"name":"bot","allowlist":["supacloud.read.*"]}`)
			if !call("workspace.info") || !listed(t, cs)["workspace.info"] {
				t.Fatal("the next call or list after granting read does not have workspace.info")
			}
			adminPUT(t, g.srv.URL, "/workspaces/ws-c/profiles/bot", `{"name":"bot","allowlist":[]}`)
			if call("workspace.info") {
				t.Fatal("the next call after revoking read was allowed: stale allow")
			}
			if listed(t, cs)["workspace.info"] {
				t.Fatal("the next list after revoking read still has workspace.info")
			}

			adminPUT(t, g.srv.URL, "/workspaces/ws-c/tasks/task-1", `{"status":"cancelled"}`)
			if call("memory.list_recent") {
				t.Fatal("the next call after cancelling the task was allowed: stale allow")
			}
			adminPUT(t, g.srv.URL, "/workspaces/ws-c/tasks/task-1", `{"status":"running"}`)
			if !call("memory.list_recent") {
				t.Fatal("the next call after restarting the task was denied")
			}

			// Behind the gateway's back: only the TTL ends the entry.
			changed := time.Now()
			must(t, s.PutProfile(ctx, &gateway.Profile{WorkspaceID: "ws-c", ID: "bot", Name: "bot", Allowlist: []string{"supacloud.read.*"}}))
			for !call("workspace.info") {
				if time.Since(changed) > 1500*time.Millisecond {
					t.Fatal("a change made outside the admin API was not seen within 1.5 s (TTL 1 s)")
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

func TestCallerCacheOff(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "sqlite:"+t.TempDir()+"/off.db", map[string]string{"MCPGATE_CALLER_CACHE_TTL": "0"})
	s, ctx := g.app.Store, context.Background()
	must(t, s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-c", Name: "C", Slug: "c", OrgPlan: "team"}))
	must(t, s.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-c", UserID: "alice", Role: "owner", SeatType: "developer"}))
	must(t, s.PutTask(ctx, &gateway.Task{WorkspaceID: "ws-c", ID: "task-1", Status: gateway.TaskRunning}))
	must(t, s.PutProfile(ctx, &gateway.Profile{WorkspaceID: "ws-c", ID: "bot", Name: "bot", Allowlist: []string{"supacloud.read.*"}}))
	cs := g.connect(t, g.token(t, "ws-c", "alice", "task-1", "bot"))
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "workspace.info", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("workspace.info: %v %+v", err, res)
	}
	must(t, s.PutProfile(ctx, &gateway.Profile{WorkspaceID: "ws-c", ID: "bot", Name: "bot", Allowlist: []string{}}))
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "workspace.info", Arguments: map[string]any{}}); err != nil || !res.IsError {
		t.Fatalf("with the cache off, a store change did not show on the next call: %v %+v", err, res)
	}
	if g.app.Callers.TTL() != 0 {
		t.Fatalf("cache TTL %v, want off", g.app.Callers.TTL())
	}
}
