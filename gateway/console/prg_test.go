package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
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
