package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/approvals"
	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
	"github.com/mcpgate/mcpgate/gateway/sqlite"
)

// The admin API's collaborators the console's pages show, faked so that
// the handler tests control what they answer. The full-gateway test
// (test/e2e) runs the console over the real ones.

// fakeExplainer answers POST /admin/v1/explain: it records each request
// and answers with the chain its chains map holds for the request's user
// (a member without an entry gets an empty chain); a user named in fail is
// refused with that error.
type fakeExplainer struct {
	mu       sync.Mutex
	requests []admin.ExplainRequest
	chains   map[string][]map[string]any
	fail     map[string]error
	// all, when it has the user, is their all_permissions (every key);
	// else all_permissions is their chains.
	all map[string][]map[string]any
}

func (f *fakeExplainer) allKeys(user string) []map[string]any {
	if a, ok := f.all[user]; ok {
		return a
	}
	return f.chains[user]
}

func (f *fakeExplainer) explain(_ context.Context, req admin.ExplainRequest) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
	if err := f.fail[req.User]; err != nil {
		return nil, err
	}
	if req.Tool == "no.such.tool" {
		return nil, gateway.Errorf(gateway.EInvalid, "tool %q is not in the catalog, so the gateway answers it as an unknown tool before any policy runs; use a tool name from tools/list", req.Tool)
	}
	var args map[string]any
	_ = json.Unmarshal(req.Args, &args)
	allow := req.Tool == "workspace.info"
	reasons := []map[string]string{}
	decided := map[string]any{"rule": "data.supacloud.allow"}
	if !allow {
		reasons = append(reasons, map[string]string{"code": "tool.not_granted", "message": "the profile grants no " + req.Tool})
		decided = map[string]any{"rule": "data.supacloud.gates.grant", "gate": "grant", "code": "tool.not_granted"}
	}
	return map[string]any{
		"user":  req.User,
		"notes": []string{"task " + req.Task + " is not registered yet; explained as the gateway registers it on its first request: running"},
		"decision": map[string]any{"allow": allow, "tier": "read", "revision": "rev-test-1", "reasons": reasons,
			"args_seen": args},
		"explain": map[string]any{
			"gates":           []map[string]any{{"gate": "edition", "rule": "data.supacloud.gates.edition", "passed": true}, {"gate": "grant", "rule": "data.supacloud.gates.grant", "passed": allow}},
			"decided_by":      decided,
			"permissions":     f.chains[req.User],
			"all_permissions": f.allKeys(req.User),
			"edition":         map[string]any{"name": "community", "enterprise": false},
		},
		"input": map[string]any{},
	}, nil
}

// link is one link of a fake precedence chain.
func link(name string, value any, extra ...any) map[string]any {
	m := map[string]any{"link": name, "value": value}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

// fakeApprovals is an in-memory approvals service; present records the
// approvers the console reported present (Present adds, Absent removes),
// and presenceErr, when set, fails Present.
type fakeApprovals struct {
	mu          sync.Mutex
	list        []approvals.Approval
	present     map[string]int // approver id → Present calls
	presenceErr error
}

func (f *fakeApprovals) Present(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.presenceErr != nil {
		return f.presenceErr
	}
	if f.present == nil {
		f.present = map[string]int{}
	}
	f.present[id]++
	return nil
}

func (f *fakeApprovals) Absent(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.present, id)
	return nil
}

func (f *fakeApprovals) PresenceTTL() time.Duration { return 15 * time.Second }

// approvers returns the approver ids present and their Present counts.
func (f *fakeApprovals) approvers() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for id, n := range f.present {
		out[id] = n
	}
	return out
}

func (f *fakeApprovals) add(a approvals.Approval) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = append([]approvals.Approval{a}, f.list...)
}

func (f *fakeApprovals) get(id string) approvals.Approval {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.list {
		if a.ID == id {
			return a
		}
	}
	return approvals.Approval{}
}

func (f *fakeApprovals) List(_ context.Context, flt approvals.Filter) ([]approvals.Approval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []approvals.Approval
	for _, a := range f.list {
		if flt.Status == "" || a.Status == flt.Status {
			out = append(out, a)
		}
	}
	return out, nil
}

func (f *fakeApprovals) Decide(_ context.Context, id, status, by, reason string) (*approvals.Approval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.list {
		a := &f.list[i]
		if a.ID != id {
			continue
		}
		if a.Status != approvals.StatusPending {
			return nil, gateway.Errorf(gateway.EConflict, "approval %s is %s (by %s); only a pending approval can be decided", id, a.Status, a.DecidedBy)
		}
		now := time.Now()
		a.Status, a.DecidedBy, a.Reason, a.DecidedAt = status, by, reason, &now
		c := *a
		return &c, nil
	}
	return nil, gateway.Errorf(gateway.ENotFound, "approval %s does not exist", id)
}

func (f *fakeApprovals) Watch(ctx context.Context) (<-chan approvals.Approval, error) {
	ch := make(chan approvals.Approval)
	go func() { <-ctx.Done(); close(ch) }()
	return ch, nil
}

// fakePolicy is a live policy whose next reload passes or is refused.
type fakePolicy struct {
	mu     sync.Mutex
	status policystatus.Status
	refuse string // OPA's message for the next reload; "" passes
}

func (f *fakePolicy) Status() policystatus.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

func (f *fakePolicy) Reload(_ context.Context, trigger string) (*policystatus.Attempt, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	at := &policystatus.Attempt{Time: time.Now(), Trigger: trigger, Revision: "rev-test-2", Outcome: "live", Tests: 12}
	if f.refuse != "" {
		at.Outcome, at.Error, at.Revision = "refused", f.refuse, "rev-bad"
		f.status.LastAttempt, f.status.LastFailure = at, at
		return at, gateway.Errorf(gateway.EInvalid, "%s", f.refuse)
	}
	f.status.Revision, f.status.LastAttempt = at.Revision, at
	return at, nil
}

// tokenReader is the server's management:read check over the test store:
// an active scmt_ token with management:read reads its own workspace.
func tokenReader(st *sqlite.Store) func(r *http.Request) (string, bool) {
	return func(r *http.Request) (string, bool) {
		v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !strings.HasPrefix(v, admin.TokenPrefix) {
			return "", false
		}
		tok, err := st.APITokenByHash(r.Context(), admin.HashToken(v))
		if err != nil || tok.Status != "active" || !slices.Contains(tok.Scopes, "management:read") {
			return "", false
		}
		return tok.WorkspaceID, true
	}
}

// fakeGates is a backend's human gates (approvals.HumanGates), decided as
// the demo backend decides them: waiting only, a question needs an answer
// to approve, someone must be named. resumed records the tasks a decision
// let go on.
type fakeGates struct {
	mu      sync.Mutex
	gates   map[string][]*approvals.Gate // workspace → gates, in order
	resumed []string
}

func newFakeGates() *fakeGates {
	at := time.Now().Add(-time.Hour)
	done := at.Add(time.Minute)
	return &fakeGates{gates: map[string][]*approvals.Gate{"ws-1": {
		{ID: "apr-tool", Kind: "task", Class: "tool", Status: "waiting", Title: "Allow issue.transition on the billing tracker?",
			Prompt: "The agent wants to close 4 issues it believes are fixed.", TaskID: "tsk-1", RunID: "run-1", RequestedAt: at,
			Details: map[string]any{"tool": "issue.transition"}},
		{ID: "apr-q", Kind: "task", Class: "question", Status: "waiting", Title: "Which payment provider should the retry target?",
			Prompt: "Stripe or Adyen?", TaskID: "tsk-2", RunID: "run-2", RequestedAt: at},
		{ID: "apr-wf", Kind: "workflow", Class: "workflow_human_gate", Status: "waiting", Title: "Release sign-off",
			RunID: "run-3", WorkflowID: "wfl-1", NodeID: "n2", RequestedAt: at},
		{ID: "apr-old", Kind: "task", Class: "question", Status: "approved", Title: "Use the staging database?", TaskID: "tsk-0",
			RequestedAt: at, DecidedAt: &done, DecidedBy: "user:owner", Decision: "approve", Answer: "Yes, staging first."},
	}}}
}

func (f *fakeGates) get(ws, id string) approvals.Gate {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, g := range f.gates[ws] {
		if g.ID == id {
			return *g
		}
	}
	return approvals.Gate{}
}

func (f *fakeGates) ListGates(_ context.Context, ws string) ([]approvals.Gate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []approvals.Gate{}
	for _, g := range f.gates[ws] {
		out = append(out, *g)
	}
	return out, nil
}

func (f *fakeGates) DecideGate(_ context.Context, ws, id string, d approvals.GateDecision) (approvals.Gate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, g := range f.gates[ws] {
		if g.ID != id {
			continue
		}
		switch {
		case g.Status != "waiting":
			return approvals.Gate{}, gateway.Errorf(gateway.EConflict, "approval %s was already decided (%s by %s); nothing left to decide", id, g.Status, g.DecidedBy)
		case g.Class == "question" && d.Decision == "approve" && d.Answer == "":
			return approvals.Gate{}, gateway.Errorf(gateway.EInvalid, "approving question gate %s needs an answer to its question: %s", id, g.Title)
		case d.DecidedBy == "":
			return approvals.Gate{}, gateway.Errorf(gateway.EInvalid, "a decision of gate %s must name who decided it", id)
		}
		now := time.Now()
		g.Status, g.Decision, g.Answer, g.Note, g.DecidedBy, g.DecidedAt = map[string]string{"approve": "approved", "reject": "rejected"}[d.Decision], d.Decision, d.Answer, d.Note, d.DecidedBy, &now
		if g.TaskID != "" {
			f.resumed = append(f.resumed, g.TaskID)
		}
		return *g, nil
	}
	return approvals.Gate{}, gateway.Errorf(gateway.ENotFound, "gate %s not found in this workspace", id)
}

// fakeUpstreams answers the admin API's upstream routes with one bridged
// upstream, forge (surface supacloud, prefix "forge."), whose tools are
// the pins of the test store: a decision is the store's own
// DecideToolPin, as the gateway's admin view makes it.
type fakeUpstreams struct{ st *sqlite.Store }

// forgeTool is one tool of GET /admin/v1/upstreams/forge/tools.
type forgeTool struct {
	Name string `json:"name"`
	gateway.ToolPin
	Listed bool `json:"listed"`
}

func (f fakeUpstreams) List(ctx context.Context) (any, error) {
	pins, err := f.st.ToolPins(ctx)
	if err != nil {
		return nil, err
	}
	n := map[gateway.PinState]int{gateway.PinPinned: 0, gateway.PinQuarantined: 0, gateway.PinRejected: 0}
	for _, p := range pins {
		n[p.State]++
	}
	return map[string]any{"upstreams": []map[string]any{{"name": "forge", "surface": "supacloud", "state": "ok", "tools": n}}}, nil
}

func (f fakeUpstreams) Tools(ctx context.Context, name string) (any, error) {
	if name != "forge" {
		return nil, gateway.Errorf(gateway.ENotFound, "no bridged upstream %q; GET /admin/v1/upstreams lists them", name)
	}
	pins, err := f.st.ToolPins(ctx)
	if err != nil {
		return nil, err
	}
	out := []forgeTool{}
	for _, p := range pins {
		out = append(out, forgeTool{Name: "forge." + p.Tool, ToolPin: p, Listed: p.State == gateway.PinPinned})
	}
	return map[string]any{"upstream": name, "tools": out}, nil
}

func (f fakeUpstreams) Decide(ctx context.Context, name, tool string, approve bool, by string) (any, error) {
	if name != "forge" {
		return nil, gateway.Errorf(gateway.ENotFound, "no bridged upstream %q; GET /admin/v1/upstreams lists them", name)
	}
	p, err := f.st.DecideToolPin(ctx, gateway.SurfaceSupaCloud, name, tool, approve, by, time.Now().UTC())
	if err != nil {
		return nil, err
	}
	return forgeTool{Name: "forge." + p.Tool, ToolPin: *p, Listed: true}, nil
}
