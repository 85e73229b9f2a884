package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// seedExplain creates workspace ws-e on a new embedded store: member u1
// (role member) whose workspace.budget.view is overridden false, and
// profile p-1 granting supacloud.read.*.
func seedExplain(t *testing.T) string {
	t.Helper()
	url := "sqlite:" + filepath.Join(t.TempDir(), "explain.db")
	s, err := server.OpenStore(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, err := range []error{
		s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-e", Name: "E", OrgPlan: "team"}),
		s.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-e", UserID: "u1", Role: gateway.RoleMember}),
		s.PutMemberOverrides(ctx, "ws-e", "u1", gateway.Permissions{"workspace.budget.view": false}),
		s.PutProfile(ctx, &gateway.Profile{WorkspaceID: "ws-e", ID: "p-1", Name: "reader", Allowlist: []string{"supacloud.read.*"}}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return url
}

func TestPolicyExplain(t *testing.T) {
	env := map[string]string{"MCPGATE_DATABASE_URL": seedExplain(t)}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string
		err  string
	}{
		{"denied ops call", []string{"--tool", "workflow.trigger"}, nil, []string{
			"decision: denied (tier ops", "for user u1",
			"decided by: gate grant (data.supacloud.tool_granted), reason allowlist.missing_grant",
			"reason allowlist.missing_grant: tool workflow.trigger needs supacloud.ops.*",
			"FAIL  grant", "pass  member",
			"profile: profile reader (p-1), source requested; allowlist: supacloud.read.*",
			"granted by (none); would grant: supacloud.full, supacloud.ops.*, supacloud.workflow.trigger, workflow.trigger",
			"note: task t-1 is not registered yet",
		}, ""},
		{"permission chain", []string{"--tool", "workspace.info"}, nil, []string{
			"decision: allowed (tier read",
			"budget_remaining: workspace.budget.view = false, decided by user_override (the field is removed from the result)",
			"user_override=false  seat_type[skipped: no seat type, or enterprise-only on this edition]=-  workspace_override=-  org_plan=-  default=true",
			"plan_tier: workspace.plan.view = true, decided by default",
		}, ""},
		{name: "all permissions", args: []string{"--tool", "project.get", "--all-permissions"}, want: []string{
			"all permission keys (user override",
			"  workspace.budget.view = false, decided by user_override",
			"  workspace.plan.view = true, decided by default",
		}},
		{"deploy role", []string{"--tool", "app.deploy"}, nil, []string{"reason allowlist.missing_grant", "the acting user must be owner, admin"}, ""},
		{"json", []string{"--tool", "project.get", "--json"}, nil, []string{`"decided_by": {`, `"decision_id":`, `"user": "u1"`}, ""},
		{"unknown tool", []string{"--tool", "nope"}, nil, nil, `tool "nope" is not in the catalog`},
		{"bad args", []string{"--tool", "project.get", "--args", "[1]"}, nil, nil, "args must be a JSON object"},
		{"bad edition", []string{"--tool", "project.get"}, map[string]string{"SUPACLOUD_EDITION": "gold"}, nil, `SUPACLOUD_EDITION="gold"`},
		{"unknown workspace", []string{"--tool", "project.get", "--workspace", "ws-x"}, nil, nil, "ws-x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{}
			for k, v := range env {
				e[k] = v
			}
			for k, v := range tc.env {
				e[k] = v
			}
			args := append([]string{"policy", "explain", "--workspace", "ws-e", "--task", "t-1", "--profile", "p-1", "--user", "u1"}, tc.args...)
			out, err := runCmd(t, e, args...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if tc.name == "json" && !json.Valid([]byte(out)) {
				t.Errorf("--json printed no JSON:\n%s", out)
			}
		})
	}
}

// Without --all-permissions the text names only the keys the tool reads
// (project.get reads none).
func TestPolicyExplainOnlyTheToolsKeysByDefault(t *testing.T) {
	out, err := runCmd(t, map[string]string{"MCPGATE_DATABASE_URL": seedExplain(t)},
		"policy", "explain", "--workspace", "ws-e", "--task", "t-1", "--profile", "p-1", "--user", "u1", "--tool", "project.get")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "decision: allowed") || strings.Contains(out, "all permission keys") || strings.Contains(out, "workspace.budget.view") {
		t.Errorf("want an allowed decision naming no permission key:\n%s", out)
	}
}

// With --surface ccserver the call is a cc_server credential's, decided
// and explained by data.ccserver with the user's memberships from the
// store.
func TestPolicyExplainCCServer(t *testing.T) {
	out, err := runCmd(t, map[string]string{"MCPGATE_DATABASE_URL": seedExplain(t)},
		"policy", "explain", "--surface", "ccserver", "--user", "u1", "--mode", "plan", "--tool", "create_ticket", "--args", `{"workspace_id":"ws-e"}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"decision: denied", "for user u1",
		"decided by: gate mode_tool (data.ccserver.mode_visible), reason mode.tool_not_allowed",
		"pass  workspace", "FAIL  mode_tool",
		"mode: plan; workspace of the call: ws-e; reachable: the workspaces you are a member of: ws-e",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if _, err := runCmd(t, map[string]string{"MCPGATE_DATABASE_URL": seedExplain(t)},
		"policy", "explain", "--surface", "ccserver", "--user", "u1", "--task", "t-1", "--tool", "create_ticket"); err == nil || !strings.Contains(err.Error(), "task is not a field of a ccserver session") {
		t.Errorf("err %v, want the task refused", err)
	}
}
