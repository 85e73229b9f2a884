package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

// fakeExplain answers as gateway/server's explainer does, in shape: the
// request it was given is echoed in input, so tests can see what reached it.
func fakeExplain(_ context.Context, req ExplainRequest) (any, error) {
	if req.Workspace == "ws-9" {
		return nil, gateway.Errorf(gateway.ENotFound, "workspace ws-9 does not exist; create it with PUT /admin/v1/workspaces/ws-9")
	}
	return map[string]any{
		"user":     "u-1",
		"notes":    []string{},
		"decision": gateway.Decision{ID: "d-1", Allow: true, Visible: true, Tier: "read", Reasons: []gateway.Reason{}},
		"explain": map[string]any{"decision": map[string]any{}, "decided_by": map[string]any{}, "gates": []any{},
			"profile": nil, "grant": nil, "permissions": []any{}, "edition": map[string]any{}},
		"input": map[string]any{"workspace": req.Workspace, "task": req.Task, "tool": req.Tool, "args": req.Args},
	}, nil
}

func TestExplainEndpoint(t *testing.T) {
	withExplain := func(o *Options) { o.Explain = fakeExplain }
	reader := func(o *Options) {
		withExplain(o)
		o.TokenReader = func(r *http.Request) (string, bool) {
			return "ws-1", r.Header.Get("Authorization") == "Bearer scmt_reader"
		}
	}
	path := Prefix + ExplainPath
	runCases(t, []apiCase{
		{name: "explains", method: http.MethodPost, path: path, opts: withExplain,
			body:       `{"workspace":"ws-1","task":"t-1","profile":"p-1","user":"u-1","tool":"script.run","args":{"slug":"nightly"}}`,
			wantStatus: 200, wantBody: `"args":{"slug":"nightly"}`,
			check: func(t *testing.T, _ *fakeStore, rec *httptest.ResponseRecorder) {
				var out struct{ Decision gateway.Decision }
				if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Decision.ID != "d-1" {
					t.Errorf("reply %s: %v", rec.Body, err)
				}
			}},
		{name: "tool required", method: http.MethodPost, path: path, opts: withExplain, body: `{"workspace":"ws-1","task":"t-1"}`,
			wantStatus: 400, wantBody: "tool is required"},
		{name: "cc_server claims, no task", method: http.MethodPost, path: path, opts: withExplain,
			body: `{"surface":"ccserver","user":"u-1","kind":"agent","mode":"plan","workspace":"ws-1","ticket":"TCK-7","tool":"get_ticket"}`, wantStatus: 200},
		{name: "cc_server claims on supacloud", method: http.MethodPost, path: path, opts: withExplain,
			body: `{"workspace":"ws-1","task":"t-1","tool":"x","ticket":"TCK-7"}`, wantStatus: 400, wantBody: "ticket is not a field of a supacloud session"},
		{name: "unknown surface", method: http.MethodPost, path: path, opts: withExplain,
			body: `{"surface":"mail","user":"u-1","tool":"x"}`, wantStatus: 400, wantBody: "surface"},
		{name: "bad id", method: http.MethodPost, path: path, opts: withExplain, body: `{"workspace":"ws 1","task":"t-1","tool":"x"}`,
			wantStatus: 400, wantBody: "workspace"},
		{name: "bad user", method: http.MethodPost, path: path, opts: withExplain, body: `{"workspace":"ws-1","task":"t-1","tool":"x","user":"a b"}`,
			wantStatus: 400, wantBody: "user"},
		{name: "args not an object", method: http.MethodPost, path: path, opts: withExplain, body: `{"workspace":"ws-1","task":"t-1","tool":"x","args":[1]}`,
			wantStatus: 400, wantBody: "args must be a JSON object"},
		{name: "unknown field", method: http.MethodPost, path: path, opts: withExplain, body: `{"workspace":"ws-1","task":"t-1","tool":"x","mode":"y"}`,
			wantStatus: 400},
		{name: "unknown workspace", method: http.MethodPost, path: path, opts: withExplain, body: `{"workspace":"ws-9","task":"t-1","tool":"x"}`,
			wantStatus: 404, wantBody: "ws-9"},
		{name: "off without an explainer", method: http.MethodPost, path: path, body: `{"workspace":"ws-1","task":"t-1","tool":"x"}`,
			wantStatus: 404, wantBody: "explain is not available"},
		{name: "GET not allowed", method: http.MethodGet, path: path, opts: withExplain, wantStatus: 405},
		{name: "read-only token refused", method: http.MethodPost, path: path, opts: reader, header: hdr("Bearer scmt_reader"),
			body: `{"workspace":"ws-1","task":"t-1","tool":"x"}`, wantStatus: 403},
	})
}
