package admin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
)

// fakeGates keeps the gates of ws-1 and decides as a backend does: waiting
// only, questions need an answer to approve, someone must be named.
type fakeGates struct {
	mu      sync.Mutex
	gates   map[string]*approvals.Gate
	decided []approvals.GateDecision
}

func newFakeGates() *fakeGates {
	return &fakeGates{gates: map[string]*approvals.Gate{
		"apr-tool": {ID: "apr-tool", Kind: approvals.GateKindTask, Class: "tool", Status: approvals.GateWaiting, Title: "Allow issue.transition?", Prompt: "close 4 issues", TaskID: "tsk-1", RequestedAt: testNow},
		"apr-q":    {ID: "apr-q", Kind: approvals.GateKindTask, Class: approvals.GateClassQuestion, Status: approvals.GateWaiting, Title: "Which provider?", TaskID: "tsk-2", RequestedAt: testNow},
		"apr-done": {ID: "apr-done", Kind: approvals.GateKindWorkflow, Class: "workflow_human_gate", Status: approvals.GateApproved, DecidedBy: "user:owner", RequestedAt: testNow},
	}}
}

func (f *fakeGates) ListGates(_ context.Context, ws string) ([]approvals.Gate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []approvals.Gate{}
	for _, id := range []string{"apr-tool", "apr-q", "apr-done"} {
		if ws == "ws-1" {
			out = append(out, *f.gates[id])
		}
	}
	return out, nil
}

func (f *fakeGates) DecideGate(_ context.Context, ws, id string, d approvals.GateDecision) (approvals.Gate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.gates[id]
	switch {
	case !ok || ws != "ws-1":
		return approvals.Gate{}, gateway.Errorf(gateway.ENotFound, "gate %s not found in this workspace", id)
	case g.Status != approvals.GateWaiting:
		return approvals.Gate{}, gateway.Errorf(gateway.EConflict, "approval %s was already decided (%s by %s); nothing left to decide", id, g.Status, g.DecidedBy)
	case g.Class == approvals.GateClassQuestion && d.Decision == approvals.GateApprove && d.Answer == "":
		return approvals.Gate{}, gateway.Errorf(gateway.EInvalid, "approving question gate %s needs an answer to its question: %s", id, g.Title)
	case d.DecidedBy == "":
		return approvals.Gate{}, gateway.Errorf(gateway.EInvalid, "no decider")
	}
	f.decided = append(f.decided, d)
	at := testNow
	g.Status, g.Decision, g.DecidedBy, g.DecidedAt, g.Answer, g.Note = map[string]string{"approve": "approved", "reject": "rejected"}[d.Decision], d.Decision, d.DecidedBy, &at, d.Answer, d.Note
	out := *g
	out.TaskStatus = "running"
	return out, nil
}

// TestGateRoutes: each status of the human gate routes, and who decides.
func TestGateRoutes(t *testing.T) {
	var fg *fakeGates
	withGates := func(o *Options) {
		fg = newFakeGates()
		o.Gates = fg
		o.WorkspaceAdmin = func(r *http.Request) (string, string, bool) {
			user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer jwt-")
			return "ws-1", user, ok
		}
		o.TokenReader = func(r *http.Request) (string, bool) {
			return "ws-1", r.Header.Get("Authorization") == "Bearer scmt_reader"
		}
	}
	wsAdmin := func(s *fakeStore) {
		s.members[[2]string{"ws-1", "u-admin"}] = gateway.Member{WorkspaceID: "ws-1", UserID: "u-admin", Role: "admin", SeatType: "standard"}
	}
	decision := wsPath + "/gates/apr-tool/decision"
	decidedBy := func(want string) func(*testing.T, *fakeStore, *httptest.ResponseRecorder) {
		return func(t *testing.T, _ *fakeStore, _ *httptest.ResponseRecorder) {
			if len(fg.decided) != 1 || fg.decided[0].DecidedBy != want {
				t.Errorf("decisions reaching the backend = %+v, want one by %q", fg.decided, want)
			}
		}
	}
	nothingDecided := func(t *testing.T, _ *fakeStore, _ *httptest.ResponseRecorder) {
		if len(fg.decided) != 0 {
			t.Errorf("a refused request reached the backend: %+v", fg.decided)
		}
	}
	const get, post = http.MethodGet, http.MethodPost
	runCases(t, []apiCase{
		{name: "admin token lists with prompts", method: get, path: wsPath + "/gates", opts: withGates,
			wantStatus: 200, wantBody: `"prompt":"close 4 issues"`, wantCalls: []string{"Workspace"}},
		{name: "status filter", method: get, path: wsPath + "/gates?status=approved", opts: withGates,
			wantStatus: 200, wantBody: `"gates":[{"id":"apr-done"`, wantCalls: []string{"Workspace"}},
		{name: "bad status filter", method: get, path: wsPath + "/gates?status=open", opts: withGates,
			wantStatus: 400, wantBody: "use one of waiting, approved, rejected", wantCalls: []string{"Workspace"}},
		{name: "unknown workspace", method: get, path: "/admin/v1/workspaces/ws-9/gates", opts: withGates,
			wantStatus: 404, wantBody: "ws-9", wantCalls: []string{"Workspace"}},
		{name: "management:read token lists", method: get, path: wsPath + "/gates", header: hdr("Bearer scmt_reader"), opts: withGates,
			wantStatus: 200, wantBody: `"id":"apr-tool"`, wantCalls: []string{"Workspace"}},
		{name: "management:read token may not decide", method: post, path: decision, body: `{"decision":"approve"}`,
			header: hdr("Bearer scmt_reader"), opts: withGates, wantStatus: 403, wantBody: "may only read", check: nothingDecided},
		{name: "admin token decides, naming the operator", method: post, path: decision, body: `{"decision":"approve","note":"fixed","decided_by":"ops:alice"}`,
			opts: withGates, wantStatus: 200, wantBody: `"decided_by":"ops:alice"`, wantCalls: []string{"Workspace"}, check: decidedBy("ops:alice")},
		{name: "admin token must name the operator", method: post, path: decision, body: `{"decision":"approve"}`,
			opts: withGates, wantStatus: 400, wantBody: "name the person who decides", wantCalls: []string{"Workspace"}, check: nothingDecided},
		{name: "workspace admin decides as itself", method: post, path: decision, body: `{"decision":"reject"}`,
			header: hdr("Bearer jwt-u-admin"), opts: withGates, setup: wsAdmin,
			wantStatus: 200, wantBody: `"task_status":"running"`, wantCalls: []string{"Member", "Workspace"}, check: decidedBy("user:u-admin")},
		{name: "workspace admin may not decide as someone else", method: post, path: decision, body: `{"decision":"reject","decided_by":"user:owner"}`,
			header: hdr("Bearer jwt-u-admin"), opts: withGates, setup: wsAdmin,
			wantStatus: 400, wantBody: "you decide as user:u-admin", wantCalls: []string{"Member", "Workspace"}, check: nothingDecided},
		{name: "member role may not decide", method: post, path: decision, body: `{"decision":"reject"}`,
			header: hdr("Bearer jwt-u-1"), opts: withGates, wantStatus: 403, wantBody: `role \"member\"`, wantCalls: []string{"Member"}, check: nothingDecided},
		{name: "unknown gate", method: post, path: wsPath + "/gates/apr-nope/decision", body: `{"decision":"approve","decided_by":"ops"}`,
			opts: withGates, wantStatus: 404, wantBody: "gate apr-nope not found", wantCalls: []string{"Workspace"}},
		{name: "gate already decided", method: post, path: wsPath + "/gates/apr-done/decision", body: `{"decision":"approve","decided_by":"ops"}`,
			opts: withGates, wantStatus: 409, wantBody: "already decided (approved by user:owner)", wantCalls: []string{"Workspace"}},
		{name: "question approved without answer: the backend's message", method: post, path: wsPath + "/gates/apr-q/decision", body: `{"decision":"approve","decided_by":"ops"}`,
			opts: withGates, wantStatus: 400, wantBody: "needs an answer to its question: Which provider?", wantCalls: []string{"Workspace"}},
		{name: "neither approve nor reject", method: post, path: decision, body: `{"decision":"later","decided_by":"ops"}`,
			opts: withGates, wantStatus: 400, wantBody: `field \"decision\" is \"later\"; use one of approve, reject`, wantCalls: []string{"Workspace"}, check: nothingDecided},
		{name: "unknown field", method: post, path: decision, body: `{"decision":"approve","decided_by":"ops","gate_class":"question"}`,
			opts: withGates, wantStatus: 400, wantBody: "gate_class", wantCalls: []string{"Workspace"}, check: nothingDecided},
		{name: "note too long", method: post, path: decision, body: `{"decision":"approve","decided_by":"ops","note":"` + strings.Repeat("x", 2001) + `"}`,
			opts: withGates, wantStatus: 400, wantBody: "at most 2000 characters", wantCalls: []string{"Workspace"}, check: nothingDecided},
		{name: "no human gates in the backend: list", method: get, path: wsPath + "/gates",
			wantStatus: 501, wantBody: "human gates are decided in the backend"},
		{name: "no human gates in the backend: decide", method: post, path: decision, body: `{"decision":"approve","decided_by":"ops"}`,
			wantStatus: 501, wantBody: `"code":"NotImplemented"`},
	})
}
