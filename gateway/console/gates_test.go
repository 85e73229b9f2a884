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

// TestHumanGatesInbox: the approvals page lists the backend's human gates
// per workspace with their prompts; an operator decides them as the name
// given at sign-in, with the admin API's message above the form on a
// refusal (nothing decided); decided gates show who decided.
func TestHumanGatesInbox(t *testing.T) {
	g := newGateway(t)
	g.api(t, http.MethodPut, "/workspaces/ws-2", `{"name":"Other","slug":"other"}`, http.StatusOK)
	v := g.visitor(t)
	if p := v.signInAs(adminToken, "Olivia Operator", ""); p.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d\n%s", p.status, p.text)
	}
	p := v.get("/console/approvals")
	if p.status != http.StatusOK {
		t.Fatalf("approvals: %d\n%s", p.status, p.text)
	}
	for _, want := range []string{`id="gates-ws-1"`, `id="gates-ws-2"`, `id="gate-apr-tool"`, "The agent wants to close 4 issues it believes are fixed.",
		"tsk-1", "run-1", "issue.transition", `id="gate-apr-wf"`, "wfl-1", "n2", `id="decided-gate-apr-old"`, "user:owner", "Yes, staging first.",
		"recorded as decided by Olivia Operator", `action="/console/workspaces/ws-1/gates/apr-tool"`, "Answer (needed to approve)"} {
		if !strings.Contains(p.text, want) {
			t.Errorf("approvals page lacks %q", want)
		}
	}
	if !strings.Contains(p.text, "No gate is waiting in this workspace.") {
		t.Error("ws-2, with no gates, does not say so")
	}

	// A question approved without an answer: the backend's message, nothing decided.
	p = v.postFrom("/console/approvals", "/console/workspaces/ws-1/gates/apr-q", url.Values{"verb": {"approve"}, "note": {"kept"}})
	if p.status != http.StatusBadRequest || !regexp.MustCompile(`(?s)id="gate-apr-q".*role="alert"[^>]*>approving question gate apr-q needs an answer to its question`).MatchString(p.text) {
		t.Errorf("approve a question without an answer: %d\n%s", p.status, p.text)
	}
	if !strings.Contains(p.raw, `name="note" value="kept"`) {
		t.Error("the refused form lost its note")
	}
	if s := g.gates.get("ws-1", "apr-q").Status; s != "waiting" {
		t.Errorf("apr-q is %s after a refused decision", s)
	}

	// A tool gate, which no machine may decide: approved as the operator; the task resumes.
	p = v.postFrom("/console/approvals", "/console/workspaces/ws-1/gates/apr-tool", url.Values{"verb": {"approve"}, "note": {"checked the 4 issues"}, "decided_by": {"mallory"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/approvals?notice=gate-approved#gates-ws-1" {
		t.Fatalf("approve the tool gate: %d %s\n%s", p.status, p.header.Get("Location"), p.text)
	}
	if got := g.gates.get("ws-1", "apr-tool"); got.Status != "approved" || got.DecidedBy != "Olivia Operator" || got.Note != "checked the 4 issues" {
		t.Errorf("apr-tool after approving: %s by %q (note %q); want approved by the sign-in name, never the form's", got.Status, got.DecidedBy, got.Note)
	}
	if len(g.gates.resumed) != 1 || g.gates.resumed[0] != "tsk-1" {
		t.Errorf("tasks resumed: %v, want tsk-1", g.gates.resumed)
	}
	p = v.get("/console/approvals?notice=gate-approved")
	if !strings.Contains(p.text, "The human gate was approved") || !regexp.MustCompile(`id="decided-gate-apr-tool">.*<td class="decided-by">Olivia Operator</td>`).MatchString(p.raw) {
		t.Errorf("after approving, apr-tool is not listed decided by Olivia Operator\n%s", p.text)
	}
	// Again: the admin API's conflict.
	p = v.postFrom("/console/approvals", "/console/workspaces/ws-1/gates/apr-tool", url.Values{"verb": {"reject"}})
	if p.status != http.StatusConflict || !strings.Contains(p.text, "approval apr-tool was already decided (approved by Olivia Operator)") {
		t.Errorf("decide apr-tool again: %d\n%s", p.status, p.text)
	}
	// Without CSRF: refused before anything.
	if p := v.post("/console/workspaces/ws-1/gates/apr-wf", url.Values{"verb": {"approve"}}); p.status != http.StatusForbidden || g.gates.get("ws-1", "apr-wf").Status != "waiting" {
		t.Errorf("CSRF-less decision: %d, gate %s", p.status, g.gates.get("ws-1", "apr-wf").Status)
	}

	// An operator who gave no name: told so, and the admin API refuses.
	anon := g.signedIn(t)
	if p := anon.get("/console/approvals"); !strings.Contains(p.text, "You gave no name at sign-in") {
		t.Errorf("a nameless operator is not told their decisions need a name\n%s", p.text)
	}
	p = anon.postFrom("/console/approvals", "/console/workspaces/ws-1/gates/apr-wf", url.Values{"verb": {"approve"}})
	if p.status != http.StatusBadRequest || !strings.Contains(p.text, "name the person who decides") || !strings.Contains(p.text, "sign in again with your name") {
		t.Errorf("nameless decision: %d\n%s", p.status, p.text)
	}
	if s := g.gates.get("ws-1", "apr-wf").Status; s != "waiting" {
		t.Errorf("a nameless decision decided apr-wf: %s", s)
	}
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
	p := owner.get("/console/approvals")
	if p.status != http.StatusOK || !strings.Contains(p.text, "recorded as decided by user:alice") || !strings.Contains(p.raw, `action="/console/workspaces/ws-1/gates/apr-wf"`) {
		t.Fatalf("owner's approvals page: %d\n%s", p.status, p.text)
	}
	if strings.Contains(p.raw, `id="no-pending"`) || strings.Contains(p.raw, `http-equiv="refresh"`) {
		t.Error("the owner's page shows the gateway's own approvals or counts them as an approver")
	}
	p = owner.postFrom("/console/approvals", "/console/workspaces/ws-1/gates/apr-wf", url.Values{"verb": {"reject"}, "note": {"not this week"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("owner rejects the workflow gate: %d\n%s", p.status, p.text)
	}
	if got := g.gates.get("ws-1", "apr-wf"); got.Status != "rejected" || got.DecidedBy != "user:alice" {
		t.Errorf("apr-wf after the owner rejected it: %s by %q", got.Status, got.DecidedBy)
	}
	// Another workspace's gate: refused by the console before the admin API.
	if p := owner.postFrom("/console/approvals", "/console/workspaces/ws-2/gates/apr-x", url.Values{"verb": {"approve"}}); p.status != http.StatusForbidden || !strings.Contains(p.text, "decide its human gates only") {
		t.Errorf("owner decides in another workspace: %d\n%s", p.status, p.text)
	}

	reader := g.visitor(t)
	if p := reader.signInAs(g.createToken(t, "ws-1", "management:read"), "", "ws-1"); p.status != http.StatusSeeOther {
		t.Fatalf("reader sign-in: %d", p.status)
	}
	p = reader.get("/console/approvals")
	if p.status != http.StatusOK || !strings.Contains(p.text, "Stripe or Adyen?") || !strings.Contains(p.raw, `id="decided-gate-apr-wf"`) {
		t.Fatalf("reader's approvals page: %d\n%s", p.status, p.text)
	}
	if n := strings.Count(p.raw, `method="post"`); n != 1 {
		t.Errorf("the reader's approvals page has %d POST forms; want only sign-out", n)
	}
	p = reader.postFrom("/console/approvals", "/console/workspaces/ws-1/gates/apr-q", url.Values{"verb": {"approve"}, "answer": {"stripe"}})
	if p.status != http.StatusForbidden || !strings.Contains(p.text, "read-only API token") || g.gates.get("ws-1", "apr-q").Status != "waiting" {
		t.Errorf("reader's decision: %d, gate %s\n%s", p.status, g.gates.get("ws-1", "apr-q").Status, p.text)
	}
}

// TestHumanGatesDecidedInTheBackend: with a backend that keeps no gates
// the gateway can show (an upstream MCP server), the page says they are
// decided in the backend instead of listing none.
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
	p := v.get("/console/approvals")
	if p.status != http.StatusOK || !strings.Contains(p.raw, `id="gates-unsupported"`) || !strings.Contains(p.text, "human gates are decided in the backend") || strings.Contains(p.raw, `id="gates-ws-1"`) {
		t.Errorf("approvals page over an upstream backend: %d\n%s", p.status, p.text)
	}
}
