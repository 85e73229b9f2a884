package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway"
)

// TestDeletedProfileFallsBack: deleting the profile a session's JWT names
// (DELETE /admin/v1/workspaces/{ws}/profiles/{profile}) makes that session
// fall back as one without agent_profile_id does, from its next request:
// it is notified (tools/list_changed), its tools/list and calls follow the
// workspace default profile, then, without a default, the read-only
// fallback; its decisions and audit rows carry profile.deleted. Creating
// the profile again gives it back. A profile id the workspace never had is
// still refused every tool. On both stores, with the caller cache on.
func TestDeletedProfileFallsBack(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, dbURL(t), nil)
			sw := &streamWatch{next: g.app.Server, opened: make(chan struct{}, 8)}
			srv := httptest.NewServer(sw)
			t.Cleanup(srv.Close) // after the sessions' cleanups, which end their streams
			s, ctx := g.app.Store, context.Background()
			must(t, s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-d", Name: "D", Slug: "d", OrgPlan: "team"}))
			must(t, s.PutTask(ctx, &gateway.Task{WorkspaceID: "ws-d", ID: "task-1", Status: gateway.TaskRunning}))
			must(t, s.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-d", UserID: "alice", Role: "owner", SeatType: "developer"}))
			adminPUT(t, srv.URL, "/workspaces/ws-d/profiles/bot", `{"name":"bot","allowlist":["supacloud.read.*","supacloud.ops.*"]}`)
			adminPUT(t, srv.URL, "/workspaces/ws-d/profiles/opsonly", `{"name":"opsonly","allowlist":["supacloud.ops.*"]}`)
			adminPUT(t, srv.URL, "/workspaces/ws-d/default-profile", `{"profile_id":"opsonly"}`)
			ids := g.demoIDs(t, "ws-d")
			n := connectStreaming(t, srv.URL, sw.opened, g.token(t, "ws-d", "alice", "task-1", "bot"))

			const read, ops = "projects.list", "schedule.resume"
			call := func(tool string) *mcp.CallToolResult {
				t.Helper()
				args := map[string]any{}
				if tool == ops {
					args = resolve(map[string]any{"schedule_id": "$schedule"}, ids)
				}
				res, err := n.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
				if err != nil {
					t.Fatalf("%s: %v", tool, err)
				}
				return res
			}
			// expect checks tools/list and a call of each tool against the
			// tools the session should have, and the call's audit row.
			expect := func(step string, wantRead, wantOps, deleted bool) {
				t.Helper()
				tools := listed(t, n.cs)
				for tool, want := range map[string]bool{read: wantRead, ops: wantOps} {
					if tools[tool] != want {
						t.Fatalf("%s: tools/list has %s = %v, want %v", step, tool, tools[tool], want)
					}
					res := call(tool)
					if res.IsError == want {
						t.Fatalf("%s: %s allowed = %v, want %v: %+v", step, tool, !res.IsError, want, res.Content)
					}
					ev := g.lastAudit(t, "ws-d", "task-1", tool)
					if got := containsString(ev.ReasonCodes, "profile.deleted"); got != deleted {
						t.Fatalf("%s: audit row of %s has reasons %v, want profile.deleted = %v", step, tool, ev.ReasonCodes, deleted)
					}
					if want && ev.Status != gateway.AuditAllowed || !want && ev.Status != gateway.AuditDenied {
						t.Fatalf("%s: audit row of %s has status %s", step, tool, ev.Status)
					}
					if !want && deleted {
						text := res.Content[0].(*mcp.TextContent).Text
						if !strings.Contains(text, `deleted agent profile "bot"`) && !strings.Contains(text, `agent profile "bot" of task task-1 was deleted`) {
							t.Fatalf("%s: the refusal of %s does not say the profile was deleted: %s", step, tool, text)
						}
					}
				}
			}
			expect("the named profile", true, true, false)

			status, body := adminDo(t, g, http.MethodDelete, "/workspaces/ws-d/profiles/bot", "e2e-admin-token", "")
			if status != http.StatusOK || !strings.Contains(body, "fall back to") {
				t.Fatalf("DELETE bot: %d %s", status, body)
			}
			if !n.wait(5 * time.Second) {
				t.Fatal("the session that named the deleted profile was not notified")
			}
			expect("deleted: the workspace default", false, true, true)

			adminPUT(t, srv.URL, "/workspaces/ws-d/default-profile", `{"profile_id":null}`)
			if !n.wait(5 * time.Second) {
				t.Fatal("not notified when the default the session fell back to was cleared")
			}
			expect("deleted, no default: the read-only fallback", true, false, true)

			adminPUT(t, srv.URL, "/workspaces/ws-d/profiles/bot", `{"name":"bot","allowlist":["supacloud.read.*","supacloud.ops.*"]}`)
			if !n.wait(5 * time.Second) {
				t.Fatal("not notified when the profile was created again")
			}
			expect("created again", true, true, false)

			// An id the workspace never had is refused every tool, as before.
			ghost := g.connect(t, g.token(t, "ws-d", "alice", "task-1", "ghost"))
			res, err := ghost.CallTool(ctx, &mcp.CallToolParams{Name: "memory.list_recent", Arguments: map[string]any{}})
			if err != nil || !res.IsError {
				t.Fatalf("a profile that never existed: %v %+v, want refused", err, res)
			}
			if ev := g.lastAudit(t, "ws-d", "task-1", "memory.list_recent"); !containsString(ev.ReasonCodes, "profile.not_in_workspace") {
				t.Fatalf("a profile that never existed: reasons %v, want profile.not_in_workspace", ev.ReasonCodes)
			}
		})
	}
}
