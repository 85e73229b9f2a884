package console_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/approvals"
	"github.com/mcpgate/mcpgate/gateway/console"
)

func sessionCookie(t *testing.T, h http.Header) *http.Cookie {
	t.Helper()
	return cookieNamed(t, h, console.CookieName)
}

func cookieNamed(t *testing.T, h http.Header, name string) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s cookie in %v", name, h["Set-Cookie"])
	return nil
}

func TestSignInCookieFlags(t *testing.T) {
	g := newGateway(t)
	v := g.visitor(t)
	first := v.get("/console/login")
	anon := cookieNamed(t, first.header, console.FormCookieName) // the sign-in form's token, no session
	if !anon.HttpOnly || anon.SameSite != http.SameSiteStrictMode || anon.Path != "/console" {
		t.Errorf("sign-in form cookie = %+v; want HttpOnly, SameSite=Strict, Path=/console", anon)
	}
	p := v.signIn(adminToken)
	if p.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d\n%s", p.status, p.text)
	}
	c := sessionCookie(t, p.header)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/console" || c.Secure {
		t.Errorf("cookie over plain HTTP = %+v; want HttpOnly, SameSite=Strict, Path=/console, not Secure", c)
	}
	if c.MaxAge <= 0 || c.MaxAge > int(console.DefaultSessionTTL.Seconds()) {
		t.Errorf("cookie Max-Age = %d; want the session's lifetime, at most %v", c.MaxAge, console.DefaultSessionTTL)
	}
	if c.Value == anon.Value {
		t.Error("signing in made the sign-in form's token the session id; it must issue a new one")
	}
	if strings.Contains(c.Value, adminToken) {
		t.Error("the cookie carries the admin token")
	}

	// Over TLS the cookie is Secure too.
	h := console.New(console.Options{Admin: g.admin, AdminPrefix: admin.Prefix})
	req := httptest.NewRequest(http.MethodGet, "https://gw.example/console/login", nil)
	req.TLS = &tls.ConnectionState{}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if c := cookieNamed(t, rec.Header(), console.FormCookieName); !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie over TLS = %+v; want Secure, HttpOnly, SameSite=Strict", c)
	}
}

func TestSignInRefusals(t *testing.T) {
	g := newGateway(t)
	t.Run("wrong token", func(t *testing.T) {
		v := g.visitor(t)
		p := v.signIn("wrong-token-value-123")
		if p.status != http.StatusUnauthorized || !strings.Contains(p.text, "That token was not accepted") {
			t.Fatalf("wrong token: %d\n%s", p.status, p.text)
		}
		if strings.Contains(p.raw, "wrong-token-value-123") {
			t.Error("the refused token is echoed into the page")
		}
		if p := v.get("/console/workspaces"); p.status != http.StatusSeeOther {
			t.Errorf("after a refused sign-in the workspaces page answers %d; want a redirect to sign in", p.status)
		}
	})
	t.Run("no CSRF token", func(t *testing.T) {
		v := g.visitor(t)
		v.get("/console/login")
		p := v.post("/console/login", url.Values{"token": {adminToken}})
		if p.status != http.StatusForbidden {
			t.Fatalf("sign-in without CSRF token: %d; want 403", p.status)
		}
		if p := v.get("/console/workspaces"); p.status != http.StatusSeeOther {
			t.Errorf("a sign-in without CSRF token signed in (workspaces page %d)", p.status)
		}
	})
}

func TestPostWithoutCSRFChangesNothing(t *testing.T) {
	g := newGateway(t)
	v := g.signedIn(t)
	other := g.signedIn(t)
	otherCSRF := other.csrf("/console/workspaces")
	g.api(t, http.MethodPut, "/workspaces/ws-1/profiles/p1", `{"name":"P1","allowlist":[]}`, http.StatusOK)
	before := map[string]string{
		"tokens":    g.api(t, http.MethodGet, "/workspaces/ws-1/api-tokens", "", http.StatusOK),
		"profiles":  g.api(t, http.MethodGet, "/workspaces/ws-1/profiles", "", http.StatusOK),
		"limits":    g.api(t, http.MethodGet, "/workspaces/ws-1/external-limits", "", http.StatusOK),
		"overrides": g.api(t, http.MethodGet, "/workspaces/ws-1/permission-overrides", "", http.StatusOK),
		"alice":     g.api(t, http.MethodGet, "/workspaces/ws-1/members/alice/permission-overrides", "", http.StatusOK),
	}
	g.approvals.add(approvals.Approval{ID: "ap-1", Tool: "create_ticket", WorkspaceID: "ws-1", Status: approvals.StatusPending})
	g.policy.refuse = ""
	policyBefore := g.policy.Status().Revision
	posts := []struct {
		name string
		path string
		form url.Values
	}{
		{"create token", "/console/workspaces/ws-1/tokens", url.Values{"label": {"ci"}, "scope": {"mcp:read"}}},
		{"save profile", "/console/workspaces/ws-1/profiles", url.Values{"id": {"p2"}, "name": {"P2"}, "tier": {"supacloud.read.*"}}},
		{"set default", "/console/workspaces/ws-1/default-profile", url.Values{"profile_id": {"p1"}}},
		{"limits", "/console/workspaces/ws-1/external-limits", url.Values{"reads_per_tool_hourly": {"99"}}},
		{"sign out", "/console/logout", url.Values{}},
		{"workspace overrides", "/console/workspaces/ws-1/permissions", url.Values{"overrides": {"workspace.plan.view=false"}}},
		{"member overrides", "/console/workspaces/ws-1/members/alice/permissions", url.Values{"overrides": {"workspace.plan.view=false"}}},
		{"approve", "/console/approvals/ap-1", url.Values{"verb": {"approve"}, "decided_by": {"mallory"}}},
		{"reload policy", "/console/policy/reload", url.Values{}},
		{"playground", "/console/playground", url.Values{"workspace": {"ws-1"}, "task": {"t"}, "tool": {"workspace.info"}}},
	}
	for _, tc := range posts {
		for _, csrf := range []struct{ name, value string }{{"missing", ""}, {"another session's", otherCSRF}, {"made up", "AAAA"}} {
			t.Run(tc.name+"/"+csrf.name, func(t *testing.T) {
				form := url.Values{}
				for k, vs := range tc.form {
					form[k] = vs
				}
				if csrf.value != "" {
					form.Set("csrf", csrf.value)
				}
				p := v.post(tc.path, form)
				if p.status != http.StatusForbidden || !strings.Contains(p.text, "nothing was changed") {
					t.Fatalf("POST %s with %s CSRF token: %d; want 403 saying nothing changed\n%s", tc.path, csrf.name, p.status, p.text)
				}
			})
		}
	}
	for what, want := range before {
		path := map[string]string{"tokens": "/api-tokens", "profiles": "/profiles", "limits": "/external-limits",
			"overrides": "/permission-overrides", "alice": "/members/alice/permission-overrides"}[what]
		if got := g.api(t, http.MethodGet, "/workspaces/ws-1"+path, "", http.StatusOK); got != want {
			t.Errorf("%s changed by refused POSTs:\nbefore %s\nafter  %s", what, want, got)
		}
	}
	if a := g.approvals.get("ap-1"); a.Status != approvals.StatusPending {
		t.Errorf("refused POSTs decided the approval: %s by %s", a.Status, a.DecidedBy)
	}
	if rev := g.policy.Status().Revision; rev != policyBefore {
		t.Errorf("refused POSTs reloaded the policy: %s → %s", policyBefore, rev)
	}
	if n := len(g.explainer.requests); n != 0 {
		t.Errorf("refused playground POSTs reached explain %d times", n)
	}
	if p := v.get("/console/workspaces"); p.status != http.StatusOK {
		t.Errorf("a refused sign-out ended the session (workspaces page %d)", p.status)
	}
}

// TestTokenNeverInAPage visits every page after sign-in, and pages with a
// refused form, and looks for the admin token in each.
func TestTokenNeverInAPage(t *testing.T) {
	g := newGateway(t)
	g.api(t, http.MethodPut, "/workspaces/ws-1/profiles/p1", `{"name":"P1","allowlist":["supacloud.read.*"]}`, http.StatusOK)
	v := g.signedIn(t)
	csrf := v.csrf("/console/workspaces")
	pages := map[string]page{}
	for _, path := range []string{"/console/", "/console/workspaces", "/console/workspaces/ws-1", "/console/workspaces/ws-1/profiles",
		"/console/workspaces/ws-1/profiles/new", "/console/workspaces/ws-1/profiles/p1", "/console/workspaces/ws-1/tokens",
		"/console/workspaces/nope", "/console/no-such-page", "/console/login", "/console/workspaces/ws-1/permissions",
		"/console/approvals", "/console/audit", "/console/audit?tool=bad%20tool", "/console/playground", "/console/policy", "/console/upstreams"} {
		pages["GET "+path] = v.get(path)
	}
	pages["POST bad token"] = v.post("/console/workspaces/ws-1/tokens", url.Values{"csrf": {csrf}, "label": {""}})
	pages["POST bad profile"] = v.post("/console/workspaces/ws-1/profiles", url.Values{"csrf": {csrf}, "id": {"p1"}, "name": {""}})
	pages["POST created token"] = v.post("/console/workspaces/ws-1/tokens", url.Values{"csrf": {csrf}, "label": {"ci"}, "scope": {"mcp:read"}})
	pages["GET token shown"] = v.get("/console/workspaces/ws-1/tokens")
	pages["POST playground"] = v.post("/console/playground", url.Values{"csrf": {csrf}, "workspace": {"ws-1"}, "task": {"t"}, "tool": {"workspace.info"}, "user": {"alice"}})
	pages["POST bad overrides"] = v.post("/console/workspaces/ws-1/permissions", url.Values{"csrf": {csrf}, "overrides": {"nope"}})
	for name, p := range pages {
		if strings.Contains(p.raw, adminToken) {
			t.Errorf("%s (%d) contains the admin token", name, p.status)
		}
		if p.status >= 500 {
			t.Errorf("%s: %d\n%s", name, p.status, p.text)
		}
	}
	if !strings.Contains(pages["GET token shown"].text, "shown exactly once") {
		t.Error("the page after creating a token does not show its value")
	}
}

// errorNextTo returns the text of the error element of field id, or "".
func errorNextTo(p page, id string) string {
	m := regexp.MustCompile(`<span id="` + id + `-error" class="error" role="alert">([^<]*)</span>`).FindStringSubmatch(p.text)
	if m == nil {
		return ""
	}
	return m[1]
}

func TestBadInputShowsAdminMessage(t *testing.T) {
	g := newGateway(t)
	g.api(t, http.MethodPut, "/workspaces/ws-1/external-limits", `{"reads_per_tool_hourly":80}`, http.StatusOK)
	v := g.signedIn(t)
	csrf := v.csrf("/console/workspaces/ws-1/tokens")
	limitsBefore := g.api(t, http.MethodGet, "/workspaces/ws-1/external-limits", "", http.StatusOK)
	cases := []struct {
		name, path string
		form       url.Values
		field      string // the id of the input the message belongs to
		message    string // the admin API's message, or its start
	}{
		{"token without label", "/console/workspaces/ws-1/tokens", url.Values{"scope": {"mcp:read"}}, "label", `field "label" is required; send a non-empty string`},
		{"token without scope", "/console/workspaces/ws-1/tokens", url.Values{"label": {"ci"}}, "scopes", `field "scopes" is required; send one or more of mcp:read, mcp:ops, management:read`},
		{"limit not a number", "/console/workspaces/ws-1/external-limits", url.Values{"reads_per_tool_hourly": {"lots"}}, "reads", `field "reads_per_tool_hourly" must be an integer, not string`},
		{"limit zero", "/console/workspaces/ws-1/external-limits", url.Values{"ops_per_token_hourly": {"0"}}, "ops", `field "ops_per_token_hourly" is 0; use a whole number from 1 to 1000000, or null for the default`},
		{"profile without name", "/console/workspaces/ws-1/profiles", url.Values{"id": {"p9"}, "new": {"1"}, "name": {" "}}, "name", `field "name" is required; send a non-empty string`},
		{"profile bad id", "/console/workspaces/ws-1/profiles", url.Values{"id": {"bad id!"}, "new": {"1"}, "name": {"X"}}, "id", `profile id "bad id!" is not valid`},
		{"profile entry with a space", "/console/workspaces/ws-1/profiles", url.Values{"id": {"p9"}, "name": {"X"}, "exact": {"workspace info"}}, "allowlist", `field "allowlist" entry 0 ("workspace info") must be a non-empty string`},
		{"profile entry granting nothing", "/console/workspaces/ws-1/profiles", url.Values{"id": {"p9"}, "name": {"X"}, "exact": {"nope.tool"}}, "allowlist", `field "allowlist" entry "nope.tool": grants no tool of the catalog`},
		{"scripts with a space", "/console/workspaces/ws-1/profiles", url.Values{"id": {"p9"}, "name": {"X"}, "script_mode": {"only"}, "scripts": {"a b"}}, "scripts", `field "script_allowlist" entry 0 ("a b")`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"csrf": {csrf}}
			for k, vs := range tc.form {
				form[k] = vs
			}
			p := v.post(tc.path, form)
			if p.status != http.StatusBadRequest {
				t.Fatalf("status %d; want 400\n%s", p.status, p.text)
			}
			if got := errorNextTo(p, tc.field); !strings.HasPrefix(got, tc.message) {
				t.Errorf("message next to %q = %q; want the admin API's %q\n%s", tc.field, got, tc.message, p.text)
			}
			if !strings.Contains(p.raw, `aria-describedby="`+tc.field+`-error"`) {
				t.Errorf("the field %q is not tied to its message (aria-describedby)", tc.field)
			}
		})
	}
	if n := len(g.tokens(t, "ws-1")); n != 0 {
		t.Errorf("refused forms created %d tokens", n)
	}
	if got := g.api(t, http.MethodGet, "/workspaces/ws-1/profiles", "", http.StatusOK); got != `{"profiles":[]}`+"\n" {
		t.Errorf("refused forms stored profiles: %s", got)
	}
	if got := g.api(t, http.MethodGet, "/workspaces/ws-1/external-limits", "", http.StatusOK); got != limitsBefore {
		t.Errorf("refused forms changed the limits: %s, was %s", got, limitsBefore)
	}
	// A refused form keeps what was typed.
	p := v.post("/console/workspaces/ws-1/tokens", url.Values{"csrf": {csrf}, "label": {"keep me"}, "scope": {"x:bogus", "mcp:ops"}})
	if !strings.Contains(p.text, `value="keep me"`) || !regexp.MustCompile(`value="mcp:ops" checked`).MatchString(p.text) {
		t.Errorf("the refused create form lost its input\n%s", p.text)
	}
	if got := errorNextTo(p, "scopes"); !strings.HasPrefix(got, `scope "x:bogus" is unknown`) {
		t.Errorf("unknown scope message = %q", got)
	}
}

func TestTokenValueShownOnceThenRevoked(t *testing.T) {
	g := newGateway(t)
	v := g.signedIn(t)
	csrf := v.csrf("/console/workspaces/ws-1/tokens")
	p := v.post("/console/workspaces/ws-1/tokens", url.Values{"csrf": {csrf}, "label": {"scheduler"}, "scope": {"mcp:read", "mcp:ops"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/workspaces/ws-1/tokens" {
		t.Fatalf("create: %d %q\n%s", p.status, p.header.Get("Location"), p.text)
	}
	if strings.Contains(p.raw, admin.TokenPrefix) {
		t.Error("the redirect itself carries the token value")
	}
	shown := v.get("/console/workspaces/ws-1/tokens")
	value := regexp.MustCompile(`scmt_[A-Za-z0-9_-]{43}`).FindString(shown.raw)
	if value == "" {
		t.Fatalf("the token value is not shown after creation\n%s", shown.text)
	}
	fp := admin.Fingerprint(value)
	list := g.tokens(t, "ws-1")
	if len(list) != 1 || list[0]["fingerprint"] != fp || list[0]["label"] != "scheduler" || list[0]["status"] != "active" {
		t.Fatalf("tokens after create = %v; want one active token %s", list, fp)
	}
	again := v.get("/console/workspaces/ws-1/tokens")
	if strings.Contains(again.raw, value) || strings.Contains(again.raw, "shown exactly once") {
		t.Error("the token value is shown a second time")
	}
	for _, want := range []string{"scheduler", fp, "active", "mcp:read, mcp:ops"} {
		if !strings.Contains(again.text, want) {
			t.Errorf("token list lacks %q", want)
		}
	}
	// Another session never sees it.
	if p := g.signedIn(t).get("/console/workspaces/ws-1/tokens"); strings.Contains(p.raw, value) {
		t.Error("another session sees the token value")
	}

	p = v.post("/console/workspaces/ws-1/tokens/revoke", url.Values{"csrf": {csrf}, "fingerprint": {fp}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d\n%s", p.status, p.text)
	}
	if list := g.tokens(t, "ws-1"); list[0]["status"] != "revoked" {
		t.Errorf("status after revoke = %v", list[0]["status"])
	}
	after := v.get(p.header.Get("Location"))
	if !strings.Contains(after.text, "The token was revoked") || !strings.Contains(after.text, `<td class="status">revoked</td>`) {
		t.Errorf("the page after revoking does not say so\n%s", after.text)
	}
	if bad := v.post("/console/workspaces/ws-1/tokens/revoke", url.Values{"csrf": {csrf}, "fingerprint": {"xyz"}}); bad.status != http.StatusBadRequest ||
		!strings.Contains(bad.text, `fingerprint "xyz" is not valid`) {
		t.Errorf("revoking a bad fingerprint: %d\n%s", bad.status, bad.text)
	}
}

func TestLimitsEmptyKeepsDefaults(t *testing.T) {
	g := newGateway(t)
	v := g.signedIn(t)
	csrf := v.csrf("/console/workspaces/ws-1/tokens")
	p := v.post("/console/workspaces/ws-1/external-limits", url.Values{"csrf": {csrf}, "reads_per_tool_hourly": {"120"}, "ops_per_token_hourly": {""}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("save limits: %d\n%s", p.status, p.text)
	}
	got := g.api(t, http.MethodGet, "/workspaces/ws-1/external-limits", "", http.StatusOK)
	if !strings.Contains(got, `"reads_per_tool_hourly":120,"ops_per_token_hourly":null`) || !strings.Contains(got, `"ops_per_token_hourly":30`) {
		t.Errorf("limits after saving 120 and an empty field = %s; want reads 120 and ops at its default (30)", got)
	}
	page := v.get(p.header.Get("Location"))
	if !strings.Contains(page.text, `name="reads_per_tool_hourly" inputmode="numeric" value="120"`) || !strings.Contains(page.text, "(in effect: 30)") {
		t.Errorf("the limits form does not show the stored and effective values\n%s", page.text)
	}
}

func TestProfilesAndWorkspaceDefault(t *testing.T) {
	g := newGateway(t)
	v := g.signedIn(t)
	csrf := v.csrf("/console/workspaces/ws-1/profiles")
	save := func(form url.Values) {
		t.Helper()
		form.Set("csrf", csrf)
		if p := v.post("/console/workspaces/ws-1/profiles", form); p.status != http.StatusSeeOther {
			t.Fatalf("save profile: %d\n%s", p.status, p.text)
		}
	}
	save(url.Values{"id": {"reader"}, "new": {"1"}, "name": {"Reader"}, "tier": {"supacloud.read.*"}})
	save(url.Values{"id": {"ops"}, "new": {"1"}, "name": {"Ops"}, "tier": {"supacloud.ops.*", "supacloud.read.*", "supacloud.script.run"},
		"exact": {"deploy.status\n\n  app.logs  "}, "script_mode": {"only"}, "scripts": {"nightly-backup\nreindex"}})
	got := g.api(t, http.MethodGet, "/workspaces/ws-1/profiles/ops", "", http.StatusOK)
	want := `{"workspace_id":"ws-1","id":"ops","name":"Ops","allowlist":["supacloud.read.*","supacloud.ops.*","supacloud.script.run","deploy.status","app.logs"],"script_allowlist":["nightly-backup","reindex"],"is_workspace_default":false}`
	if strings.TrimSpace(got) != want {
		t.Errorf("stored profile =\n%s\nwant\n%s", got, want)
	}
	// The edit form shows it back: tiers checked, exact names and scripts in their boxes.
	edit := v.get("/console/workspaces/ws-1/profiles/ops")
	for _, w := range []string{`value="supacloud.ops.*" checked`, `value="supacloud.script.run" checked`, ">deploy.status\napp.logs</textarea>",
		`value="only" checked`, ">nightly-backup\nreindex</textarea>", `name="id" value="ops" readonly`} {
		if !strings.Contains(edit.text, w) {
			t.Errorf("edit form lacks %q", w)
		}
	}
	if strings.Contains(edit.text, `value="supacloud.deploy.*" checked`) {
		t.Error("edit form checks a tier the profile lacks")
	}
	// Switching back to "any script" sends null.
	save(url.Values{"id": {"ops"}, "name": {"Ops"}, "tier": {"supacloud.ops.*"}, "script_mode": {"any"}, "scripts": {"ignored"}})
	if got := g.api(t, http.MethodGet, "/workspaces/ws-1/profiles/ops", "", http.StatusOK); !strings.Contains(got, `"script_allowlist":null`) {
		t.Errorf("'any script' stored %s; want script_allowlist null", got)
	}

	setDefault := func(id string) page {
		t.Helper()
		p := v.post("/console/workspaces/ws-1/default-profile", url.Values{"csrf": {csrf}, "profile_id": {id}})
		if p.status != http.StatusSeeOther {
			t.Fatalf("set default %q: %d\n%s", id, p.status, p.text)
		}
		return v.get(p.header.Get("Location"))
	}
	setDefault("reader")
	page := setDefault("ops")
	if got := g.api(t, http.MethodGet, "/workspaces/ws-1/default-profile", "", http.StatusOK); !strings.Contains(got, `"profile_id":"ops"`) {
		t.Errorf("default profile = %s; want ops", got)
	}
	if got := g.api(t, http.MethodGet, "/workspaces/ws-1/profiles/reader", "", http.StatusOK); !strings.Contains(got, `"is_workspace_default":false`) {
		t.Errorf("setting ops as default left reader the default too: %s", got)
	}
	if !strings.Contains(page.text, `<strong id="default-profile">ops</strong>`) || strings.Count(page.text, "<strong>Default</strong>") != 1 {
		t.Errorf("profiles page does not show exactly one default (ops)\n%s", page.text)
	}
	page = setDefault("")
	if got := g.api(t, http.MethodGet, "/workspaces/ws-1/default-profile", "", http.StatusOK); !strings.Contains(got, `"profile_id":null`) {
		t.Errorf("after clearing, default profile = %s", got)
	}
	if !strings.Contains(page.text, "read-only fallback") {
		t.Error("the page after clearing does not say profile-less tasks get the read-only fallback")
	}
	p := v.post("/console/workspaces/ws-1/default-profile", url.Values{"csrf": {csrf}, "profile_id": {"ghost"}})
	if p.status != http.StatusNotFound || !strings.Contains(p.text, "ghost") {
		t.Errorf("default to an unknown profile: %d\n%s", p.status, p.text)
	}
}

func TestWorkspacePages(t *testing.T) {
	g := newGateway(t)
	v := g.signedIn(t)
	list := v.get("/console/workspaces")
	if list.status != http.StatusOK || !strings.Contains(list.text, `<a href="/console/workspaces/ws-1">ws-1</a>`) || !strings.Contains(list.text, "Acme") {
		t.Fatalf("workspaces page: %d\n%s", list.status, list.text)
	}
	ws := v.get("/console/workspaces/ws-1")
	for _, w := range []string{`<th scope="row">alice</th><td class="role">owner</td><td class="seat-type">developer</td>`, `<th scope="row">bob</th><td class="role">viewer</td><td class="seat-type">—</td>`, "team", "/console/workspaces/ws-1/tokens", "/console/workspaces/ws-1/profiles"} {
		if !strings.Contains(ws.text, w) {
			t.Errorf("workspace page lacks %q", w)
		}
	}
	if p := v.get("/console/workspaces/nope"); p.status != http.StatusNotFound || !strings.Contains(p.text, "nope") {
		t.Errorf("unknown workspace: %d\n%s", p.status, p.text)
	}
	for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "Cache-Control"} {
		if ws.header.Get(h) == "" {
			t.Errorf("page lacks header %s", h)
		}
	}
	if css := v.get("/console/static/console.css"); css.status != http.StatusOK || !strings.Contains(css.header.Get("Content-Type"), "text/css") {
		t.Errorf("stylesheet: %d %s", css.status, css.header.Get("Content-Type"))
	}
}

func TestSessionExpiresAndSignOut(t *testing.T) {
	g := newGateway(t)
	v := g.signedIn(t)
	g.clock.add(console.DefaultSessionTTL - time.Minute)
	if p := v.get("/console/workspaces"); p.status != http.StatusOK {
		t.Fatalf("before expiry: %d", p.status)
	}
	g.clock.add(2 * time.Minute)
	if p := v.get("/console/workspaces"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/login" {
		t.Errorf("after expiry the page answers %d %q; want a redirect to sign in", p.status, p.header.Get("Location"))
	}

	v = g.signedIn(t)
	csrf := v.csrf("/console/workspaces")
	u, _ := url.Parse(g.srv.URL + "/console/")
	old := v.client.Jar.Cookies(u)
	p := v.post("/console/logout", url.Values{"csrf": {csrf}})
	if p.status != http.StatusSeeOther || sessionCookie(t, p.header).MaxAge >= 0 {
		t.Fatalf("sign-out: %d, cookie %v", p.status, p.header["Set-Cookie"])
	}
	// The server forgot the session: its old cookie, sent again, signs in nobody.
	v.client.Jar.SetCookies(u, old)
	if p := v.get("/console/workspaces"); p.status != http.StatusSeeOther {
		t.Errorf("after sign-out the old session cookie still opens the workspaces page (%d)", p.status)
	}
}

// Signed-out sessions (one per visit of the sign-in page, no credential
// needed) cannot lock the operator out: once they fill the table, the
// oldest of them gives way to a new visitor, and a sign-in always finds
// room while signed-in sessions do not fill the table.
func TestSignedOutSessionsCannotFillTheTable(t *testing.T) {
	g := newGateway(t)
	c := console.New(console.Options{Admin: g.admin, AdminPrefix: admin.Prefix, Now: g.clock.now, MaxSessions: 5})
	mux := http.NewServeMux()
	mux.Handle(console.Prefix+"/", c)
	small := *g
	small.srv = httptest.NewServer(mux)
	t.Cleanup(small.srv.Close)
	operator := small.visitor(t)
	csrf := operator.csrf("/console/login") // the operator opens the form first
	for i := 0; i < 20; i++ {
		if p := small.visitor(t).get("/console/login"); p.status != http.StatusOK {
			t.Fatalf("anonymous visit %d of the sign-in page: %d; want 200", i, p.status)
		}
	}
	// The operator's form session may have given way; a fresh form works.
	if p := operator.post("/console/login", url.Values{"csrf": {csrf}, "token": {adminToken}}); p.status != http.StatusSeeOther {
		if p := operator.signIn(adminToken); p.status != http.StatusSeeOther {
			t.Fatalf("sign-in after a flood of signed-out sessions: %d\n%s", p.status, p.text)
		}
	}
	if p := operator.get("/console/workspaces"); p.status != http.StatusOK {
		t.Fatalf("workspaces page after signing in: %d", p.status)
	}
}
