package e2e

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway"
)

// seedFixtures creates the workspaces, members, profiles, overrides and tasks
// the principal matrix runs against.
func seedFixtures(t *testing.T, g *gatewayUnderTest) map[string]map[string]any {
	t.Helper()
	ids := map[string]map[string]any{"ws-a": g.demoIDs(t, "ws-a"), "ws-c": g.demoIDs(t, "ws-c")}
	s, ctx := g.app.Store, context.Background()
	must(t, s.PutOrgPlan(ctx, &gateway.OrgPlan{Name: "team", Permissions: gateway.Permissions{"workspace.budget.view": true}}))
	must(t, s.PutSeatType(ctx, &gateway.SeatType{Name: "developer", Permissions: gateway.Permissions{"workspace.plan.view": false}}))
	must(t, s.PutSeatType(ctx, &gateway.SeatType{Name: "analyst", EnterpriseOnly: true, Permissions: gateway.Permissions{"workspace.members.view": false}}))
	for _, ws := range []string{"ws-a", "ws-b", "ws-c"} {
		must(t, s.PutWorkspace(ctx, &gateway.Workspace{ID: ws, Name: "Workspace " + ws, Slug: ws, OrgPlan: "team"}))
		must(t, s.PutTask(ctx, &gateway.Task{WorkspaceID: ws, ID: "task-" + ws, Status: gateway.TaskRunning}))
	}
	must(t, s.PutTask(ctx, &gateway.Task{WorkspaceID: "ws-a", ID: "task-done", Status: gateway.TaskCompleted}))
	for user, role := range map[string]string{"olivia": "owner", "adam": "admin", "mia": "member", "vic": "viewer"} {
		must(t, s.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-a", UserID: user, Role: role, SeatType: "developer"}))
	}
	must(t, s.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-a", UserID: "ana", Role: "member", SeatType: "analyst"}))
	must(t, s.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-c", UserID: "carl", Role: "owner", SeatType: "developer"}))
	must(t, s.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-b", UserID: "bea", Role: "owner", SeatType: "developer"}))
	must(t, s.PutMemberOverrides(ctx, "ws-a", "adam", gateway.Permissions{"workspace.budget.view": false, "workspace.plan.view": true}))
	profiles := []gateway.Profile{
		{WorkspaceID: "ws-a", ID: "reader", Name: "reader", Allowlist: []string{"supacloud.read.*"}},
		{WorkspaceID: "ws-a", ID: "operator", Name: "operator", Allowlist: []string{"supacloud.ops.*"}},
		{WorkspaceID: "ws-a", ID: "scripter", Name: "scripter", Allowlist: []string{"supacloud.script.run"}, ScriptAllowlist: []string{ids["ws-a"]["$script"].(string)}},
		{WorkspaceID: "ws-a", ID: "full", Name: "full", Allowlist: []string{"supacloud.full"}},
		{WorkspaceID: "ws-a", ID: "full-noscripts", Name: "full-noscripts", Allowlist: []string{"supacloud.full"}, ScriptAllowlist: []string{}},
		{WorkspaceID: "ws-a", ID: "deployer", Name: "deployer", Allowlist: []string{"supacloud.deploy.*"}},
		{WorkspaceID: "ws-a", ID: "scaffolder", Name: "scaffolder", Allowlist: []string{"supacloud.scaffold.*"}},
		{WorkspaceID: "ws-a", ID: "exact", Name: "exact", Allowlist: []string{"project.get", "supacloud.schedule.pause"}},
		{WorkspaceID: "ws-a", ID: "conv", Name: "conv", Allowlist: []string{"supacloud.conversation.*"}},
		{WorkspaceID: "ws-a", ID: "empty", Name: "empty", Allowlist: []string{}},
		{WorkspaceID: "ws-b", ID: "b-full", Name: "b-full", Allowlist: []string{"supacloud.full"}},
		{WorkspaceID: "ws-c", ID: "c-default", Name: "c-default", Allowlist: []string{"supacloud.ops.*"}},
	}
	for i := range profiles {
		must(t, s.PutProfile(ctx, &profiles[i]))
	}
	def := "c-default"
	must(t, s.SetDefaultProfile(ctx, "ws-c", &def))
	return ids
}

// matrixCase is one principal × tool: whether tools/list shows the tool, and
// what a tools/call with those arguments does.
type matrixCase struct {
	note          string
	ws, user      string
	task, profile string
	tool          string
	args          map[string]any
	listed        bool
	allowed       bool
	reason        string   // reason code of the denial
	absent        []string // fields that must be redacted from the result
	present       []string // fields that must be in the result
}

var matrix = []matrixCase{
	{note: "fallback reads", ws: "ws-a", user: "mia", tool: "projects.list", listed: true, allowed: true},
	{note: "fallback has no ops", ws: "ws-a", user: "mia", tool: "workflow.trigger", args: map[string]any{"workflow_id": "wf-1"}, reason: "allowlist.missing_grant"},
	{note: "baseline always on without profile", ws: "ws-a", user: "mia", tool: "memory.search", args: map[string]any{"query": "deploy"}, listed: true, allowed: true},
	{note: "reader cannot deploy", ws: "ws-a", user: "olivia", profile: "reader", tool: "app.pause", args: map[string]any{"app_id": "$app"}, reason: "allowlist.missing_grant"},
	{note: "operator triggers workflow", ws: "ws-a", user: "mia", profile: "operator", tool: "schedule.pause", args: map[string]any{"schedule_id": "$schedule"}, listed: true, allowed: true},
	{note: "ops wildcard excludes script.run", ws: "ws-a", user: "mia", profile: "operator", tool: "script.run", args: map[string]any{"slug": "backup-db"}, reason: "script.not_granted"},
	{note: "ops wildcard excludes deploy", ws: "ws-a", user: "olivia", profile: "operator", tool: "app.resume", args: map[string]any{"app_id": "$app"}, reason: "allowlist.missing_grant"},
	{note: "operator has no reads", ws: "ws-a", user: "mia", profile: "operator", tool: "projects.list", reason: "allowlist.missing_grant"},
	{note: "carve-out grant runs allowed slug", ws: "ws-a", user: "mia", profile: "scripter", tool: "script.run", args: map[string]any{"slug": "$script"}, listed: true, allowed: true},
	{note: "script_allowlist refuses other slug", ws: "ws-a", user: "mia", profile: "scripter", tool: "script.run", args: map[string]any{"slug": "drop-tables"}, listed: true, reason: "script.slug_not_allowed"},
	{note: "empty script_allowlist hides script.run", ws: "ws-a", user: "olivia", profile: "full-noscripts", tool: "script.run", args: map[string]any{"slug": "backup-db"}, reason: "script.slug_not_allowed"},
	{note: "full grants script.run", ws: "ws-a", user: "mia", profile: "full", tool: "script.run", args: map[string]any{"slug": "$script"}, listed: true, allowed: true},
	{note: "full + owner deploys", ws: "ws-a", user: "olivia", profile: "full", tool: "app.pause", args: map[string]any{"app_id": "$app"}, listed: true, allowed: true},
	{note: "full + member cannot deploy", ws: "ws-a", user: "mia", profile: "full", tool: "app.pause", args: map[string]any{"app_id": "$app"}, reason: "deploy.role_required"},
	{note: "deploy grant + admin", ws: "ws-a", user: "adam", profile: "deployer", tool: "app.undeploy", args: map[string]any{"app_id": "$app"}, listed: true, allowed: true},
	{note: "deploy grant + viewer", ws: "ws-a", user: "vic", profile: "deployer", tool: "app.undeploy", args: map[string]any{"app_id": "$app"}, reason: "deploy.role_required"},
	{note: "full + viewer cannot call ops (issue 22 item 17)", ws: "ws-a", user: "vic", profile: "full", tool: "schedule.pause", args: map[string]any{"schedule_id": "$schedule"}, reason: "role.viewer_read_only"},
	{note: "full + viewer cannot run script.run", ws: "ws-a", user: "vic", profile: "full", tool: "script.run", args: map[string]any{"slug": "$script"}, reason: "role.viewer_read_only"},
	{note: "full + viewer cannot scaffold", ws: "ws-a", user: "vic", profile: "full", tool: "scaffold.workflow.propose", args: map[string]any{"name": "nightly", "definition": map[string]any{"nodes": []any{map[string]any{"id": "build", "type": "script"}}}}, reason: "role.viewer_read_only"},
	{note: "full + viewer still reads", ws: "ws-a", user: "vic", profile: "full", tool: "project.get", args: map[string]any{"project_id": "$project"}, listed: true, allowed: true},
	{note: "deploy grant + non-member", ws: "ws-a", user: "stranger", profile: "deployer", tool: "app.resume", args: map[string]any{"app_id": "$app"}, reason: "actor.not_member"},
	{note: "non-member gets no read", ws: "ws-a", user: "stranger", profile: "full", tool: "projects.list", reason: "actor.not_member"},
	{note: "non-member gets no baseline", ws: "ws-a", user: "stranger", tool: "memory.search", args: map[string]any{"query": "x"}, reason: "actor.not_member"},
	{note: "member of another workspace", ws: "ws-a", user: "bea", profile: "full", tool: "workspace.info", reason: "actor.not_member"},
	{note: "owner without deploy grant", ws: "ws-a", user: "olivia", profile: "scaffolder", tool: "app.undeploy", args: map[string]any{"app_id": "$app"}, reason: "allowlist.missing_grant"},
	{note: "exact tool name", ws: "ws-a", user: "mia", profile: "exact", tool: "project.get", args: map[string]any{"project_id": "$project"}, listed: true, allowed: true},
	{note: "supacloud.<tool> grant", ws: "ws-a", user: "mia", profile: "exact", tool: "schedule.pause", args: map[string]any{"schedule_id": "$schedule"}, listed: true, allowed: true},
	{note: "exact grant is only that tool", ws: "ws-a", user: "mia", profile: "exact", tool: "projects.list", reason: "allowlist.missing_grant"},
	{note: "conversation wildcard reads", ws: "ws-a", user: "mia", profile: "conv", tool: "conversation.list", args: map[string]any{"resource": "$resource"}, listed: true, allowed: true},
	{note: "conversation wildcard is not ops", ws: "ws-a", user: "mia", profile: "conv", tool: "conversation.resolve", args: map[string]any{"resource": "$resource", "conversation_id": "$conversation"}, reason: "allowlist.missing_grant"},
	{note: "empty allowlist keeps baseline", ws: "ws-a", user: "mia", profile: "empty", tool: "memory.list_recent", listed: true, allowed: true},
	{note: "empty allowlist has no reads", ws: "ws-a", user: "mia", profile: "empty", tool: "projects.list", reason: "allowlist.missing_grant"},
	{note: "scaffold proposal", ws: "ws-a", user: "mia", profile: "scaffolder", tool: "scaffold.workflow.propose", args: map[string]any{"name": "nightly", "definition": map[string]any{"nodes": []any{map[string]any{"id": "build", "type": "script"}}}}, listed: true, allowed: true},
	{note: "profile of another workspace", ws: "ws-a", user: "mia", profile: "b-full", tool: "memory.search", args: map[string]any{"query": "x"}, reason: "profile.not_in_workspace"},
	{note: "default profile grants ops", ws: "ws-c", user: "carl", tool: "schedule.resume", args: map[string]any{"schedule_id": "$schedule"}, listed: true, allowed: true},
	{note: "default profile replaces read fallback", ws: "ws-c", user: "carl", tool: "projects.list", reason: "allowlist.missing_grant"},
	{note: "completed task", ws: "ws-a", user: "mia", task: "task-done", tool: "memory.search", args: map[string]any{"query": "x"}, reason: "task.not_running"},
	{note: "task never seen: registered as running on its first request", ws: "ws-a", user: "mia", task: "task-new", tool: "memory.search", args: map[string]any{"query": "x"}, listed: true, allowed: true},
	{note: "seat type hides plan tier", ws: "ws-a", user: "mia", profile: "reader", tool: "workspace.info", listed: true, allowed: true, absent: []string{"plan_tier"}, present: []string{"budget_remaining", "member_count"}},
	{note: "user override beats org plan and seat", ws: "ws-a", user: "adam", profile: "reader", tool: "workspace.info", listed: true, allowed: true, absent: []string{"budget_remaining"}, present: []string{"plan_tier", "member_count"}},
	{note: "enterprise-only seat does nothing on community", ws: "ws-a", user: "ana", profile: "reader", tool: "workspace.info", listed: true, allowed: true, present: []string{"member_count", "plan_tier", "budget_remaining"}},
	{note: "client workspace_id must match", ws: "ws-a", user: "mia", profile: "reader", tool: "projects.list", args: map[string]any{"workspace_id": "ws-b"}, listed: true, reason: "workspace.mismatch"},
	{note: "own workspace_id is fine", ws: "ws-a", user: "mia", profile: "reader", tool: "projects.list", args: map[string]any{"workspace_id": "ws-a"}, listed: true, allowed: true},
}

func TestPrincipalMatrix(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, dbURL(t), nil)
			ids := seedFixtures(t, g)
			for _, c := range matrix {
				t.Run(c.note, func(t *testing.T) { runMatrixCase(t, g, c, ids[c.ws]) })
			}
		})
	}
}

func runMatrixCase(t *testing.T, g *gatewayUnderTest, c matrixCase, ids map[string]any) {
	task := c.task
	if task == "" {
		task = "task-" + c.ws
	}
	cs := g.connect(t, g.token(t, c.ws, c.user, task, c.profile))
	if got := listed(t, cs)[c.tool]; got != c.listed {
		t.Errorf("tools/list shows %s = %v, want %v", c.tool, got, c.listed)
	}
	args := resolve(c.args, ids)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: args})
	ev := g.lastAudit(t, c.ws, task, c.tool)
	if c.allowed {
		if err != nil {
			t.Fatalf("tools/call %s: %v", c.tool, err)
		}
		if res.IsError {
			t.Fatalf("tools/call %s returned a tool error: %s", c.tool, textOf(res))
		}
		checkFields(t, res, c.absent, c.present)
		if ev.Status != gateway.AuditAllowed || ev.DecisionID == "" {
			t.Errorf("audit row status=%q decision=%q, want allowed with a decision id", ev.Status, ev.DecisionID)
		}
		return
	}
	// A denial is a tool execution error: the result, isError set, its
	// text what was refused and what to do, and the denial in _meta
	// naming the reason (docs/http.md, Errors; TestDenialOnTheWire has the
	// raw bytes).
	if err != nil {
		t.Fatalf("tools/call %s: %v; want a tool execution error, not a JSON-RPC error", c.tool, err)
	}
	msg := textOf(res)
	if !res.IsError {
		t.Fatalf("tools/call %s: want a denial, got result %+v", c.tool, res)
	}
	if !contains(msg, c.tool) && !contains(msg, "workspace") && !contains(msg, "task") {
		t.Errorf("denial message does not say what was refused: %q", msg)
	}
	if d, _ := res.Meta["io.mcpgate/denial"].(map[string]any); d["class"] != "Forbidden" || d["status"] != 403.0 || d["code"] != c.reason {
		t.Errorf("denial _meta %v, want class Forbidden, status 403, code %s", res.Meta, c.reason)
	}
	if ev.Status != gateway.AuditDenied || !containsString(ev.ReasonCodes, c.reason) {
		t.Errorf("audit row status=%q reasons=%v, want denied with %s", ev.Status, ev.ReasonCodes, c.reason)
	}
}

func checkFields(t *testing.T, res *mcp.CallToolResult, absent, present []string) {
	t.Helper()
	sc, _ := res.StructuredContent.(map[string]any)
	if len(absent)+len(present) > 0 && sc == nil {
		t.Fatalf("result has no structuredContent: %+v", res)
	}
	text := textOf(res)
	for _, f := range absent {
		if _, ok := sc[f]; ok {
			t.Errorf("field %s should be redacted, result has it", f)
		}
		if contains(text, `"`+f+`"`) {
			t.Errorf("field %s should be redacted from the text content too: %s", f, text)
		}
	}
	for _, f := range present {
		if _, ok := sc[f]; !ok {
			t.Errorf("field %s should be in the result, it is missing", f)
		}
	}
}

func hasReason(rs []gateway.Reason, code string) bool {
	for _, r := range rs {
		if r.Code == code {
			return true
		}
	}
	return false
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func textOf(res *mcp.CallToolResult) string {
	var out string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out += tc.Text
		}
	}
	return out
}

// TestEditionGate: the same member with an enterprise-only seat type sees
// member_count on a community instance (the seat does nothing there) and
// loses it on an enterprise instance, where the seat's
// workspace.members.view=false applies (docs/requirements.md#edition and
// docs/requirements.md#precedence).
func TestEditionGate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		edition string
		absent  []string
		present []string
	}{
		{"community", nil, []string{"member_count"}},
		{"enterprise", []string{"member_count"}, []string{"budget_remaining"}},
	} {
		t.Run(c.edition, func(t *testing.T) {
			g := startGateway(t, "sqlite:"+t.TempDir()+"/ed.db", map[string]string{"SUPACLOUD_EDITION": c.edition})
			seedFixtures(t, g)
			cs := g.connect(t, g.token(t, "ws-a", "ana", "task-ws-a", "reader"))
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "workspace.info", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("workspace.info: %v %+v", err, res)
			}
			checkFields(t, res, c.absent, c.present)
		})
	}
}
