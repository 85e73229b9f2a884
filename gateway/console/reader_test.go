package console_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// createToken creates an API token of ws through the admin API and returns
// its value.
func (g *gatewayUnderTest) createToken(t *testing.T, ws string, scopes ...string) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"label": "reader", "scopes": scopes})
	var out struct{ Token string }
	if err := json.Unmarshal([]byte(g.api(t, http.MethodPost, "/workspaces/"+ws+"/api-tokens", string(b), http.StatusCreated)), &out); err != nil {
		t.Fatal(err)
	}
	return out.Token
}

func TestReadOnlyTokenSession(t *testing.T) {
	g := newGateway(t)
	g.api(t, http.MethodPut, "/workspaces/ws-2", `{"name":"Other","slug":"other"}`, http.StatusOK)
	g.api(t, http.MethodPut, "/workspaces/ws-1/profiles/p-reader", `{"name":"Reader","allowlist":["supacloud.read.*"]}`, http.StatusOK)
	g.api(t, http.MethodPut, "/workspaces/ws-1/permission-overrides", `{"workspace.plan.view":false}`, http.StatusOK)
	reader := g.createToken(t, "ws-1", "mcp:read", "management:read")
	mcpOnly := g.createToken(t, "ws-1", "mcp:read")

	t.Run("sign-in refusals", func(t *testing.T) {
		v := g.visitor(t)
		p := v.signInAs(reader, "", "")
		if msg := errorNextTo(p, "workspace"); p.status != http.StatusBadRequest || !strings.Contains(msg, "enter that workspace's id") && !strings.Contains(msg, "Enter that workspace's id") {
			t.Errorf("reader without a workspace: %d %q", p.status, msg)
		}
		p = v.signInAs(reader, "", "ws-2")
		if msg := errorNextTo(p, "workspace"); p.status != http.StatusForbidden || !strings.Contains(msg, `this API token belongs to workspace "ws-1"`) {
			t.Errorf("reader naming another workspace: %d %q", p.status, msg)
		}
		if strings.Contains(p.raw, reader) {
			t.Error("the refused token is echoed into the page")
		}
		p = v.signInAs(mcpOnly, "", "ws-1")
		if msg := errorNextTo(p, "token"); p.status != http.StatusUnauthorized || !strings.Contains(msg, "not accepted") {
			t.Errorf("token without management:read: %d %q", p.status, msg)
		}
		if p := v.get("/console/workspaces/ws-1"); p.status != http.StatusSeeOther {
			t.Errorf("after refused sign-ins the workspace page answers %d", p.status)
		}
	})

	v := g.visitor(t)
	if p := v.signInAs(reader, "", "ws-1"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/workspaces/ws-1" {
		t.Fatalf("reader sign-in: %d %s\n%s", p.status, p.header.Get("Location"), p.text)
	}
	if p := v.get("/console/workspaces"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/workspaces/ws-1" {
		t.Errorf("the workspace list for a reader: %d %s; want a redirect to its workspace", p.status, p.header.Get("Location"))
	}
	// Its own workspace's pages read, with no change form but sign-out.
	for path, want := range map[string]string{
		"/console/workspaces/ws-1":             "alice",
		"/console/workspaces/ws-1/profiles":    "p-reader",
		"/console/workspaces/ws-1/tokens":      "reader",
		"/console/workspaces/ws-1/permissions": "workspace.plan.view=false",
		"/console/audit":                       "Audit events",
		"/console/approvals/gates":             "Human gates", // its workspace's gates, no decision form
	} {
		p := v.get(path)
		if p.status != http.StatusOK || !strings.Contains(p.text, want) {
			t.Errorf("%s: %d, want 200 showing %q\n%s", path, p.status, want, p.text)
			continue
		}
		if n := strings.Count(p.raw, `method="post"`); n != 1 || !strings.Contains(p.raw, `action="/console/logout"`) {
			t.Errorf("%s shows %d POST forms to a reader; want only sign-out", path, n)
		}
		if strings.Contains(p.raw, reader) {
			t.Errorf("%s shows the token", path)
		}
	}
	// The chains need explain, which the admin API keeps for the admin token.
	if p := v.get("/console/workspaces/ws-1/permissions"); !strings.Contains(p.text, "The resolved chains cannot be shown") {
		t.Errorf("permissions page for a reader should say why no chain is shown\n%s", p.text)
	}
	// Another workspace: the admin API's refusal.
	if p := v.get("/console/workspaces/ws-2"); p.status != http.StatusForbidden || !strings.Contains(p.text, `this API token belongs to workspace "ws-1"`) {
		t.Errorf("another workspace: %d\n%s", p.status, p.text)
	}
	for _, path := range []string{"/console/playground", "/console/policy", "/console/workspaces/ws-1/profiles/new", "/console/workspaces/ws-1/profiles/p-reader"} {
		if p := v.get(path); p.status != http.StatusForbidden || !strings.Contains(p.text, "needs the admin token") {
			t.Errorf("%s for a reader: %d\n%s", path, p.status, p.text)
		}
	}
	// A POST with the session's own CSRF token still changes nothing.
	before := len(g.tokens(t, "ws-1"))
	p := v.postFrom("/console/workspaces/ws-1", "/console/workspaces/ws-1/tokens", url.Values{"label": {"sneaky"}, "scope": {"mcp:read"}})
	if p.status != http.StatusForbidden || !strings.Contains(p.text, "read-only API token") {
		t.Errorf("create token as a reader: %d\n%s", p.status, p.text)
	}
	p = v.postFrom("/console/workspaces/ws-1", "/console/workspaces/ws-1/permissions", url.Values{"overrides": {""}})
	if p.status != http.StatusForbidden {
		t.Errorf("clear overrides as a reader: %d", p.status)
	}
	if after := len(g.tokens(t, "ws-1")); after != before {
		t.Errorf("a reader's POST created a token (%d → %d)", before, after)
	}
	if got := strings.TrimSpace(g.api(t, http.MethodGet, "/workspaces/ws-1/permission-overrides", "", http.StatusOK)); got != `{"workspace.plan.view":false}` {
		t.Errorf("a reader's POST changed the overrides: %s", got)
	}
	// Sign-out works.
	if p := v.postFrom("/console/workspaces/ws-1", "/console/logout", url.Values{}); p.status != http.StatusSeeOther {
		t.Errorf("reader sign-out: %d", p.status)
	}
	if p := v.get("/console/workspaces/ws-1"); p.status != http.StatusSeeOther {
		t.Errorf("after sign-out: %d", p.status)
	}
}
