package console_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// fakeSignature ends the console sign-in JWTs of these tests; the hook
// below stands for auth.JWT.ConsoleUsers, which verifies real ones.
const fakeSignature = ".test-signature"

// consoleJWT is a console sign-in token of user in ws, as the console
// sees it (a JWT whose payload names sub, workspace_id and exp).
func consoleJWT(ws, user string, exp time.Time) string {
	b, _ := json.Marshal(map[string]any{"sub": user, "workspace_id": ws, "exp": exp.Unix(), "aud": "mcpgate-console"})
	return "eyJhbGciOiJIUzI1NiJ9." + base64.RawURLEncoding.EncodeToString(b) + fakeSignature
}

// workspaceAdminHook is the admin API's WorkspaceAdmin hook for consoleJWT
// tokens.
func workspaceAdminHook(r *http.Request) (string, string, bool) {
	v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !strings.HasSuffix(v, fakeSignature) {
		return "", "", false
	}
	parts := strings.Split(v, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct {
		Sub string `json:"sub"`
		WS  string `json:"workspace_id"`
	}
	if err != nil || json.Unmarshal(b, &c) != nil {
		return "", "", false
	}
	return c.WS, c.Sub, true
}

// TestWorkspaceAdminSession: an owner signs in with a console sign-in
// token (the workspace taken from it), sees the token forms and no other
// change form, creates and revokes a token; other changes are refused
// before the admin API is asked; a viewer is refused at sign-in with the
// admin API's message; the session ends no later than the token.
func TestWorkspaceAdminSession(t *testing.T) {
	g := newGateway(t) // alice is the owner of ws-1, bob a viewer
	bob := g.visitor(t)
	if p := bob.signIn(consoleJWT("ws-1", "bob", g.clock.now().Add(time.Hour))); p.status != http.StatusForbidden || !strings.Contains(p.text, `role "viewer"`) {
		t.Fatalf("viewer sign-in: %d, want 403 naming the role\n%s", p.status, p.text)
	}

	v := g.visitor(t)
	p := v.signIn(consoleJWT("ws-1", "alice", g.clock.now().Add(time.Hour)))
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/workspaces/ws-1" {
		t.Fatalf("owner sign-in: %d %s\n%s", p.status, p.header.Get("Location"), p.text)
	}
	if c := sessionCookie(t, p.header); c.MaxAge > int(time.Hour.Seconds()) {
		t.Errorf("session Max-Age %d outlives the one-hour sign-in token", c.MaxAge)
	}
	page := v.get("/console/workspaces/ws-1/tokens")
	if page.status != http.StatusOK || !strings.Contains(page.raw, `action="/console/workspaces/ws-1/tokens"`) ||
		!strings.Contains(page.raw, `action="/console/workspaces/ws-1/external-limits"`) {
		t.Fatalf("owner's tokens page: %d; want the create form and the limits form (docs/requirements.md#external-limits: the same tab)\n%s", page.status, page.text)
	}
	csrf := v.csrf("/console/workspaces/ws-1/tokens")
	if p := v.post("/console/workspaces/ws-1/tokens", url.Values{"csrf": {csrf}, "label": {"ci"}, "scope": {"mcp:read"}}); p.status != http.StatusSeeOther {
		t.Fatalf("owner creates a token: %d\n%s", p.status, p.text)
	}
	toks := g.tokens(t, "ws-1")
	if len(toks) != 1 {
		t.Fatalf("tokens after create: %v", toks)
	}
	if p := v.post("/console/workspaces/ws-1/tokens/revoke", url.Values{"csrf": {csrf}, "fingerprint": {toks[0]["fingerprint"].(string)}}); p.status != http.StatusSeeOther {
		t.Fatalf("owner revokes: %d\n%s", p.status, p.text)
	}
	if toks := g.tokens(t, "ws-1"); toks[0]["status"] != "revoked" {
		t.Errorf("token after revoke: %v", toks[0])
	}
	if p := v.post("/console/workspaces/ws-1/external-limits", url.Values{"csrf": {csrf}, "reads_per_tool_hourly": {"5"}}); p.status != http.StatusSeeOther {
		t.Fatalf("owner sets the external limits: %d\n%s", p.status, p.text)
	}
	if got := g.api(t, http.MethodGet, "/workspaces/ws-1/external-limits", "", http.StatusOK); !strings.Contains(got, `"reads_per_tool_hourly":5`) {
		t.Errorf("the owner's limits were not saved: %s", got)
	}
	before := g.api(t, http.MethodGet, "/workspaces/ws-1/permission-overrides", "", http.StatusOK)
	if p := v.post("/console/workspaces/ws-1/permissions", url.Values{"csrf": {csrf}, "overrides": {"workspace.info=false"}}); p.status != http.StatusForbidden ||
		!strings.Contains(p.text, "create and revoke its API tokens, set its external limits and decide its human gates only") {
		t.Errorf("owner POST permissions: %d, want 403\n%s", p.status, p.text)
	}
	if got := g.api(t, http.MethodGet, "/workspaces/ws-1/permission-overrides", "", http.StatusOK); got != before {
		t.Errorf("the refused POST changed the overrides: %s -> %s", before, got)
	}
	// Demoted: the tokens page is refused at once.
	g.api(t, http.MethodPut, "/workspaces/ws-1/members/alice", `{"role":"member","seat_type":"developer"}`, http.StatusOK)
	if p := v.get("/console/workspaces/ws-1/tokens"); p.status != http.StatusForbidden || !strings.Contains(p.text, `role "member"`) {
		t.Errorf("tokens page after the demotion: %d\n%s", p.status, p.text)
	}
}
