package server_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// explainApp is a gateway on an embedded store with workspace ws-a: member
// u1 (role member, workspace.budget.view overridden false), profile p-1
// granting supacloud.read.*, and one audited call of u1 in task t-old.
func explainApp(t *testing.T) *server.App {
	t.Helper()
	app := openExplainApp(t, nil)
	ctx, s := context.Background(), app.Store
	for _, err := range []error{
		s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-a", Name: "A", OrgPlan: "team"}),
		s.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: gateway.RoleMember}),
		s.PutMemberOverrides(ctx, "ws-a", "u1", gateway.Permissions{"workspace.budget.view": false}),
		s.PutProfile(ctx, &gateway.Profile{WorkspaceID: "ws-a", ID: "p-1", Name: "reader", Allowlist: []string{"supacloud.read.*"}}),
		s.RecordAudit(ctx, &gateway.AuditEvent{WorkspaceID: "ws-a", TaskID: "t-old", Actor: "u1", PrincipalKind: gateway.PrincipalAgent,
			Tool: "project.get", Tier: "read", Status: gateway.AuditAllowed, ReasonCodes: []string{}}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return app
}

// openExplainApp is a gateway on a new embedded store with the admin
// token postExplain sends, and the variables extra.
func openExplainApp(t *testing.T, extra map[string]string) *server.App {
	t.Helper()
	vars := map[string]string{
		"MCPGATE_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "explain.db"),
		"MCPGATE_JWT_SECRET":   "explain-test-secret-0123456789abcdef0123",
		"MCPGATE_ADMIN_TOKEN":  "explain-admin-token",
	}
	for k, v := range extra {
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	app, err := server.Open(context.Background(), cfg, zap.NewNop(), "explain-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	return app
}

type explainReply struct {
	User     string
	Notes    []string
	Decision gateway.Decision
	Explain  struct {
		DecidedBy struct{ Gate, Code, Rule any } `json:"decided_by"`
		Grant     struct {
			GrantedBy  []string `json:"granted_by"`
			WouldGrant []string `json:"would_grant"`
		}
		Permissions []struct {
			Field     string
			DecidedBy string `json:"decided_by"`
		}
	}
	Input map[string]any
	Error struct{ Code, Message string }
}

func postExplain(t *testing.T, app *server.App, body string) (int, explainReply) {
	t.Helper()
	req := httptest.NewRequest("POST", "/admin/v1/explain", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer explain-admin-token")
	rec := httptest.NewRecorder()
	app.Server.ServeHTTP(rec, req)
	var out explainReply
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("reply %s: %v", rec.Body, err)
	}
	return rec.Code, out
}

// TestExplainEndpoint: POST /admin/v1/explain loads the caller from the
// store as the request path does and explains the engine's decision.
func TestExplainEndpoint(t *testing.T) {
	app := explainApp(t)
	t.Run("denied ops call names the grant", func(t *testing.T) {
		code, r := postExplain(t, app, `{"workspace":"ws-a","task":"t-new","profile":"p-1","user":"u1","tool":"workflow.trigger"}`)
		if code != 200 || r.Decision.Allow || r.Decision.ID == "" {
			t.Fatalf("%d %+v", code, r)
		}
		if r.Explain.DecidedBy.Gate != "grant" || r.Explain.DecidedBy.Code != "allowlist.missing_grant" || len(r.Decision.Reasons) == 0 {
			t.Errorf("decided_by %+v, reasons %v", r.Explain.DecidedBy, r.Decision.Reasons)
		}
		if len(r.Explain.Grant.GrantedBy) != 0 || !contains(r.Explain.Grant.WouldGrant, "supacloud.ops.*") {
			t.Errorf("grant %+v", r.Explain.Grant)
		}
		if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "t-new is not registered yet") {
			t.Errorf("notes %q, want the unregistered task", r.Notes)
		}
	})
	t.Run("the task is not registered by explaining", func(t *testing.T) {
		if _, err := app.Store.Task(context.Background(), "ws-a", "t-new"); gateway.ErrorCodeOf(err) != gateway.ENotFound {
			t.Errorf("task t-new: %v, want not found (explain writes nothing)", err)
		}
	})
	t.Run("permission chain from the store", func(t *testing.T) {
		code, r := postExplain(t, app, `{"workspace":"ws-a","task":"t-old","profile":"p-1","tool":"workspace.info"}`)
		if code != 200 || !r.Decision.Allow || r.User != "u1" {
			t.Fatalf("%d %+v", code, r)
		}
		if len(r.Notes) == 0 || !strings.Contains(r.Notes[0], "latest audited call") {
			t.Errorf("notes %q, want the user taken from the audit trail", r.Notes)
		}
		if len(r.Explain.Permissions) != 3 || r.Explain.Permissions[0].DecidedBy != "user_override" || r.Explain.Permissions[1].DecidedBy != "default" {
			t.Errorf("permissions %+v", r.Explain.Permissions)
		}
		if !contains(r.Decision.Obligations.Redact, "budget_remaining") {
			t.Errorf("redact %v", r.Decision.Obligations.Redact)
		}
	})
	t.Run("resource resolved by the backend", func(t *testing.T) {
		code, r := postExplain(t, app, `{"workspace":"ws-a","task":"t-old","user":"u1","profile":"p-1","tool":"approval.decide","args":{"approval_id":"apr-none","decision":"approve"}}`)
		if code != 200 || r.Decision.Allow {
			t.Fatalf("%d %+v", code, r)
		}
		res, _ := r.Input["resource"].(map[string]any)
		if res["id"] != "apr-none" || res["kind"] != "approval" {
			t.Errorf("input.resource %v", r.Input["resource"])
		}
	})
	for _, tc := range []struct{ name, body, want string }{
		{"unknown tool", `{"workspace":"ws-a","task":"t-1","user":"u1","tool":"no.such"}`, "not in the catalog"},
		{"no user, no audit", `{"workspace":"ws-a","task":"t-9","tool":"project.get"}`, "give the user"},
		{"args not an object", `{"workspace":"ws-a","task":"t-1","user":"u1","tool":"project.get","args":"x"}`, "args must be a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, r := postExplain(t, app, tc.body); code != 400 || !strings.Contains(r.Error.Message, tc.want) {
				t.Errorf("%d %+v, want 400 with %q", code, r.Error, tc.want)
			}
		})
	}
	t.Run("unknown workspace", func(t *testing.T) {
		if code, _ := postExplain(t, app, `{"workspace":"ws-z","task":"t-1","user":"u1","tool":"project.get"}`); code != 404 {
			t.Errorf("status %d, want 404", code)
		}
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestExplainCCServerCall: POST /admin/v1/explain with "surface":
// "ccserver" explains a cc_server call through the same explainer, with
// the cc_server engine (data.ccserver.explain names the gate, rule and
// reason that decided) and the revision the call's audit row names. A
// gateway without the cc_server surface says it does not serve it.
func TestExplainCCServerCall(t *testing.T) {
	app := openExplainApp(t, map[string]string{"MCPGATE_CCSERVER_LISTEN": "127.0.0.1:0"})
	ctx := context.Background()
	if err := app.Store.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-acme", Name: "Acme", Slug: "acme"}); err != nil {
		t.Fatal(err)
	}
	if err := app.Store.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-acme", UserID: "ada", Role: gateway.RoleOwner}); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"workspace_id": "ws-acme", "title": "x"}
	raw, _ := json.Marshal(args)
	p := &gateway.Principal{Kind: gateway.PrincipalUser, Subject: "ada", Mode: "plan"}
	if res, err := app.CC.Surface.Pipeline.CallTool(ctx, p, &gateway.CallRequest{Name: "create_ticket", Arguments: args, RawArguments: raw}); err == nil && !res.IsError {
		t.Fatalf("create_ticket in plan mode was allowed: %+v", res)
	}
	evs, err := app.Store.ListAuditEvents(ctx, gateway.AuditFilter{Actor: "ada", Tool: "create_ticket", Limit: 1})
	if err != nil || len(evs) != 1 || evs[0].Surface != gateway.SurfaceCCServer || evs[0].PolicyRevision == "" {
		t.Fatalf("audit rows %+v %v, want the cc_server call's", evs, err)
	}
	code, r := postExplain(t, app, `{"surface":"ccserver","user":"ada","mode":"plan","tool":"create_ticket","args":{"workspace_id":"ws-acme","title":"x"}}`)
	if code != 200 || r.Decision.Allow {
		t.Fatalf("%d %+v", code, r)
	}
	if r.Decision.Revision != evs[0].PolicyRevision {
		t.Errorf("explained with revision %q, the call's audit row names %q", r.Decision.Revision, evs[0].PolicyRevision)
	}
	if r.Explain.DecidedBy.Gate != "mode_tool" || r.Explain.DecidedBy.Rule != "data.ccserver.mode_visible" ||
		r.Explain.DecidedBy.Code != "mode.tool_not_allowed" || !slices.Equal(evs[0].ReasonCodes, []string{"mode.tool_not_allowed"}) {
		t.Errorf("decided_by %+v, audit reasons %v; want the mode gate's mode.tool_not_allowed in both", r.Explain.DecidedBy, evs[0].ReasonCodes)
	}
	if m, _ := r.Input["memberships"].([]any); len(m) != 1 || m[0] != "ws-acme" {
		t.Errorf("input.memberships %v, want ada's from the store", r.Input["memberships"])
	}
	t.Run("refused fields", func(t *testing.T) {
		for _, tc := range []struct{ body, want string }{
			{`{"surface":"ccserver","tool":"create_ticket"}`, "user is required"},
			{`{"surface":"ccserver","user":"ada","task":"t-1","tool":"create_ticket"}`, "task is not a field of a ccserver session"},
			{`{"surface":"ccserver","user":"ada","kind":"robot","tool":"create_ticket"}`, "not a cc_server principal"},
			{`{"surface":"ccserver","user":"ada","tool":"project.get"}`, "not in the catalog of the ccserver surface"},
		} {
			if code, r := postExplain(t, app, tc.body); code != 400 || !strings.Contains(r.Error.Message, tc.want) {
				t.Errorf("%s: %d %+v, want 400 with %q", tc.body, code, r.Error, tc.want)
			}
		}
	})
	t.Run("a gateway without cc_server", func(t *testing.T) {
		if code, r := postExplain(t, explainApp(t), `{"surface":"ccserver","user":"ada","tool":"create_ticket"}`); code != 400 || !strings.Contains(r.Error.Message, "does not serve the ccserver surface") {
			t.Errorf("%d %+v", code, r.Error)
		}
	})
}
