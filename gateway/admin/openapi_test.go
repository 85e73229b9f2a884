package admin

import (
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/mcpgate/mcpgate/gateway"
)

// openAPIModel parses OpenAPI with libopenapi, failing t on any error.
func openAPIModel(t *testing.T) (libopenapi.Document, *v3.Document) {
	t.Helper()
	doc, err := libopenapi.NewDocument(OpenAPI)
	if err != nil {
		t.Fatalf("openapi.yaml does not parse: %v", err)
	}
	if v := doc.GetSpecInfo().Version; v != "3.1.0" {
		t.Fatalf("openapi.yaml is version %q, want 3.1.0", v)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("openapi.yaml does not build (bad $ref, wrong types): %v", err)
	}
	return doc, &m.Model
}

func validationErrors(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  %s: %s (%s)", e.ValidationType, e.Message, e.Reason)
		for _, se := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n    %s: %s", se.FieldPath, se.Reason)
		}
	}
	return b.String()
}

// TestOpenAPIDocumentIsValid checks openapi.yaml against the OpenAPI 3.1
// schema.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc, model := openAPIModel(t)
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		t.Fatalf("openapi.yaml is not a valid OpenAPI 3.1 document:%s", validationErrors(verrs))
	}
	ids := map[string]string{}
	for path, item := range model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			where := strings.ToUpper(method) + " " + path
			if op.OperationId == "" {
				t.Errorf("%s has no operationId", where)
			} else if other, dup := ids[op.OperationId]; dup {
				t.Errorf("operationId %s is used by %s and %s", op.OperationId, other, where)
			}
			ids[op.OperationId] = where
			if op.Responses == nil || op.Responses.Default == nil {
				t.Errorf("%s documents no default (error) response", where)
			}
		}
	}
}

// documentedRoutes returns "METHOD path" for every operation of model.
func documentedRoutes(model *v3.Document) []string {
	var out []string
	for path, item := range model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().KeysFromOldest() {
			out = append(out, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(out)
	return out
}

// servedRoutes walks the router: "METHOD path" for every route with
// methods; a route without methods must be a path's 405 fallback.
func servedRoutes(t *testing.T) []string {
	t.Helper()
	h := NewHandler(newFakeStore(), Options{Token: adminToken}).(*handler)
	var out, fallbacks []string
	err := h.router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		path, err := route.GetPathTemplate()
		if err != nil {
			return err
		}
		methods, err := route.GetMethods()
		if err != nil {
			fallbacks = append(fallbacks, path)
			return nil
		}
		for _, m := range methods {
			out = append(out, m+" "+path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range fallbacks {
		if !slices.ContainsFunc(out, func(r string) bool { return strings.HasSuffix(r, " "+path) }) {
			t.Errorf("route %s has no methods and is no path's 405 fallback", path)
		}
	}
	slices.Sort(out)
	return out
}

// TestOpenAPIMatchesRouter: every route the router serves is documented,
// with the same methods, and every documented operation is served.
func TestOpenAPIMatchesRouter(t *testing.T) {
	_, model := openAPIModel(t)
	documented, served := documentedRoutes(model), servedRoutes(t)
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("served but not in openapi.yaml: %s", r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("in openapi.yaml but not served: %s", r)
		}
	}
	if len(served) < 30 {
		t.Errorf("router walk found only %d routes: %v", len(served), served)
	}
}

// exchange is one real request and the reply the handler gave it.
type exchange struct {
	method, path, body string
	status             int
	setup              func(*fakeStore)
	badRequest         bool   // the request breaks the schema on purpose: check only the reply
	policy             Policy // Options.Policy; nil: none
	noGates            bool   // Options.Gates nil
	broken             bool   // Options.Chain's verification names a problem
}

// TestOpenAPIDescribesReplies sends a request to every operation (and a
// few refusals) and validates request and reply against openapi.yaml
// with libopenapi-validator: path and query parameters, bodies, status
// codes and reply schemas (additionalProperties false, so an undocumented
// field fails too).
func TestOpenAPIDescribesReplies(t *testing.T) {
	doc, model := openAPIModel(t)
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	withTasks := func(s *fakeStore) {
		s.tasks[[2]string{"ws-1", "t-1"}] = gateway.Task{WorkspaceID: "ws-1", ID: "t-1", Status: "running", UpdatedAt: testNow}
		s.wsOver["ws-1"] = gateway.Permissions{"a.b": true}
		s.memberOver[[2]string{"ws-1", "u-1"}] = gateway.Permissions{"x.*": false}
		s.profileTasks = map[string][]string{"p-1": {"t-1"}}
		s.defaults["ws-1"] = "p-1"
	}
	cases := []exchange{
		{method: get, path: "/admin/v1/workspaces?limit=1", status: 200},
		{method: "PUT", path: wsPath, body: `{"name":"One","slug":"one","org_plan":"team"}`, status: 200},
		{method: get, path: wsPath, status: 200},
		{method: get, path: wsPath + "/members", status: 200},
		{method: "PUT", path: wsPath + "/members/u-2", body: `{"role":"viewer"}`, status: 200},
		{method: get, path: wsPath + "/members/u-1", status: 200},
		{method: del, path: wsPath + "/members/u-1", status: 204},
		{method: "PUT", path: wsPath + "/members/u-1/permission-overrides", body: `{"workspace.budget.view":true}`, status: 200},
		{method: get, path: wsPath + "/members/u-1/permission-overrides", status: 200, setup: withTasks},
		{method: del, path: wsPath + "/members/u-1/permission-overrides/x.*", status: 204, setup: withTasks},
		{method: get, path: wsPath + "/profiles", status: 200, setup: withTasks},
		{method: "PUT", path: wsPath + "/profiles/p-2", body: `{"name":"R","allowlist":["supacloud.read.*"],"script_allowlist":null}`, status: 200},
		{method: "PUT", path: wsPath + "/profiles/p-3", body: `{"name":"R","allowlist":[],"script_allowlist":["backup"]}`, status: 200},
		{method: get, path: wsPath + "/profiles/p-1", status: 200},
		{method: del, path: wsPath + "/profiles/p-1", status: 200, setup: withTasks},
		{method: "PUT", path: wsPath + "/default-profile", body: `{"profile_id":"p-1"}`, status: 200},
		{method: "PUT", path: wsPath + "/default-profile", body: `{"profile_id":null}`, status: 200},
		{method: get, path: wsPath + "/default-profile", status: 200, setup: withTasks},
		{method: get, path: wsPath + "/default-profile", status: 200},
		{method: "PUT", path: wsPath + "/permission-overrides", body: `{}`, status: 200},
		{method: get, path: wsPath + "/permission-overrides", status: 200, setup: withTasks},
		{method: del, path: wsPath + "/permission-overrides/a.b", status: 204, setup: withTasks},
		{method: get, path: wsPath + "/tasks?status=running&limit=1", status: 200, setup: withTasks},
		{method: "PUT", path: wsPath + "/tasks/t-2", body: `{"status":"completed"}`, status: 200},
		{method: get, path: wsPath + "/tasks/t-1", status: 200, setup: withTasks},
		{method: "POST", path: wsPath + "/api-tokens", body: `{"label":"ci","scopes":["mcp:read","management:read"]}`, status: 201},
		{method: get, path: wsPath + "/api-tokens", status: 200},
		{method: "PUT", path: wsPath + "/external-limits", body: `{"reads_per_tool_hourly":null,"ops_per_token_hourly":10}`, status: 200},
		{method: get, path: wsPath + "/external-limits", status: 200},
		{method: "PUT", path: wsPath + "/flow-rules", body: `{"enabled":true}`, status: 200},
		{method: get, path: wsPath + "/flow-rules", status: 200},
		{method: "PUT", path: wsPath + "/flow-rules", body: `{}`, status: 400, badRequest: true},
		{method: get, path: "/admin/v1/seat-types", status: 200},
		{method: "PUT", path: "/admin/v1/seat-types/sso", body: `{"enterprise_only":true,"permissions":{"sso.manage":true}}`, status: 200},
		{method: get, path: "/admin/v1/seat-types/standard", status: 200},
		{method: del, path: "/admin/v1/seat-types/standard", status: 204, setup: func(s *fakeStore) { clear(s.members) }},
		{method: get, path: "/admin/v1/org-plans", status: 200},
		{method: "PUT", path: "/admin/v1/org-plans/free", body: `{}`, status: 200},
		{method: get, path: "/admin/v1/org-plans/team", status: 200},
		{method: del, path: "/admin/v1/org-plans/team", status: 204, setup: func(s *fakeStore) { clear(s.workspaces) }},
		{method: get, path: "/admin/v1/api-tokens/0123456789abcdef", status: 200},
		{method: del, path: "/admin/v1/api-tokens/0123456789abcdef", status: 204},
		{method: get, path: "/admin/v1/audit-events?workspace_id=ws-1&limit=1", status: 200},
		{method: get, path: "/admin/v1/audit-events?workspace_id=ws-1", status: 200, setup: func(s *fakeStore) {
			s.events[0].TraceID = "4bf92f3577b34da6a3ce929d0e0e4736" // a call traced (docs/operations.md, "Traces")
		}},
		{method: get, path: "/admin/v1/audit-chain", status: 200},
		{method: get, path: "/admin/v1/audit-chain/verify", status: 200},
		{method: get, path: "/admin/v1/audit-chain/verify", status: 200, broken: true},
		{method: get, path: Prefix + OpenAPIPath, status: 200},
		{method: "POST", path: Prefix + ExplainPath, body: `{"workspace":"ws-1","task":"t-1","tool":"project.get","args":{"id":"pr-1"}}`, status: 200},
		{method: get, path: "/admin/v1/policy", status: 200, policy: &fakePolicy{dir: "/etc/mcpgate/policies"}},
		{method: "POST", path: "/admin/v1/policy/reload", status: 200, policy: &fakePolicy{dir: "/etc/mcpgate/policies"}},
		{method: "POST", path: "/admin/v1/policy/reload", status: 422, policy: &fakePolicy{dir: "/etc/mcpgate/policies", refuse: "policy: compile bundle: 1 error occurred: x.rego:3: rego_parse_error"}},
		{method: "POST", path: "/admin/v1/policy/reload", status: 409, policy: &fakePolicy{}},
		{method: get, path: "/admin/v1/approvals?status=pending&limit=10", status: 200},
		{method: get, path: "/admin/v1/approvals/stream", status: 200},
		{method: "POST", path: "/admin/v1/approvals/apr_1/approve", body: `{"decided_by":"alice","reason":"ok"}`, status: 200},
		{method: "POST", path: "/admin/v1/approvals/apr_1/reject", body: `{"decided_by":"bob"}`, status: 200},
		{method: "POST", path: "/admin/v1/approvals/apr_1/approve", body: `{"reason":"ok"}`, status: 400, badRequest: true},
		{method: get, path: wsPath + "/gates?status=waiting", status: 200},
		{method: "POST", path: wsPath + "/gates/apr-tool/decision", body: `{"decision":"approve","note":"ok","decided_by":"alice"}`, status: 200},
		{method: "POST", path: wsPath + "/gates/apr-done/decision", body: `{"decision":"approve","decided_by":"alice"}`, status: 409},
		{method: "POST", path: wsPath + "/gates/apr-q/decision", body: `{"decision":"approve","decided_by":"alice"}`, status: 400},
		{method: get, path: wsPath + "/gates", status: 501, noGates: true},
		{method: get, path: "/admin/v1/upstreams", status: 200},
		{method: get, path: "/admin/v1/upstreams/forge/tools", status: 200},
		{method: get, path: "/admin/v1/upstreams/gone/tools", status: 404},
		{method: "POST", path: "/admin/v1/upstreams/forge/tools/issues.list/approve", body: `{"decided_by":"ada"}`, status: 200},
		{method: "POST", path: "/admin/v1/upstreams/forge/tools/issues.list/reject", body: `{"decided_by":"bob"}`, status: 200},
		{method: "POST", path: "/admin/v1/upstreams/forge/tools/issues.list/approve", body: `{}`, status: 400, badRequest: true},
		// Refusals answer the documented error shape.
		{method: get, path: "/admin/v1/workspaces/ws-9", status: 404},
		{method: del, path: "/admin/v1/seat-types/standard", status: 409},
		{method: "PUT", path: wsPath + "/members/u-1", body: `{"role":"root"}`, status: 400, badRequest: true},
		{method: get, path: wsPath + "/tasks?status=paused", status: 400, badRequest: true},
		{method: "POST", path: Prefix + ExplainPath, body: `{"workspace":"ws-1","task":"t-1"}`, status: 400, badRequest: true},
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			store := newFakeStore()
			if tc.setup != nil {
				tc.setup(store)
			}
			opts := Options{Token: adminToken, Now: func() time.Time { return testNow }, Policy: tc.policy, Explain: fakeExplain, Approvals: newFakeApprovals(), Gates: newFakeGates(), Upstreams: fakeUpstreams{},
				Chain: testChain(tc.broken)}
			if tc.noGates {
				opts.Gates = nil
			}
			h := NewHandler(store, opts)
			rec := serve(h, tc.method, tc.path, tc.body, nil)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+adminToken)
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			var ok bool
			var verrs []*verrors.ValidationError
			if tc.badRequest {
				ok, verrs = v.ValidateHttpResponse(req, rec.Result())
			} else {
				ok, verrs = v.ValidateHttpRequestResponse(req, rec.Result())
			}
			if !ok {
				t.Errorf("reply %d %s does not match openapi.yaml:%s", rec.Code, rec.Body, validationErrors(verrs))
			}
		})
		if route := matchedRoute(t, tc.method, tc.path); route != "" {
			covered[route] = true
		}
	}
	for _, r := range documentedRoutes(model) {
		if !covered[r] {
			t.Errorf("no request of this test reaches %s; add one", r)
		}
	}
}

// matchedRoute returns "METHOD template" of the route that serves method
// and path.
func matchedRoute(t *testing.T, method, path string) string {
	t.Helper()
	h := NewHandler(newFakeStore(), Options{Token: adminToken}).(*handler)
	var m mux.RouteMatch
	if !h.router.Match(httptest.NewRequest(method, path, nil), &m) || m.Route == nil {
		return ""
	}
	tpl, _ := m.Route.GetPathTemplate()
	return method + " " + tpl
}

// TestOpenAPIWorkspaceAdminOperations: the operations whose security
// lists workspaceAdmin are exactly WorkspaceAdminRoutes, the routes the
// handler lets a workspace owner or admin use.
func TestOpenAPIWorkspaceAdminOperations(t *testing.T) {
	_, model := openAPIModel(t)
	var documented, served []string
	for path, item := range model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			for _, req := range op.Security {
				if _, ok := req.Requirements.Get("workspaceAdmin"); ok {
					documented = append(documented, strings.ToUpper(method)+" "+path)
				}
			}
		}
	}
	for path, methods := range WorkspaceAdminRoutes {
		for _, m := range methods {
			served = append(served, m+" "+path)
		}
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("operations documented for workspaceAdmin:\n  %v\nroutes the handler allows:\n  %v", documented, served)
	}
}
