package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestApprovalsPageCountsAsApprover: each load of the approvals page by an
// operator renews one approver presence bound to the session (two
// sessions, two approvers); the page reloads itself to the inbox; a page
// answering a refused form does not reload itself; sign-out drops the
// presence; a read-only session never counts; a failing store says so on
// the page.
func TestApprovalsPageCountsAsApprover(t *testing.T) {
	g := newGateway(t)
	v := g.signedIn(t)
	p := v.get("/console/approvals")
	if p.status != http.StatusOK || !strings.Contains(p.raw, `<meta http-equiv="refresh" content="60; url=/console/approvals">`) {
		t.Fatalf("approvals page: %d, no meta refresh to the inbox\n%s", p.status, p.raw)
	}
	if !strings.Contains(p.text, "You count as an approver while this page is open") || !strings.Contains(p.text, "15 s after its last load") {
		t.Errorf("the page does not tell the operator they count as an approver\n%s", p.text)
	}
	id := g.approvals.only(t)
	if !strings.HasPrefix(id, "console_") {
		t.Errorf("approver id %q; want console_…", id)
	}
	u, _ := url.Parse(g.srv.URL + "/console/")
	for _, ck := range v.client.Jar.Cookies(u) {
		if strings.Contains(id, ck.Value) {
			t.Errorf("the approver id %q holds the session cookie's value", id)
		}
	}
	v.get("/console/approvals")
	if n := g.approvals.approvers()[id]; n != 2 {
		t.Errorf("Present calls of %s after two loads = %d; want 2 (each load renews)", id, n)
	}
	if p := v.get("/console/workspaces"); p.status != http.StatusOK || strings.Contains(p.raw, `http-equiv="refresh"`) {
		t.Errorf("another page reloads itself or fails: %d", p.status)
	}

	// A second operator is a second approver.
	w := g.signedIn(t)
	w.get("/console/approvals")
	if n := len(g.approvals.approvers()); n != 2 {
		t.Errorf("approvers with two operators on the page: %d; want 2", n)
	}

	// A refused decision: the page stays (no refresh) and says how to keep counting.
	p = v.postFrom("/console/approvals", "/console/approvals/ap-none", url.Values{"verb": {"approve"}, "decided_by": {"olivia"}})
	if p.status != http.StatusNotFound || strings.Contains(p.raw, `http-equiv="refresh"`) || !strings.Contains(p.text, "does not reload itself") {
		t.Errorf("refused decision page: %d\n%s", p.status, p.text)
	}

	// Sign-out drops the operator's presence at once, not the other's.
	if p := v.postFrom("/console/workspaces", "/console/logout", url.Values{}); p.status != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", p.status)
	}
	if left := g.approvals.approvers(); len(left) != 1 || left[id] != 0 {
		t.Errorf("approvers after %s signed out: %v; want only the other operator", id, left)
	}

	// A read-only session is sent to its workspace's human gates and never counts.
	reader := g.visitor(t)
	if p := reader.signInAs(g.createToken(t, "ws-1", "management:read"), "", "ws-1"); p.status != http.StatusSeeOther {
		t.Fatalf("reader sign-in: %d", p.status)
	}
	if p := reader.get("/console/approvals"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/approvals/gates" {
		t.Errorf("approvals page for a reader: %d %s; want sent to the Human gates tab", p.status, p.header.Get("Location"))
	}
	if p := reader.get("/console/approvals/gates"); p.status != http.StatusOK || strings.Contains(p.raw, `id="presence"`) || strings.Contains(p.raw, `http-equiv="refresh"`) {
		t.Errorf("human gates tab for a reader: %d, or it counts them as an approver\n%s", p.status, p.text)
	}
	if n := len(g.approvals.approvers()); n != 1 {
		t.Errorf("approvers after a reader tried the page: %d; want 1", n)
	}

	// The store fails: the page still shows the inbox and says the operator does not count.
	g.approvals.mu.Lock()
	g.approvals.presenceErr = errString("the audit store is unreachable")
	g.approvals.mu.Unlock()
	if p := w.get("/console/approvals"); p.status != http.StatusOK || !strings.Contains(p.text, "You do not count as an approver now") || !strings.Contains(p.text, "the audit store is unreachable") {
		t.Errorf("approvals page when presence fails: %d\n%s", p.status, p.text)
	}
}

// only returns the one approver present, failing t when there is not
// exactly one.
func (f *fakeApprovals) only(t *testing.T) string {
	t.Helper()
	present := f.approvers()
	if len(present) != 1 {
		t.Fatalf("approvers present: %v; want one", present)
	}
	for id := range present {
		return id
	}
	return ""
}
