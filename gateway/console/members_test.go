package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestMemberEditing adds, changes and removes members through the
// workspace page's forms (the admin API's PUT and DELETE of
// /workspaces/{ws}/members/{user}); a refused form shows the admin API's
// message next to its field and changes nothing.
func TestMemberEditing(t *testing.T) {
	g := newGateway(t)
	v := g.signedIn(t)
	const page = "/console/workspaces/ws-1"
	csrf := v.csrf(page)
	member := func(user string) string {
		return strings.TrimSpace(g.api(t, http.MethodGet, "/workspaces/ws-1/members/"+user, "", http.StatusOK))
	}

	p := v.post(page+"/members", url.Values{"csrf": {csrf}, "user_id": {"carol"}, "role": {"admin"}, "seat_type": {"developer"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != page+"?notice=member-saved" {
		t.Fatalf("add carol: %d %s\n%s", p.status, p.header.Get("Location"), p.text)
	}
	if got := member("carol"); !strings.Contains(got, `"role":"admin"`) || !strings.Contains(got, `"seat_type":"developer"`) {
		t.Errorf("carol after adding: %s", got)
	}
	if shown := v.get(page + "?notice=member-saved"); !strings.Contains(shown.text, `<th scope="row">carol</th><td class="role">admin</td><td class="seat-type">developer</td>`) || !strings.Contains(shown.text, "The member was saved") {
		t.Errorf("the workspace page after adding carol:\n%s", shown.text)
	}

	// Change: bob becomes a member with a seat type.
	p = v.post(page+"/members/bob", url.Values{"csrf": {csrf}, "role": {"member"}, "seat_type": {"analyst"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("change bob: %d\n%s", p.status, p.text)
	}
	if got := member("bob"); !strings.Contains(got, `"role":"member"`) || !strings.Contains(got, `"seat_type":"analyst"`) {
		t.Errorf("bob after the change: %s", got)
	}

	// Refusals: the admin API's message next to the field; nothing stored.
	bobBefore := member("bob")
	cases := []struct {
		name, path string
		form       url.Values
		field      string
		status     int
		want       string
	}{
		{"bad role of a member", page + "/members/bob", url.Values{"role": {"boss"}, "seat_type": {""}}, "m-1-role", http.StatusBadRequest, `field "role" is "boss"; use one of owner, admin, member, viewer`},
		{"bad seat type of a member", page + "/members/bob", url.Values{"role": {"admin"}, "seat_type": {"has space"}}, "m-1-seat", http.StatusBadRequest, `seat_type "has space" is not valid`},
		{"bad user id", page + "/members", url.Values{"user_id": {"no good"}, "role": {"member"}}, "add-user", http.StatusBadRequest, `user id "no good" is not valid`},
		{"no user id", page + "/members", url.Values{"user_id": {" "}, "role": {"member"}}, "add-user", http.StatusBadRequest, "user id is required"},
		{"bad role when adding", page + "/members", url.Values{"user_id": {"dave"}, "role": {""}}, "add-role", http.StatusBadRequest, `field "role" is required`},
	}
	for _, tc := range cases {
		tc.form.Set("csrf", csrf)
		p := v.post(tc.path, tc.form)
		if msg := errorNextTo(p, tc.field); p.status != tc.status || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %d, message next to %s = %q; want %d with %q\n%s", tc.name, p.status, tc.field, msg, tc.status, tc.want, p.text)
		}
		if tc.form.Get("user_id") != "" && strings.TrimSpace(tc.form.Get("user_id")) != "" && !strings.Contains(p.text, `value="`+tc.form.Get("user_id")+`"`) {
			t.Errorf("%s: the add form lost the user id typed", tc.name)
		}
	}
	if got := member("bob"); got != bobBefore {
		t.Errorf("a refused change altered bob: %s → %s", bobBefore, got)
	}
	// The refused form keeps what was typed; the cells beside it show what is stored.
	p = v.post(page+"/members/bob", url.Values{"csrf": {csrf}, "role": {"admin"}, "seat_type": {"has space"}})
	if !strings.Contains(p.text, `<th scope="row">bob</th><td class="role">member</td><td class="seat-type">analyst</td>`) || !strings.Contains(p.text, `value="has space"`) {
		t.Errorf("refused change of bob: stored values not shown beside the refilled form\n%s", p.text)
	}
	g.api(t, http.MethodGet, "/workspaces/ws-1/members/dave", "", http.StatusNotFound)

	// Remove carol; removing her again is the admin API's 404, shown above the members.
	if p := v.post(page+"/members/carol/remove", url.Values{"csrf": {csrf}}); p.status != http.StatusSeeOther || p.header.Get("Location") != page+"?notice=member-removed" {
		t.Fatalf("remove carol: %d %s\n%s", p.status, p.header.Get("Location"), p.text)
	}
	g.api(t, http.MethodGet, "/workspaces/ws-1/members/carol", "", http.StatusNotFound)
	p = v.post(page+"/members/carol/remove", url.Values{"csrf": {csrf}})
	if p.status != http.StatusNotFound || !strings.Contains(p.text, `id="members-error"`) || !strings.Contains(p.text, "carol") {
		t.Errorf("removing a member twice: %d\n%s", p.status, p.text)
	}

	// Without the CSRF token nothing changes.
	if p := v.post(page+"/members/alice/remove", url.Values{}); p.status != http.StatusForbidden {
		t.Errorf("remove without CSRF: %d", p.status)
	}
	member("alice")

	// A read-only API token session sees no member form and its POSTs change nothing.
	reader := g.visitor(t)
	if p := reader.signInAs(g.createToken(t, "ws-1", "management:read"), "", "ws-1"); p.status != http.StatusSeeOther {
		t.Fatalf("reader sign-in: %d\n%s", p.status, p.text)
	}
	ro := reader.get(page)
	if strings.Contains(ro.raw, "/members") || strings.Count(ro.raw, `method="post"`) != 1 {
		t.Errorf("the reader's workspace page shows member forms:\n%s", ro.raw)
	}
	if p := reader.postFrom(page, page+"/members/alice/remove", url.Values{}); p.status != http.StatusForbidden {
		t.Errorf("a reader's remove: %d", p.status)
	}
	member("alice")
}

// TestChainTableShowsEveryKey: the permissions page shows each member's
// all_permissions (every permission key), not only the keys the explained
// tool reads.
func TestChainTableShowsEveryKey(t *testing.T) {
	g := newGateway(t)
	g.explainer.chains["alice"] = []map[string]any{{"field": "budget_remaining", "key": "workspace.budget.view", "value": true, "decided_by": "default",
		"chain": []map[string]any{link("user_override", nil), link("seat_type", nil), link("workspace_override", nil), link("org_plan", nil), link("default", true)}}}
	g.explainer.all = map[string][]map[string]any{"alice": {
		{"field": nil, "key": "sso.configure", "value": false, "edition_capped": true, "decided_by": "edition",
			"chain": []map[string]any{link("user_override", true), link("seat_type", nil), link("workspace_override", nil), link("org_plan", nil), link("default", nil)}},
		g.explainer.chains["alice"][0],
	}}
	v := g.signedIn(t)
	p := v.get("/console/workspaces/ws-1/permissions")
	for _, want := range []string{`<tr data-key="sso.configure"><th scope="row"><code>sso.configure</code></th><td class="value">false</td><td class="decided-by">edition (capped by the edition)</td>`,
		`<tr data-key="workspace.budget.view">`, "every key"} {
		if !strings.Contains(p.text, want) {
			t.Errorf("permissions page lacks %q\n%s", want, p.text)
		}
	}
}
