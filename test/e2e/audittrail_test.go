package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
	"github.com/mcpgate/mcpgate/gateway/auth"
)

// TestAuditTrailNamesWhoDidWhat is issue 26's proof of a complete trail,
// on both stores: an admin edits a profile, an API token is created and
// revoked, a bad token is tried, a method the endpoint does not serve is
// called, an approval is decided and a policy reload is refused, and each shows up in GET /admin/v1/audit-events,
// filtered by its kind and actor, with what it did (the profile's before
// and after, never the token's value) and, within the sealing bound, its
// place in the chain; the chain then verifies through
// GET /admin/v1/audit-chain/verify.
func TestAuditTrailNamesWhoDidWhat(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			must(t, os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "policies"))))
			g := startCCGatewayEnv(t, dbURL(t), map[string]string{"MCPGATE_POLICY_DIR": dir})
			const admin = "admin-token" // the actor of the admin token's writes

			// An admin edits a profile.
			for _, allow := range []string{"supacloud.read.*", "supacloud.ops.*"} {
				if status, body := adminPut(t, g.gatewayUnderTest, "/workspaces/ws-acme/profiles/auditor", `{"name":"auditor","allowlist":["`+allow+`"]}`); status != http.StatusOK {
					t.Fatalf("PUT profile: %d %s", status, body)
				}
			}
			edit := g.auditRow(t, "admin", admin, "PUT /admin/v1/workspaces/ws-acme/profiles/auditor", `"before":`)
			if !strings.Contains(edit, `supacloud.read.*`) || !strings.Contains(edit, `supacloud.ops.*`) {
				t.Errorf("the profile edit's row does not hold the allowlist before and after: %s", edit)
			}

			// An API token is created and revoked.
			status, body := adminDo(t, g.gatewayUnderTest, http.MethodPost, "/workspaces/ws-acme/api-tokens", "e2e-admin-token", `{"label":"siem","scopes":["management:read"]}`)
			var tok struct{ Token, Fingerprint string }
			if status != http.StatusCreated || json.Unmarshal([]byte(body), &tok) != nil {
				t.Fatalf("create token: %d %s", status, body)
			}
			created := g.auditRow(t, "token", admin, "POST /admin/v1/workspaces/ws-acme/api-tokens", tok.Fingerprint)
			if strings.Contains(created, tok.Token) {
				t.Errorf("the token's creation row holds its value: %s", created)
			}
			if status, body := adminDo(t, g.gatewayUnderTest, http.MethodDelete, "/api-tokens/"+tok.Fingerprint, "e2e-admin-token", ""); status != http.StatusNoContent {
				t.Fatalf("revoke: %d %s", status, body)
			}
			g.auditRow(t, "token", admin, "DELETE /admin/v1/api-tokens/"+tok.Fingerprint, `"http.204"`)

			// A bad token is tried: a JWT of another key, whose sub is
			// readable, and the revoked API token.
			forged, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "mallory", "workspace_id": "ws-acme",
				"aud": "mcpgate", "exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte("not-the-gateway-secret-0123456789abcdef"))
			must(t, err)
			for _, bad := range []string{forged, tok.Token} {
				req, _ := http.NewRequest(http.MethodPost, g.srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
				req.Header.Set("Authorization", "Bearer "+bad)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				must(t, err)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("a bad token on /mcp: HTTP %d, want 401", resp.StatusCode)
				}
			}
			refused := g.auditRow(t, "auth", "mallory", "auth.refused", `"token_fingerprint":"`)
			if strings.Contains(refused, forged) || strings.Contains(refused, tok.Token) {
				t.Errorf("a refused credential's row holds the token: %s", refused)
			}
			if _, body := adminDo(t, g.gatewayUnderTest, http.MethodGet, "/audit-events?kind=auth&limit=10", "e2e-admin-token", ""); strings.Contains(body, tok.Token) || strings.Count(body, `"tool":"auth.refused"`) != 2 {
				t.Errorf("the auth rows: %s; want both refusals, without the tokens", body)
			}

			// A method the endpoint does not serve is refused before any
			// policy is asked.
			agent := g.connect(t, g.token(t, "ws-acme", "ada", "task-audit", ""))
			if _, err := agent.ListResources(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "not served") {
				t.Fatalf("resources/list: %v; want -32601, not served", err)
			}
			g.auditRow(t, "method", "ada", "resources/list", `"method.not_found"`)

			// An approval is decided.
			cs := g.ccConnect(t, g.ccToken(t, auth.CCClaims{Subject: "ada"}), false)
			person := g.openApprovalStream(t)
			pending := callAsync(cs, "create_ticket", map[string]any{"workspace_id": "ws-acme", "title": "Audited ticket"})
			ap := person.next(t, "create_ticket", approvals.StatusPending)
			if code := person.decide(t, ap.ID, "approve"); code != http.StatusOK {
				t.Fatalf("approve: HTTP %d", code)
			}
			if r := <-pending; r.err != nil || r.res.IsError {
				t.Fatalf("approved call: %v %q", r.err, text(r.res))
			}
			g.auditRow(t, "approval", admin, "POST /admin/v1/approvals/"+ap.ID+"/approve", `"grace"`)

			// A policy reload is refused: the candidate does not compile.
			must(t, os.WriteFile(filepath.Join(dir, "supacloud", "audit_refused.rego"),
				[]byte("package supacloud\n\nrefused_on_purpose if {\n"), 0o644))
			if status, body := adminDo(t, g.gatewayUnderTest, http.MethodPost, "/policy/reload", "e2e-admin-token", ""); status != http.StatusUnprocessableEntity {
				t.Fatalf("reload of a failing candidate: %d %s, want 422", status, body)
			}
			reload := g.auditRow(t, "policy", admin, "POST /admin/v1/policy/reload", `"http.422"`)
			if !strings.Contains(reload, `"status":"denied"`) {
				t.Errorf("the refused reload's row: %s; want status denied", reload)
			}

			// The whole trail verifies through the admin API, as the
			// console's audit page asks it.
			status, body = adminDo(t, g.gatewayUnderTest, http.MethodGet, "/audit-chain/verify", "e2e-admin-token", "")
			var ver struct {
				Verified bool
				Rows     int64
			}
			if status != http.StatusOK || json.Unmarshal([]byte(body), &ver) != nil || !ver.Verified || ver.Rows < 7 {
				t.Errorf("GET /admin/v1/audit-chain/verify: %d %s; want the chain verified, the rows above in it", status, body)
			}
		})
	}
}

// auditRow waits (5 s) for the newest row of kind by actor to be the one
// of tool, holding want, and sealed; it lists them through the admin API
// (GET /admin/v1/audit-events?kind=&actor=) and returns the row's JSON.
func (g *ccGateway) auditRow(t *testing.T, kind, actor, tool, want string) string {
	t.Helper()
	q := url.Values{"kind": {kind}, "actor": {actor}, "limit": {"1"}}
	deadline := time.Now().Add(5 * time.Second)
	var last string
	for {
		status, body := adminDo(t, g.gatewayUnderTest, http.MethodGet, "/audit-events?"+q.Encode(), "e2e-admin-token", "")
		var list struct{ Events []json.RawMessage }
		if status != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil {
			t.Fatalf("GET /audit-events?%s: %d %s", q.Encode(), status, body)
		}
		if len(list.Events) == 1 {
			last = string(list.Events[0])
			var ev gateway.AuditEvent
			must(t, json.Unmarshal(list.Events[0], &ev))
			if ev.Kind == kind && ev.Actor == actor && ev.Tool == tool && strings.Contains(last, want) && ev.Seq > 0 && ev.Hash != "" {
				return last
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sealed %s row by %s of %s holding %s in the listing; the newest: %s", kind, actor, tool, want, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
