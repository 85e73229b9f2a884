package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/admin"
)

func adminPut(t *testing.T, g *gatewayUnderTest, path, body string) (int, string) {
	t.Helper()
	return adminDo(t, g, http.MethodPut, path, "e2e-admin-token", body)
}

// TestAdminRefusesGrantsThatGrantNothing: through the real wiring, an
// allowlist entry the bundle does not define is a 400 that names it and the
// profile stays as it was; real entries (from the bundle's data and the
// catalog) are accepted.
func TestAdminRefusesGrantsThatGrantNothing(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "sqlite:"+t.TempDir()+"/adm.db", nil)
	seedFixtures(t, g)
	status, body := adminPut(t, g, "/workspaces/ws-a/profiles/reader", `{"name":"reader","allowlist":["supacloud.raed.*"]}`)
	if status != http.StatusBadRequest || !strings.Contains(body, "supacloud.raed.*") {
		t.Fatalf("typo entry: %d %s, want 400 naming it", status, body)
	}
	c, err := g.app.Store.LoadCaller(context.Background(), &gateway.Principal{Kind: gateway.PrincipalAgent, WorkspaceID: "ws-a", Subject: "mia", TaskID: "task-ws-a", ProfileID: "reader"})
	if err != nil || c.Profile == nil || len(c.Profile.Allowlist) != 1 || c.Profile.Allowlist[0] != "supacloud.read.*" {
		t.Fatalf("profile changed by a refused PUT: %+v %v", c.Profile, err)
	}
	for _, entry := range []string{"supacloud.ops.*", "supacloud.full", "supacloud.conversation.*", "project.get", "supacloud.script.run"} {
		if status, body := adminPut(t, g, "/workspaces/ws-a/profiles/p2", `{"name":"p2","allowlist":["`+entry+`"]}`); status != http.StatusOK {
			t.Errorf("entry %s refused: %d %s", entry, status, body)
		}
	}
}

// adminDo sends one admin request with the given bearer token.
func adminDo(t *testing.T, g *gatewayUnderTest, method, path, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, g.srv.URL+"/admin/v1"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// TestManagementReadTokens: an scmt_ token with management:read reads its
// own workspace through the admin API (docs/http.md; docs/requirements.md#api-tokens),
// on both stores; every other use of it, and every other token, is refused.
func TestManagementReadTokens(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, dbURL(t), nil)
			seedFixtures(t, g)
			mint := func(ws string, scopes ...string) (value, fp string) {
				t.Helper()
				body, _ := json.Marshal(map[string]any{"label": "coordinator", "scopes": scopes})
				status, out := adminDo(t, g, http.MethodPost, "/workspaces/"+ws+"/api-tokens", "e2e-admin-token", string(body))
				var tok struct{ Token, Fingerprint string }
				if status != http.StatusCreated || json.Unmarshal([]byte(out), &tok) != nil {
					t.Fatalf("create token: %d %s", status, out)
				}
				return tok.Token, tok.Fingerprint
			}
			reader, readerFP := mint("ws-a", "management:read")
			mcpOnly, _ := mint("ws-a", "mcp:read")
			for _, tc := range []struct {
				note, method, path, token string
				status                    int
				want                      string
			}{
				{"reads its workspace's audit trail", http.MethodGet, "/audit-events", reader, 200, `"events"`},
				{"reads its workspace's tokens", http.MethodGet, "/workspaces/ws-a/api-tokens", reader, 200, readerFP},
				{"not another workspace", http.MethodGet, "/audit-events?workspace_id=ws-b", reader, 403, "ws-a"},
				{"not another workspace's tokens", http.MethodGet, "/workspaces/ws-b/api-tokens", reader, 403, "ws-a"},
				{"never writes", http.MethodPut, "/workspaces/ws-a/tasks/t9", reader, 403, "may only read"},
				{"a token without management:read", http.MethodGet, "/audit-events", mcpOnly, 401, ""},
				{"an unknown scmt_ token", http.MethodGet, "/audit-events", "scmt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 401, ""},
			} {
				t.Run(tc.note, func(t *testing.T) {
					status, body := adminDo(t, g, tc.method, tc.path, tc.token, `{"status":"running"}`)
					if status != tc.status || !strings.Contains(body, tc.want) {
						t.Fatalf("%d %s, want %d with %q", status, body, tc.status, tc.want)
					}
				})
			}
			// Use is recorded; revocation takes effect at once.
			_, list := adminDo(t, g, http.MethodGet, "/workspaces/ws-a/api-tokens", "e2e-admin-token", "")
			if !strings.Contains(list, `"last_used_at":"`) {
				t.Errorf("token use not recorded: %s", list)
			}
			if status, body := adminDo(t, g, http.MethodDelete, "/api-tokens/"+readerFP, "e2e-admin-token", ""); status != http.StatusNoContent {
				t.Fatalf("revoke: %d %s", status, body)
			}
			if status, _ := adminDo(t, g, http.MethodGet, "/audit-events", reader, ""); status != http.StatusUnauthorized {
				t.Errorf("revoked token read the audit trail: %d", status)
			}
		})
	}
}

// Without MCPGATE_ADMIN_TOKEN the admin API is off (docs/configuration.md), for
// management-read tokens too.
func TestAdminOffIgnoresManagementTokens(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "sqlite:"+t.TempDir()+"/off.db", map[string]string{"MCPGATE_ADMIN_TOKEN": ""})
	ctx := context.Background()
	if err := g.app.Store.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-a", Name: "A", Slug: "a", OrgPlan: "team"}); err != nil {
		t.Fatal(err)
	}
	value, tok := admin.NewAPIToken("ws-a", "coordinator", []string{admin.ScopeManagementRead}, time.Now())
	if err := g.app.Store.CreateAPIToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if status, body := adminDo(t, g, http.MethodGet, "/audit-events", value, ""); status != http.StatusNotFound {
		t.Fatalf("admin API off: %d %s, want 404", status, body)
	}
}
