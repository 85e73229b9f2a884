package console_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/console"
)

// TestHumanGatesInbox: the inbox's Human gates tab lists the backend's
// human gates per workspace with their prompts; an operator decides them
// as the name given at sign-in, with the admin API's message next to the
// field at fault on a refusal (the typed fields kept, nothing decided);
// decided gates show who decided.
func TestHumanGatesInbox(t *testing.T) {
	g, v := twoWorkspacesOperator(t)
	p := v.get("/console/approvals/gates")
	if p.status != http.StatusOK {
		t.Fatalf("human gates: %d\n%s", p.status, p.text)
	}
	for _, want := range []string{`id="gates-ws-1"`, `id="gates-ws-2"`, `id="gate-apr-tool"`, "The agent wants to close 4 issues it believes are fixed.",
		"tsk-1", "run-1", "issue.transition", `id="gate-apr-wf"`, "wfl-1", "n2", `id="decided-gate-apr-old"`, "user:owner", "Yes, staging first.",
		"recorded as decided by Olivia Operator", `action="/console/workspaces/ws-1/gates/apr-tool"`, "Answer (needed to approve)"} {
		if !strings.Contains(p.text, want) {
			t.Errorf("human gates tab lacks %q", want)
		}
	}
	if !strings.Contains(p.text, "No gate is waiting in this workspace.") {
		t.Error("ws-2, with no gates, does not say so")
	}

	// A question approved without an answer: the backend's message next
	// to the answer field, which is marked invalid; the tab again, with
	// the typed note and no reload; nothing decided.
	p = v.postFrom("/console/approvals/gates", "/console/workspaces/ws-1/gates/apr-q", url.Values{"verb": {"approve"}, "note": {"kept"}})
	field := regexp.MustCompile(`(?s)id="gate-apr-q".*?<input id="(gate-\d+-\d+-answer)" name="answer" value="" aria-invalid="true" aria-describedby="(gate-\d+-\d+-answer-error)">\s*<span id="([^"]+)" class="error" role="alert">approving question gate apr-q needs an answer to its question`).FindStringSubmatch(p.raw)
	if p.status != http.StatusBadRequest || field == nil || field[2] != field[1]+"-error" || field[3] != field[2] {
		t.Errorf("approve a question without an answer: %d, the message is not the answer field's (%q)\n%s", p.status, field, p.raw)
	}
	if !strings.Contains(p.raw, `name="note" value="kept"`) || strings.Contains(p.raw, `http-equiv="refresh"`) || !strings.Contains(p.raw, `<title>Human gates`) {
		t.Error("the refused form is not the Human gates tab with its note kept and no reload")
	}
	if s := g.gates.get("ws-1", "apr-q").Status; s != "waiting" {
		t.Errorf("apr-q is %s after a refused decision", s)
	}

	// A tool gate, which no machine may decide: approved as the operator; the task resumes.
	p = v.postFrom("/console/approvals/gates", "/console/workspaces/ws-1/gates/apr-tool", url.Values{"verb": {"approve"}, "note": {"checked the 4 issues"}, "decided_by": {"mallory"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/approvals/gates?notice=gate-approved#gates-ws-1" {
		t.Fatalf("approve the tool gate: %d %s\n%s", p.status, p.header.Get("Location"), p.text)
	}
	if got := g.gates.get("ws-1", "apr-tool"); got.Status != "approved" || got.DecidedBy != "Olivia Operator" || got.Note != "checked the 4 issues" {
		t.Errorf("apr-tool after approving: %s by %q (note %q); want approved by the sign-in name, never the form's", got.Status, got.DecidedBy, got.Note)
	}
	if len(g.gates.resumed) != 1 || g.gates.resumed[0] != "tsk-1" {
		t.Errorf("tasks resumed: %v, want tsk-1", g.gates.resumed)
	}
	p = v.get("/console/approvals/gates?notice=gate-approved")
	if !strings.Contains(p.text, "The human gate was approved") || !regexp.MustCompile(`id="decided-gate-apr-tool">.*<td class="decided-by">Olivia Operator</td>`).MatchString(p.raw) {
		t.Errorf("after approving, apr-tool is not listed decided by Olivia Operator\n%s", p.text)
	}
	// Again: the admin API's conflict.
	p = v.postFrom("/console/approvals/gates", "/console/workspaces/ws-1/gates/apr-tool", url.Values{"verb": {"reject"}})
	if p.status != http.StatusConflict || !strings.Contains(p.text, "approval apr-tool was already decided (approved by Olivia Operator)") {
		t.Errorf("decide apr-tool again: %d\n%s", p.status, p.text)
	}
	// Without CSRF: refused before anything.
	if p := v.post("/console/workspaces/ws-1/gates/apr-wf", url.Values{"verb": {"approve"}}); p.status != http.StatusForbidden || g.gates.get("ws-1", "apr-wf").Status != "waiting" {
		t.Errorf("CSRF-less decision: %d, gate %s", p.status, g.gates.get("ws-1", "apr-wf").Status)
	}

	// An operator who gave no name: told so, and the admin API refuses.
	anon := g.signedIn(t)
	if p := anon.get("/console/approvals/gates"); !strings.Contains(p.text, "You gave no name at sign-in") {
		t.Errorf("a nameless operator is not told their decisions need a name\n%s", p.text)
	}
	p = anon.postFrom("/console/approvals/gates", "/console/workspaces/ws-1/gates/apr-wf", url.Values{"verb": {"approve"}})
	if p.status != http.StatusBadRequest || !strings.Contains(p.text, "name the person who decides") || !strings.Contains(p.text, "sign in again with your name") {
		t.Errorf("nameless decision: %d\n%s", p.status, p.text)
	}
	if s := g.gates.get("ws-1", "apr-wf").Status; s != "waiting" {
		t.Errorf("a nameless decision decided apr-wf: %s", s)
	}
}

// twoWorkspacesOperator is a gateway with workspaces ws-1 (its gates
// waiting) and ws-2 (none), and an operator signed in with the admin token
// as Olivia Operator.
func twoWorkspacesOperator(t *testing.T) (*gatewayUnderTest, *visitor) {
	t.Helper()
	g := newGateway(t)
	g.api(t, http.MethodPut, "/workspaces/ws-2", `{"name":"Other","slug":"other"}`, http.StatusOK)
	v := g.visitor(t)
	if p := v.signInAs(adminToken, "Olivia Operator", ""); p.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d\n%s", p.status, p.text)
	}
	return g, v
}

// TestHumanGatesForWorkspaceSessions: a workspace owner sees and decides
// its own workspace's gates as its user; a read-only token sees them with
// no form, and its POST changes nothing.
func TestHumanGatesForWorkspaceSessions(t *testing.T) {
	g := newGateway(t) // alice owns ws-1
	owner := g.visitor(t)
	if p := owner.signIn(consoleJWT("ws-1", "alice", g.clock.now().Add(time.Hour))); p.status != http.StatusSeeOther {
		t.Fatalf("owner sign-in: %d\n%s", p.status, p.text)
	}
	if p := owner.get("/console/approvals"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/approvals/gates" {
		t.Errorf("the owner's approvals inbox: %d %s; want sent to the Human gates tab", p.status, p.header.Get("Location"))
	}
	p := owner.get("/console/approvals/gates")
	if p.status != http.StatusOK || !strings.Contains(p.text, "recorded as decided by user:alice") || !strings.Contains(p.raw, `action="/console/workspaces/ws-1/gates/apr-wf"`) {
		t.Fatalf("owner's approvals page: %d\n%s", p.status, p.text)
	}
	if strings.Contains(p.raw, `id="no-pending"`) || strings.Contains(p.raw, `http-equiv="refresh"`) || strings.Contains(p.raw, `aria-label="Approvals inbox"`) {
		t.Error("the owner's page shows the gateway's own approvals (or their tab) or reloads itself")
	}
	p = owner.postFrom("/console/approvals/gates", "/console/workspaces/ws-1/gates/apr-wf", url.Values{"verb": {"reject"}, "note": {"not this week"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("owner rejects the workflow gate: %d\n%s", p.status, p.text)
	}
	if got := g.gates.get("ws-1", "apr-wf"); got.Status != "rejected" || got.DecidedBy != "user:alice" {
		t.Errorf("apr-wf after the owner rejected it: %s by %q", got.Status, got.DecidedBy)
	}
	// Another workspace's gate: refused by the console before the admin API.
	if p := owner.postFrom("/console/approvals/gates", "/console/workspaces/ws-2/gates/apr-x", url.Values{"verb": {"approve"}}); p.status != http.StatusForbidden || !strings.Contains(p.text, "decide its human gates only") {
		t.Errorf("owner decides in another workspace: %d\n%s", p.status, p.text)
	}

	reader := g.visitor(t)
	if p := reader.signInAs(g.createToken(t, "ws-1", "management:read"), "", "ws-1"); p.status != http.StatusSeeOther {
		t.Fatalf("reader sign-in: %d", p.status)
	}
	p = reader.get("/console/approvals/gates")
	if p.status != http.StatusOK || !strings.Contains(p.text, "Stripe or Adyen?") || !strings.Contains(p.raw, `id="decided-gate-apr-wf"`) {
		t.Fatalf("reader's approvals page: %d\n%s", p.status, p.text)
	}
	if n := strings.Count(p.raw, `method="post"`); n != 1 {
		t.Errorf("the reader's Human gates tab has %d POST forms; want only sign-out", n)
	}
	p = reader.postFrom("/console/approvals/gates", "/console/workspaces/ws-1/gates/apr-q", url.Values{"verb": {"approve"}, "answer": {"stripe"}})
	if p.status != http.StatusForbidden || !strings.Contains(p.text, "read-only API token") || g.gates.get("ws-1", "apr-q").Status != "waiting" {
		t.Errorf("reader's decision: %d, gate %s\n%s", p.status, g.gates.get("ws-1", "apr-q").Status, p.text)
	}
}

// TestHumanGatesDecidedInTheBackend: with a backend that keeps no gates
// the gateway can show (an upstream MCP server), both tabs say they are
// decided in the backend instead of listing or counting none.
func TestHumanGatesDecidedInTheBackend(t *testing.T) {
	g := newGateway(t)
	api := admin.NewHandler(g.store, admin.Options{Token: adminToken, Approvals: g.approvals}) // no Gates
	mux := http.NewServeMux()
	c := console.New(console.Options{Admin: api, AdminPrefix: admin.Prefix})
	mux.Handle(console.Prefix+"/", c)
	up := *g
	up.srv = httptest.NewServer(mux)
	t.Cleanup(up.srv.Close)
	v := up.signedIn(t)
	p := v.get("/console/approvals/gates")
	if p.status != http.StatusOK || !strings.Contains(p.raw, `id="gates-unsupported"`) || !strings.Contains(p.text, "human gates are decided in the backend") || strings.Contains(p.raw, `id="gates-ws-1"`) {
		t.Errorf("human gates tab over an upstream backend: %d\n%s", p.status, p.text)
	}
	p = v.get("/console/approvals")
	if p.status != http.StatusOK || !regexp.MustCompile(`<p id="gates-waiting">[^<]*human gates are decided in the backend`).MatchString(p.text) {
		t.Errorf("approvals tab over an upstream backend does not say where gates are decided: %d\n%s", p.status, p.text)
	}
}

// TestInboxTabs: the Pending approvals tab reloads itself for an operator
// (meta refresh in the head), renews their approver presence on each load
// and counts the human gates waiting per workspace, linking to the Human
// gates tab; that tab has no meta refresh, so typing is never interrupted,
// and does not renew presence. Both carry the tab bar with the shown tab
// marked aria-current, and the nav links to both.
func TestInboxTabs(t *testing.T) {
	g, v := twoWorkspacesOperator(t)
	head := func(p page) string {
		t.Helper()
		h, _, ok := strings.Cut(p.raw, "</head>")
		if !ok {
			t.Fatalf("no head in\n%s", p.raw)
		}
		return h
	}
	tab := regexp.MustCompile(`<nav class="tabs" aria-label="Approvals inbox">\s*<a href="/console/approvals"( aria-current="page")?>Pending approvals</a>\s*<a href="/console/approvals/gates"( aria-current="page")?>Human gates</a>`)

	p := v.get("/console/approvals")
	if p.status != http.StatusOK || !strings.Contains(head(p), `<meta http-equiv="refresh" content="60; url=/console/approvals">`) {
		t.Fatalf("approvals tab: %d, no meta refresh in its head\n%s", p.status, p.raw)
	}
	if m := tab.FindStringSubmatch(p.raw); m == nil || m[1] == "" || m[2] != "" {
		t.Errorf("approvals tab: tab bar %q; want Pending approvals current", m)
	}
	if !regexp.MustCompile(`<li id="gates-waiting-ws-1"><a href="/console/approvals/gates#gates-ws-1">Workspace ws-1</a>: <span class="count">3</span> waiting</li>`).MatchString(p.raw) ||
		strings.Contains(p.raw, `id="gates-waiting-ws-2"`) {
		t.Errorf("approvals tab does not count ws-1's 3 waiting gates (and leave out ws-2, with none)\n%s", p.raw)
	}
	if !strings.Contains(p.raw, `<a href="/console/approvals/gates">Human gates</a>`) {
		t.Error("the nav has no link to the Human gates tab")
	}
	id := g.approvals.only(t)

	p = v.get("/console/approvals/gates")
	if p.status != http.StatusOK || strings.Contains(head(p), `http-equiv="refresh"`) || !strings.Contains(p.raw, `id="gate-apr-q"`) {
		t.Fatalf("human gates tab: %d, or its head has a meta refresh\n%s", p.status, p.raw)
	}
	if m := tab.FindStringSubmatch(p.raw); m == nil || m[1] != "" || m[2] == "" {
		t.Errorf("human gates tab: tab bar %q; want Human gates current", m)
	}
	if n := g.approvals.approvers()[id]; n != 1 {
		t.Errorf("Present calls after the Human gates tab loaded: %d; want still 1 (gates are the backend's, not approvals waiting for an approver)", n)
	}

	// Deciding every gate of ws-1 leaves nothing to count.
	for _, gt := range []string{"apr-tool", "apr-q", "apr-wf"} {
		if p := v.postFrom("/console/approvals/gates", "/console/workspaces/ws-1/gates/"+gt, url.Values{"verb": {"reject"}}); p.status != http.StatusSeeOther {
			t.Fatalf("reject %s: %d\n%s", gt, p.status, p.text)
		}
	}
	if p := v.get("/console/approvals"); !strings.Contains(p.raw, `<p id="gates-waiting">No human gate is waiting.</p>`) {
		t.Errorf("approvals tab with no gate waiting does not say so\n%s", p.raw)
	}
}
