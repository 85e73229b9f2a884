package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway/console"
)

// Issue 30, point 8: every POST of a signed-in visitor is answered with a
// redirect (POST/redirect/GET), so a browser's refresh never posts the
// form again: a refused form and the playground's answer are shown by the
// GET the redirect leads to, with their own status, and a refresh of that
// page shows them again without changing anything.
func TestPostsAreRedirected(t *testing.T) {
	g := newGateway(t)
	v := g.signedIn(t)
	const page = "/console/workspaces/ws-1"
	csrf := v.csrf(page)
	for _, tc := range []struct {
		name, path string
		form       url.Values
		status     int
		want       string
	}{
		{"a refused form", page + "/members", url.Values{"csrf": {csrf}, "user_id": {"no good"}, "role": {"member"}}, http.StatusBadRequest, `user id "no good" is not valid`},
		{"a bad CSRF token", page + "/members", url.Values{"csrf": {"forged"}, "user_id": {"dave"}, "role": {"member"}}, http.StatusForbidden, "nothing was changed"},
		{"the playground", "/console/playground", url.Values{"csrf": {csrf}, "workspace": {"ws-1"}, "task": {"task-1"}, "profile": {"ops"}, "user": {"alice"}, "tool": {"workspace.info"}, "args": {"{}"}}, http.StatusOK, "workspace.info"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := v.postOnly(tc.path, tc.form)
			if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/shown" {
				t.Fatalf("POST %s: %d to %q, want 303 to /console/shown\n%s", tc.path, p.status, p.header.Get("Location"), p.text)
			}
			for i := range 2 { // the redirect's GET, then a refresh
				shown := v.get("/console/shown")
				if shown.status != tc.status || !strings.Contains(shown.text, tc.want) {
					t.Fatalf("GET /console/shown (%d): %d, want %d and %q\n%s", i+1, shown.status, tc.status, tc.want, shown.text)
				}
			}
		})
	}
	if p := v.get("/console/shown"); p.status == http.StatusOK && strings.Contains(p.text, "dave") {
		t.Errorf("a forged form changed something:\n%s", p.text)
	}
}

// Issue 30, point 8: a refused sign-in is answered with a redirect to the
// sign-in page too, so a refresh does not post the token again; that page
// shows the refusal with its status (a refresh shows it again), keeps
// what the visitor typed except the token, and opens only beside the
// sign-in form's token it was made for. Signing in clears it.
func TestSignInRefusalIsRedirected(t *testing.T) {
	g := newGateway(t)
	v := g.visitor(t)
	p := v.postOnly("/console/login", url.Values{"csrf": {v.csrf("/console/login")}, "token": {"wrong-token-value-123"}, "operator": {"Olivia"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/login" {
		t.Fatalf("refused sign-in: %d to %q, want 303 to /console/login\n%s", p.status, p.header.Get("Location"), p.text)
	}
	refusal := cookieNamed(t, p.header, console.RefusalCookieName)
	if !refusal.HttpOnly || refusal.SameSite != http.SameSiteStrictMode || refusal.Path != "/console/login" || refusal.MaxAge <= 0 {
		t.Errorf("refusal cookie = %+v; want HttpOnly, SameSite=Strict, Path=/console/login, a lifetime", refusal)
	}
	if strings.Contains(refusal.Value, "wrong-token") || strings.Contains(refusal.Value, "Olivia") {
		t.Errorf("the refusal cookie carries what was typed in clear: %q", refusal.Value)
	}
	for i := range 2 { // the redirect's GET, then a refresh
		shown := v.get("/console/login")
		if shown.status != http.StatusUnauthorized || !strings.Contains(shown.text, "That token was not accepted") || !strings.Contains(shown.raw, `value="Olivia"`) {
			t.Fatalf("GET /console/login (%d): %d, want 401 with the refusal and the name typed\n%s", i+1, shown.status, shown.text)
		}
		if strings.Contains(shown.raw, "wrong-token-value-123") {
			t.Fatal("the refused token is echoed into the page")
		}
	}
	// Another visitor (another form token) with the same cookie sees a clean form.
	other := g.visitor(t)
	other.get("/console/login")
	u, _ := url.Parse(g.srv.URL + "/console/login")
	other.client.Jar.SetCookies(u, []*http.Cookie{{Name: console.RefusalCookieName, Value: refusal.Value, Path: "/console/login"}})
	if p := other.get("/console/login"); p.status != http.StatusOK || strings.Contains(p.text, "not accepted") {
		t.Errorf("the refusal opened beside another form token: %d\n%s", p.status, p.text)
	}
	// Signing in clears it.
	p = v.signIn(adminToken)
	if p.status != http.StatusSeeOther || cookieNamed(t, p.header, console.RefusalCookieName).MaxAge >= 0 {
		t.Fatalf("sign-in after a refusal: %d, refusal cookie %v; want 303 clearing it", p.status, p.header["Set-Cookie"])
	}
}
