package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpgate/mcpgate/gateway"
)

// auditSpy is an Auditor keeping what it is told.
type auditSpy struct {
	mu      sync.Mutex
	events  []*gateway.AuditEvent
	refused []string
}

func (a *auditSpy) Record(ev *gateway.AuditEvent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, ev)
}

func (a *auditSpy) RefusedRequest(surface string, r *http.Request, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refused = append(a.refused, surface+" "+r.URL.Path+": "+err.Error())
}

// Every write of the admin API is recorded with its actor, kind,
// outcome, and before and after; a created token's value never is;
// reads are not recorded; a refused credential is.
func TestWritesAreAudited(t *testing.T) {
	spy := &auditSpy{}
	h := NewHandler(newFakeStore(), Options{Token: adminToken, Now: func() time.Time { return testNow }, Audit: spy})
	profile := wsPath + "/profiles/p-1"
	assertReply(t, serve(h, http.MethodPut, profile, `{"name":"Ops","allowlist":["supacloud.ops.*","supacloud.read.*"]}`, nil), 200, "")
	assertReply(t, serve(h, http.MethodGet, profile, "", nil), 200, "")
	created := serve(h, http.MethodPost, wsPath+"/api-tokens", `{"label":"scheduler","scopes":["mcp:read"]}`, nil)
	assertReply(t, created, 201, `"token":"scmt_`)
	var tok struct{ Token string }
	_ = json.Unmarshal(created.Body.Bytes(), &tok)
	assertReply(t, serve(h, http.MethodDelete, "/admin/v1/api-tokens/0123456789abcdef", "", nil), 204, "")
	assertReply(t, serve(h, http.MethodPut, wsPath+"/profiles/p*", `{"name":"R","allowlist":[]}`, nil), 400, "")
	serve(h, http.MethodPut, profile, `{}`, hdr("Bearer wrong-token"))

	if len(spy.events) != 4 {
		t.Fatalf("%d events recorded; want 4 (the reads and the refused request are not writes): %+v", len(spy.events), spy.events)
	}
	put, create, revoke, bad := spy.events[0], spy.events[1], spy.events[2], spy.events[3]
	var detail struct {
		Before, After struct{ Allowlist []string }
	}
	if err := json.Unmarshal(put.Arguments, &detail); err != nil {
		t.Fatal(err)
	}
	if put.Kind != "admin" || put.Actor != "admin-token" || put.WorkspaceID != "ws-1" || put.Tool != "PUT "+profile ||
		put.Status != gateway.AuditAllowed || len(detail.Before.Allowlist) != 1 || len(detail.After.Allowlist) != 2 {
		t.Errorf("profile write recorded as %+v (%s); want kind admin, actor admin-token, before 1 entry, after 2", put, put.Arguments)
	}
	if create.Kind != "token" || tok.Token == "" || strings.Contains(string(create.Arguments), tok.Token) ||
		!strings.Contains(string(create.Arguments), "[redacted]") {
		t.Errorf("token creation recorded as %+v (%s); want kind token, the value redacted", create, create.Arguments)
	}
	var states struct {
		Before, After struct{ Status, Fingerprint, Hash string }
	}
	if err := json.Unmarshal(revoke.Arguments, &states); err != nil {
		t.Fatalf("revocation's before and after %s: %v", revoke.Arguments, err)
	}
	if revoke.Kind != "token" || revoke.Tool != "DELETE /admin/v1/api-tokens/0123456789abcdef" || revoke.Status != gateway.AuditAllowed || revoke.WorkspaceID != "ws-1" ||
		states.Before.Status != TokenActive || states.After.Status != TokenRevoked || states.After.Fingerprint != "0123456789abcdef" ||
		strings.Contains(string(revoke.Arguments), "hash") {
		t.Errorf("revocation recorded as %+v (%s); want kind token in ws-1, before active, after revoked, no hash", revoke, revoke.Arguments)
	}
	if bad.Status != gateway.AuditDenied || bad.ReasonCodes[0] != "http.400" {
		t.Errorf("refused write recorded as %+v; want denied with its HTTP status", bad)
	}
	if len(spy.refused) != 1 || !strings.HasPrefix(spy.refused[0], "admin "+profile) {
		t.Errorf("refused credentials: %q; want the one bad token", spy.refused)
	}
}

// A write made within a trace names it in its audit event, as a tool
// call's row does; one made outside any trace names none.
func TestWriteEventsNameTheirTrace(t *testing.T) {
	spy := &auditSpy{}
	h := NewHandler(newFakeStore(), Options{Token: adminToken, Now: func() time.Time { return testNow }, Audit: spy})
	profile := wsPath + "/profiles/p-1"
	body := `{"name":"Ops","allowlist":["supacloud.read.*"]}`
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	r := httptest.NewRequestWithContext(trace.ContextWithSpanContext(context.Background(), sc), http.MethodPut, profile, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+adminToken)
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	assertReply(t, w, 200, "")
	assertReply(t, serve(h, http.MethodPut, profile, body, nil), 200, "")
	if len(spy.events) != 2 {
		t.Fatalf("%d events recorded; want 2", len(spy.events))
	}
	if got := spy.events[0].TraceID; got != tid.String() {
		t.Errorf("traced write's event names trace %q; want %s", got, tid)
	}
	if got := spy.events[1].TraceID; got != "" {
		t.Errorf("untraced write's event names trace %q; want none", got)
	}
}
