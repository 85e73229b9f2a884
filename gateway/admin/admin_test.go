package admin

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcpgate/mcpgate/gateway"
)

const adminToken = "test-admin-token-0123456789abcdef"

var testNow = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)

const wsPath = "/admin/v1/workspaces/ws-1"

// apiCase is one request against a fresh handler and fake store.
type apiCase struct {
	name       string
	method     string  // default PUT
	path       string  //
	body       string  //
	header     *string // Authorization; nil sends the admin token
	opts       func(*Options)
	setup      func(*fakeStore)
	wantStatus int
	wantBody   string   // substring of the reply body
	wantCalls  []string // store methods called, in order (nil: none)
	wantChange []string // OnChange arguments (nil: none)
	check      func(t *testing.T, s *fakeStore, rec *httptest.ResponseRecorder)
}

func hdr(s string) *string { return &s }

func runCases(t *testing.T, cases []apiCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := newFakeStore()
			if tc.setup != nil {
				tc.setup(store)
			}
			var changes []string
			opts := Options{Token: adminToken, Now: func() time.Time { return testNow },
				OnChange: func(ws string) { changes = append(changes, ws) }}
			if tc.opts != nil {
				tc.opts(&opts)
			}
			rec := serve(NewHandler(store, opts), tc.method, tc.path, tc.body, tc.header)
			assertReply(t, rec, tc.wantStatus, tc.wantBody)
			if got := store.Calls(); !slices.Equal(got, tc.wantCalls) {
				t.Errorf("store calls = %v, want %v", got, tc.wantCalls)
			}
			if !slices.Equal(changes, tc.wantChange) {
				t.Errorf("OnChange calls = %q, want %q", changes, tc.wantChange)
			}
			if tc.check != nil {
				tc.check(t, store, rec)
			}
		})
	}
}

func serve(h http.Handler, method, path, body string, header *string) *httptest.ResponseRecorder {
	if method == "" {
		method = http.MethodPut
	}
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if header == nil {
		req.Header.Set("Authorization", "Bearer "+adminToken)
	} else if *header != "" {
		req.Header.Set("Authorization", *header)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// assertReply checks the status, the body substring, and that every error
// reply has the {"error":{"code","message"}} shape.
func assertReply(t *testing.T, rec *httptest.ResponseRecorder, status int, sub string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	if !strings.Contains(rec.Body.String(), sub) {
		t.Errorf("body = %s, want it to contain %q", rec.Body, sub)
	}
	if rec.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", rec.Header().Get("Cache-Control"))
	}
	if status < 400 {
		return
	}
	var b errorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil || b.Error.Code == "" || b.Error.Message == "" {
		t.Errorf("error body %s is not {\"error\":{\"code\",\"message\"}} (%v)", rec.Body, err)
	}
}

func TestAuthAndRouting(t *testing.T) {
	ok := `{"name":"One","slug":"one"}`
	runCases(t, []apiCase{
		{name: "admin off", path: wsPath, body: ok, opts: func(o *Options) { o.Token = "" },
			wantStatus: 404, wantBody: "admin API is off; set MCPGATE_ADMIN_TOKEN"},
		{name: "admin off refuses an empty bearer", path: wsPath, body: ok, header: hdr("Bearer "), opts: func(o *Options) { o.Token = "" },
			wantStatus: 404, wantBody: "admin API is off"},
		{name: "missing header", path: wsPath, body: ok, header: hdr(""), wantStatus: 401, wantBody: "missing Authorization: Bearer header",
			check: wantAuthenticate},
		{name: "wrong token", path: wsPath, body: ok, header: hdr("Bearer nope"), wantStatus: 401, wantBody: "admin token not accepted",
			check: wantAuthenticate},
		{name: "prefix of the token", path: wsPath, body: ok, header: hdr("Bearer " + adminToken[:10]), wantStatus: 401, check: wantAuthenticate},
		{name: "Basic scheme", path: wsPath, body: ok, header: hdr("Basic " + adminToken), wantStatus: 401, check: wantAuthenticate},
		{name: "unknown route needs auth first", path: "/admin/v1/nothing", header: hdr(""), wantStatus: 401, check: wantAuthenticate},
		{name: "lower-case scheme accepted", path: wsPath, body: ok, header: hdr("bearer " + adminToken), wantStatus: 200,
			wantCalls: []string{"PutWorkspace"}, wantChange: []string{"ws-1"}},
		{name: "unknown route", path: "/admin/v1/nothing", wantStatus: 404, wantBody: "no admin API route PUT"},
		{name: "unknown route points to the OpenAPI document", path: "/admin/v1/nothing", wantStatus: 404, wantBody: "see the routes in /admin/v1/openapi.yaml"},
		{name: "wrong method", method: http.MethodPost, path: wsPath, body: ok, wantStatus: 405, wantBody: "use GET, PUT",
			check: func(t *testing.T, _ *fakeStore, rec *httptest.ResponseRecorder) {
				if rec.Header().Get("Allow") != "GET, PUT" {
					t.Errorf("Allow = %q, want \"GET, PUT\"", rec.Header().Get("Allow"))
				}
			}},
		{name: "Allow lists both methods", method: http.MethodDelete, path: wsPath + "/api-tokens", wantStatus: 405,
			check: func(t *testing.T, _ *fakeStore, rec *httptest.ResponseRecorder) {
				if rec.Header().Get("Allow") != "GET, POST" {
					t.Errorf("Allow = %q, want \"GET, POST\"", rec.Header().Get("Allow"))
				}
			}},
	})
}

func wantAuthenticate(t *testing.T, _ *fakeStore, rec *httptest.ResponseRecorder) {
	t.Helper()
	if got := rec.Header().Get("WWW-Authenticate"); got != `Bearer realm="mcpgate-admin"` {
		t.Errorf("WWW-Authenticate = %q", got)
	}
}

func TestBodyDecoding(t *testing.T) {
	runCases(t, []apiCase{
		{name: "unknown field named", path: wsPath, body: `{"name":"One","slug":"one","plan":"x"}`, wantStatus: 400,
			wantBody: `unknown field \"plan\"; accepted fields: name, slug, org_plan`},
		{name: "array body", path: wsPath, body: `[{"name":"One"}]`, wantStatus: 400, wantBody: "must be a JSON object"},
		{name: "null body", path: wsPath + "/permission-overrides", body: `null`, wantStatus: 400, wantBody: "must be a JSON object"},
		{name: "empty body", path: wsPath, body: ``, wantStatus: 400, wantBody: "request body is empty"},
		{name: "invalid JSON", path: wsPath, body: `{"name":}`, wantStatus: 400, wantBody: "not valid JSON"},
		{name: "truncated JSON", path: wsPath, body: `{"name":"One"`, wantStatus: 400, wantBody: "ends in the middle"},
		{name: "wrong type", path: wsPath, body: `{"name":5,"slug":"one"}`, wantStatus: 400, wantBody: `field \"name\" must be a string, not number`},
		{name: "two values", path: wsPath, body: `{"name":"One","slug":"one"} {}`, wantStatus: 400, wantBody: "more than one JSON value"},
		{name: "too large", path: wsPath, body: `{"name":"` + strings.Repeat("x", 200) + `","slug":"one"}`,
			opts: func(o *Options) { o.MaxBodyBytes = 100 }, wantStatus: 400, wantBody: "larger than 100 bytes"},
	})
}

func TestStoreErrors(t *testing.T) {
	core, logs := observer.New(zap.ErrorLevel)
	cases := []apiCase{
		{name: "internal error is generic", path: wsPath, body: `{"name":"One","slug":"one"}`,
			setup:      func(s *fakeStore) { s.fail = errors.New("pq: connection refused to 10.0.0.5") },
			opts:       func(o *Options) { o.Logger = zap.New(core) },
			wantStatus: 500, wantBody: "internal error; the gateway logged the cause", wantCalls: []string{"PutWorkspace"},
			check: func(t *testing.T, _ *fakeStore, rec *httptest.ResponseRecorder) {
				if strings.Contains(rec.Body.String(), "10.0.0.5") {
					t.Errorf("reply leaks the cause: %s", rec.Body)
				}
				if logs.FilterMessage("admin request failed").Len() != 1 {
					t.Errorf("cause not logged once: %v", logs.All())
				}
			}},
		{name: "unavailable", path: wsPath, body: `{"name":"One","slug":"one"}`,
			setup:      func(s *fakeStore) { s.fail = gateway.Wrap(gateway.EUnavailable, errors.New("timeout"), "store down") },
			wantStatus: 503, wantBody: "internal error", wantCalls: []string{"PutWorkspace"}},
		{name: "conflict", path: wsPath, body: `{"name":"One","slug":"one"}`,
			setup: func(s *fakeStore) {
				s.fail = gateway.Errorf(gateway.EConflict, "slug \"one\" is taken; choose another")
			},
			wantStatus: 409, wantBody: `slug \"one\" is taken`, wantCalls: []string{"PutWorkspace"}},
		{name: "store invalid", path: wsPath, body: `{"name":"One","slug":"one"}`,
			setup:      func(s *fakeStore) { s.fail = gateway.Errorf(gateway.EInvalid, "org plan too long") },
			wantStatus: 400, wantBody: "org plan too long", wantCalls: []string{"PutWorkspace"}},
	}
	runCases(t, cases)
}

func TestWorkspaces(t *testing.T) {
	runCases(t, []apiCase{
		{name: "create", path: "/admin/v1/workspaces/ws-2", body: `{"name":"Two","slug":"two","org_plan":"team"}`, wantStatus: 200,
			wantBody: `"org_plan":"team"`, wantCalls: []string{"PutWorkspace"}, wantChange: []string{"ws-2"},
			check: func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
				want := gateway.Workspace{ID: "ws-2", Name: "Two", Slug: "two", OrgPlan: "team", CreatedAt: testNow}
				if s.workspaces["ws-2"] != want {
					t.Errorf("stored %+v, want %+v", s.workspaces["ws-2"], want)
				}
			}},
		{name: "replace without plan", path: wsPath, body: `{"name":"Renamed","slug":"one"}`, wantStatus: 200,
			wantCalls: []string{"PutWorkspace"}, wantChange: []string{"ws-1"},
			check: func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
				if w := s.workspaces["ws-1"]; w.Name != "Renamed" || w.OrgPlan != "" {
					t.Errorf("stored %+v", w)
				}
			}},
		{name: "missing name", path: wsPath, body: `{"slug":"one"}`, wantStatus: 400, wantBody: `field \"name\" is required`},
		{name: "blank name", path: wsPath, body: `{"name":"  ","slug":"one"}`, wantStatus: 400, wantBody: `field \"name\" is required`},
		{name: "control characters in name", path: wsPath, body: `{"name":"a\u0000b","slug":"one"}`, wantStatus: 400, wantBody: "control characters"},
		{name: "name too long", path: wsPath, body: `{"name":"` + strings.Repeat("n", 201) + `","slug":"one"}`, wantStatus: 400, wantBody: "longer than 200"},
		{name: "missing slug", path: wsPath, body: `{"name":"One"}`, wantStatus: 400, wantBody: `field \"slug\"`},
		{name: "bad slug", path: wsPath, body: `{"name":"One","slug":"One Two"}`, wantStatus: 400, wantBody: `field \"slug\" is \"One Two\"`},
		{name: "bad org plan", path: wsPath, body: `{"name":"One","slug":"one","org_plan":"a b"}`, wantStatus: 400, wantBody: `org_plan \"a b\" is not valid`},
		{name: "bad path id", path: "/admin/v1/workspaces/-ws", body: `{"name":"One","slug":"one"}`, wantStatus: 400, wantBody: `workspace id \"-ws\" is not valid`},
		{name: "path id too long", path: "/admin/v1/workspaces/" + strings.Repeat("w", 129), body: `{"name":"One","slug":"one"}`, wantStatus: 400, wantBody: "workspace id"},
	})
}

func TestMembers(t *testing.T) {
	p := wsPath + "/members/u-2"
	runCases(t, []apiCase{
		{name: "create", path: p, body: `{"role":"admin","seat_type":"standard"}`, wantStatus: 200, wantBody: `"role":"admin"`,
			wantCalls: []string{"PutMember"}, wantChange: []string{"ws-1"},
			check: func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
				want := gateway.Member{WorkspaceID: "ws-1", UserID: "u-2", Role: "admin", SeatType: "standard"}
				if got := s.members[[2]string{"ws-1", "u-2"}]; got != want {
					t.Errorf("stored %+v, want %+v", got, want)
				}
			}},
		{name: "without seat type", path: p, body: `{"role":"viewer"}`, wantStatus: 200, wantCalls: []string{"PutMember"}, wantChange: []string{"ws-1"}},
		{name: "bad role", path: p, body: `{"role":"root"}`, wantStatus: 400, wantBody: `field \"role\" is \"root\"; use one of owner, admin, member, viewer`},
		{name: "missing role", path: p, body: `{}`, wantStatus: 400, wantBody: `field \"role\" is required`},
		{name: "bad seat type", path: p, body: `{"role":"member","seat_type":"a/b"}`, wantStatus: 400, wantBody: "seat_type"},
		{name: "bad user id", path: wsPath + "/members/u%20x", body: `{"role":"member"}`, wantStatus: 400, wantBody: `user id \"u x\"`},
		{name: "unknown workspace", path: "/admin/v1/workspaces/ws-9/members/u-1", body: `{"role":"member"}`, wantStatus: 404,
			wantBody: `workspace \"ws-9\" not found`, wantCalls: []string{"PutMember"}},
		{name: "unknown seat type", path: p, body: `{"role":"member","seat_type":"gold"}`, wantStatus: 404,
			wantBody: `seat type \"gold\" not found`, wantCalls: []string{"PutMember"}},
	})
}

func TestProfiles(t *testing.T) {
	p := wsPath + "/profiles/p-2"
	stored := func(want gateway.Profile) func(*testing.T, *fakeStore, *httptest.ResponseRecorder) {
		return func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
			got := s.profiles[[2]string{"ws-1", "p-2"}]
			if got.Name != want.Name || !slices.Equal(got.Allowlist, want.Allowlist) ||
				(got.ScriptAllowlist == nil) != (want.ScriptAllowlist == nil) || !slices.Equal(got.ScriptAllowlist, want.ScriptAllowlist) {
				t.Errorf("stored %+v, want %+v", got, want)
			}
		}
	}
	rejectDeploy := func(o *Options) {
		o.ValidateGrant = func(e string) error {
			if e == "supacloud.nothing" {
				return errors.New("grants no tool; use an entry such as supacloud.read.*")
			}
			return nil
		}
	}
	ok := []string{"PutProfile"}
	ch := []string{"ws-1"}
	runCases(t, []apiCase{
		{name: "script_allowlist absent means no restriction", path: p, body: `{"name":"Reader","allowlist":["supacloud.read.*"]}`,
			wantStatus: 200, wantBody: `"script_allowlist":null`, wantCalls: ok, wantChange: ch,
			check: stored(gateway.Profile{Name: "Reader", Allowlist: []string{"supacloud.read.*"}})},
		{name: "script_allowlist null means no restriction", path: p, body: `{"name":"R","allowlist":[],"script_allowlist":null}`,
			wantStatus: 200, wantCalls: ok, wantChange: ch, check: stored(gateway.Profile{Name: "R", Allowlist: []string{}})},
		{name: "script_allowlist empty allows no script", path: p, body: `{"name":"R","allowlist":["supacloud.script.run"],"script_allowlist":[]}`,
			wantStatus: 200, wantBody: `"script_allowlist":[]`, wantCalls: ok, wantChange: ch,
			check: stored(gateway.Profile{Name: "R", Allowlist: []string{"supacloud.script.run"}, ScriptAllowlist: []string{}})},
		{name: "script_allowlist entries", path: p, body: `{"name":"R","allowlist":["supacloud.full"],"script_allowlist":["nightly-report"]}`,
			wantStatus: 200, wantCalls: ok, wantChange: ch,
			check: stored(gateway.Profile{Name: "R", Allowlist: []string{"supacloud.full"}, ScriptAllowlist: []string{"nightly-report"}})},
		{name: "grant checker accepts", path: p, body: `{"name":"R","allowlist":["supacloud.ops.*"]}`, opts: rejectDeploy,
			wantStatus: 200, wantCalls: ok, wantChange: ch},
		{name: "grant checker rejects", path: p, body: `{"name":"R","allowlist":["supacloud.read.*","supacloud.nothing"]}`, opts: rejectDeploy,
			wantStatus: 400, wantBody: `entry \"supacloud.nothing\": grants no tool`},
		{name: "allowlist missing", path: p, body: `{"name":"R"}`, wantStatus: 400, wantBody: `field \"allowlist\" is required`},
		{name: "allowlist null", path: p, body: `{"name":"R","allowlist":null}`, wantStatus: 400, wantBody: `field \"allowlist\" is required`},
		{name: "allowlist not an array", path: p, body: `{"name":"R","allowlist":"supacloud.full"}`, wantStatus: 400, wantBody: `field \"allowlist\" must be an array`},
		{name: "empty allowlist entry", path: p, body: `{"name":"R","allowlist":["supacloud.read.*",""]}`, wantStatus: 400, wantBody: "entry 1"},
		{name: "allowlist entry with space", path: p, body: `{"name":"R","allowlist":["supacloud read"]}`, wantStatus: 400, wantBody: "without spaces"},
		{name: "non-string allowlist entry", path: p, body: `{"name":"R","allowlist":[1]}`, wantStatus: 400, wantBody: "must be a string"},
		{name: "empty script entry", path: p, body: `{"name":"R","allowlist":[],"script_allowlist":[""]}`, wantStatus: 400, wantBody: "script_allowlist"},
		{name: "missing name", path: p, body: `{"allowlist":[]}`, wantStatus: 400, wantBody: `field \"name\" is required`},
		{name: "bad profile id", path: wsPath + "/profiles/p*", body: `{"name":"R","allowlist":[]}`, wantStatus: 400, wantBody: "profile id"},
		{name: "unknown workspace", path: "/admin/v1/workspaces/ws-9/profiles/p-2", body: `{"name":"R","allowlist":[]}`,
			wantStatus: 404, wantCalls: ok},
	})
}

func TestDefaultProfile(t *testing.T) {
	p := wsPath + "/default-profile"
	runCases(t, []apiCase{
		{name: "set", path: p, body: `{"profile_id":"p-1"}`, wantStatus: 200, wantBody: `"profile_id":"p-1"`,
			wantCalls: []string{"SetDefaultProfile"}, wantChange: []string{"ws-1"},
			check: func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
				if s.defaults["ws-1"] != "p-1" {
					t.Errorf("default = %q", s.defaults["ws-1"])
				}
			}},
		{name: "clear with null", path: p, body: `{"profile_id":null}`, wantStatus: 200, wantBody: `"profile_id":null`,
			setup:     func(s *fakeStore) { s.defaults["ws-1"] = "p-1" },
			wantCalls: []string{"SetDefaultProfile"}, wantChange: []string{"ws-1"},
			check: func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
				if _, ok := s.defaults["ws-1"]; ok {
					t.Error("default not cleared")
				}
			}},
		{name: "absent", path: p, body: `{}`, wantStatus: 400, wantBody: "or null to clear the default"},
		{name: "not a string", path: p, body: `{"profile_id":7}`, wantStatus: 400, wantBody: `field \"profile_id\" must be a string`},
		{name: "bad id", path: p, body: `{"profile_id":""}`, wantStatus: 400, wantBody: `profile_id \"\" is not valid`},
		{name: "unknown profile", path: p, body: `{"profile_id":"p-9"}`, wantStatus: 404, wantBody: `profile \"p-9\" not found`,
			wantCalls: []string{"SetDefaultProfile"}},
	})
}

func TestPermissionOverrides(t *testing.T) {
	wp := wsPath + "/permission-overrides"
	mp := wsPath + "/members/u-1/permission-overrides"
	runCases(t, []apiCase{
		{name: "workspace overrides", path: wp, body: `{"workspace.budget.view":false,"tools.*":true}`, wantStatus: 200,
			wantCalls: []string{"PutWorkspaceOverrides"}, wantChange: []string{"ws-1"},
			check: func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
				if got := s.wsOver["ws-1"]; len(got) != 2 || got["workspace.budget.view"] || !got["tools.*"] {
					t.Errorf("stored %v", got)
				}
			}},
		{name: "workspace overrides cleared", path: wp, body: `{}`, wantStatus: 200, wantBody: "{}",
			wantCalls: []string{"PutWorkspaceOverrides"}, wantChange: []string{"ws-1"}},
		{name: "upper-case key", path: wp, body: `{"Workspace.View":true}`, wantStatus: 400, wantBody: `permission key \"Workspace.View\" is not a permission key`},
		{name: "empty segment", path: wp, body: `{"workspace..view":true}`, wantStatus: 400, wantBody: "not a permission key"},
		{name: "non-bool value", path: wp, body: `{"workspace.view":"yes"}`, wantStatus: 400, wantBody: "must be true or false, not string"},
		{name: "unknown workspace", path: "/admin/v1/workspaces/ws-9/permission-overrides", body: `{"a":true}`, wantStatus: 404,
			wantCalls: []string{"PutWorkspaceOverrides"}},
		{name: "member overrides", path: mp, body: `{"workspace.budget.view":true}`, wantStatus: 200,
			wantCalls: []string{"PutMemberOverrides"}, wantChange: []string{"ws-1"},
			check: func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
				if !s.memberOver[[2]string{"ws-1", "u-1"}]["workspace.budget.view"] {
					t.Errorf("stored %v", s.memberOver)
				}
			}},
		{name: "member overrides bad key", path: mp, body: `{"a b":true}`, wantStatus: 400, wantBody: "not a permission key"},
		{name: "unknown member", path: wsPath + "/members/u-9/permission-overrides", body: `{"a":true}`, wantStatus: 404,
			wantBody: `member \"u-9\" not found`, wantCalls: []string{"PutMemberOverrides"}},
	})
}

func TestSeatTypesAndOrgPlans(t *testing.T) {
	runCases(t, []apiCase{
		{name: "seat type", path: "/admin/v1/seat-types/sso-admin", body: `{"enterprise_only":true,"permissions":{"sso.manage":true}}`,
			wantStatus: 200, wantCalls: []string{"PutSeatType"}, wantChange: []string{""},
			check: func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
				if st := s.seatTypes["sso-admin"]; !st.EnterpriseOnly || !st.Permissions["sso.manage"] {
					t.Errorf("stored %+v", st)
				}
			}},
		{name: "seat type without permissions", path: "/admin/v1/seat-types/basic", body: `{}`, wantStatus: 200,
			wantBody: `"permissions":{}`, wantCalls: []string{"PutSeatType"}, wantChange: []string{""}},
		{name: "seat type bad flag", path: "/admin/v1/seat-types/basic", body: `{"enterprise_only":"yes"}`, wantStatus: 400,
			wantBody: `field \"enterprise_only\" must be true or false`},
		{name: "seat type bad key", path: "/admin/v1/seat-types/basic", body: `{"permissions":{"A":true}}`, wantStatus: 400, wantBody: "permissions key"},
		{name: "seat type bad name", path: "/admin/v1/seat-types/.x", body: `{}`, wantStatus: 400, wantBody: `name \".x\" is not valid`},
		{name: "org plan", path: "/admin/v1/org-plans/enterprise", body: `{"permissions":{"workspace.budget.view":true}}`,
			wantStatus: 200, wantCalls: []string{"PutOrgPlan"}, wantChange: []string{""},
			check: func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
				if !s.orgPlans["enterprise"].Permissions["workspace.budget.view"] {
					t.Errorf("stored %+v", s.orgPlans["enterprise"])
				}
			}},
		{name: "org plan bad key", path: "/admin/v1/org-plans/free", body: `{"permissions":{"x.":true}}`, wantStatus: 400, wantBody: "not a permission key"},
		{name: "org plan unknown field", path: "/admin/v1/org-plans/free", body: `{"perms":{}}`, wantStatus: 400, wantBody: "accepted fields: permissions"},
	})
}

func TestTasks(t *testing.T) {
	p := wsPath + "/tasks/t-1"
	runCases(t, []apiCase{
		{name: "running", path: p, body: `{"status":"running"}`, wantStatus: 200, wantCalls: []string{"PutTask"}, wantChange: []string{"ws-1"},
			check: func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
				want := gateway.Task{WorkspaceID: "ws-1", ID: "t-1", Status: "running", UpdatedAt: testNow}
				if got := s.tasks[[2]string{"ws-1", "t-1"}]; got != want {
					t.Errorf("stored %+v, want %+v", got, want)
				}
			}},
		{name: "cancelled", path: p, body: `{"status":"cancelled"}`, wantStatus: 200, wantCalls: []string{"PutTask"}, wantChange: []string{"ws-1"}},
		{name: "bad status", path: p, body: `{"status":"done"}`, wantStatus: 400, wantBody: "running, completed, failed, cancelled"},
		{name: "missing status", path: p, body: `{}`, wantStatus: 400, wantBody: `field \"status\" is required`},
		{name: "bad task id", path: wsPath + "/tasks/t%201", body: `{"status":"running"}`, wantStatus: 400, wantBody: "task id"},
		{name: "unknown workspace", path: "/admin/v1/workspaces/ws-9/tasks/t-1", body: `{"status":"running"}`, wantStatus: 404, wantCalls: []string{"PutTask"}},
	})
}

func TestAPITokens(t *testing.T) {
	p := wsPath + "/api-tokens"
	runCases(t, []apiCase{
		{name: "create", method: http.MethodPost, path: p, body: `{"label":"scheduler","scopes":["mcp:read","mcp:ops","mcp:read"]}`,
			wantStatus: 201, wantBody: `"token":"scmt_`, wantCalls: []string{"CreateAPIToken"}, check: checkCreatedToken},
		{name: "create unknown scope", method: http.MethodPost, path: p, body: `{"label":"x","scopes":["mcp:deploy"]}`,
			wantStatus: 400, wantBody: `scope \"mcp:deploy\" is unknown; use mcp:read, mcp:ops, management:read`},
		{name: "create no scopes", method: http.MethodPost, path: p, body: `{"label":"x","scopes":[]}`, wantStatus: 400, wantBody: `field \"scopes\" is required`},
		{name: "create missing label", method: http.MethodPost, path: p, body: `{"scopes":["mcp:read"]}`, wantStatus: 400, wantBody: `field \"label\" is required`},
		{name: "create unknown workspace", method: http.MethodPost, path: "/admin/v1/workspaces/ws-9/api-tokens",
			body: `{"label":"x","scopes":["mcp:read"]}`, wantStatus: 404, wantCalls: []string{"CreateAPIToken"}},
		{name: "list", method: http.MethodGet, path: p, wantStatus: 200, wantBody: `"fingerprint":"0123456789abcdef"`, wantCalls: []string{"ListAPITokens"},
			check: func(t *testing.T, _ *fakeStore, rec *httptest.ResponseRecorder) {
				if strings.Contains(rec.Body.String(), "secret-hash-value") {
					t.Errorf("listing leaks the hash: %s", rec.Body)
				}
			}},
		{name: "list empty is []", method: http.MethodGet, path: p, setup: func(s *fakeStore) { clear(s.tokens) },
			wantStatus: 200, wantBody: `{"tokens":[]}`, wantCalls: []string{"ListAPITokens"}},
		{name: "list unknown workspace", method: http.MethodGet, path: "/admin/v1/workspaces/ws-9/api-tokens", wantStatus: 404, wantCalls: []string{"ListAPITokens"}},
		{name: "revoke", method: http.MethodDelete, path: "/admin/v1/api-tokens/0123456789abcdef", wantStatus: 204, wantCalls: []string{"RevokeAPIToken"},
			check: func(t *testing.T, s *fakeStore, rec *httptest.ResponseRecorder) {
				if s.tokens["0123456789abcdef"].Status != TokenRevoked || rec.Body.Len() != 0 {
					t.Errorf("status %q, body %q", s.tokens["0123456789abcdef"].Status, rec.Body)
				}
			}},
		{name: "revoke unknown", method: http.MethodDelete, path: "/admin/v1/api-tokens/ffffffffffffffff", wantStatus: 404, wantCalls: []string{"RevokeAPIToken"}},
		{name: "revoke bad fingerprint", method: http.MethodDelete, path: "/admin/v1/api-tokens/scmt_abc", wantStatus: 400, wantBody: "16 lower-case hex"},
		{name: "read one", method: http.MethodGet, path: "/admin/v1/api-tokens/0123456789abcdef", wantStatus: 200,
			wantBody: `"fingerprint":"0123456789abcdef"`, wantCalls: []string{"APIToken"},
			check: func(t *testing.T, _ *fakeStore, rec *httptest.ResponseRecorder) {
				if strings.Contains(rec.Body.String(), "secret-hash-value") || strings.Contains(rec.Body.String(), "hash") {
					t.Errorf("reading a token leaks its hash: %s", rec.Body)
				}
			}},
		{name: "read unknown", method: http.MethodGet, path: "/admin/v1/api-tokens/ffffffffffffffff", wantStatus: 404, wantCalls: []string{"APIToken"}},
		{name: "read bad fingerprint", method: http.MethodGet, path: "/admin/v1/api-tokens/scmt_abc", wantStatus: 400, wantBody: "16 lower-case hex"},
	})
}

// checkCreatedToken verifies the one-time value, its fingerprint, and that
// the store got only the hash.
func checkCreatedToken(t *testing.T, s *fakeStore, rec *httptest.ResponseRecorder) {
	t.Helper()
	var out struct{ Token, Fingerprint string }
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	stored, ok := s.tokens[out.Fingerprint]
	switch {
	case !ok:
		t.Fatalf("no stored token with fingerprint %q", out.Fingerprint)
	case out.Fingerprint != Fingerprint(out.Token) || stored.Hash != HashToken(out.Token):
		t.Errorf("fingerprint/hash do not match the value")
	case stored.Hash == out.Token || strings.Contains(stored.Label+stored.Hash, out.Token):
		t.Errorf("store received the token value")
	case !slices.Equal(stored.Scopes, []string{"mcp:read", "mcp:ops"}) || stored.Status != TokenActive || !stored.CreatedAt.Equal(testNow):
		t.Errorf("stored %+v", stored)
	}
}

func TestExternalLimits(t *testing.T) {
	p := wsPath + "/external-limits"
	limits := func(reads, ops *int) func(*testing.T, *fakeStore, *httptest.ResponseRecorder) {
		return func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
			got := s.limits["ws-1"]
			if !ptrEqual(got.ReadsPerToolHourly, reads) || !ptrEqual(got.OpsPerTokenHourly, ops) {
				t.Errorf("stored %+v", got)
			}
		}
	}
	n := func(v int) *int { return &v }
	ok := []string{"PutExternalLimits"}
	runCases(t, []apiCase{
		{name: "both", path: p, body: `{"reads_per_tool_hourly":200,"ops_per_token_hourly":60}`, wantStatus: 200,
			wantCalls: ok, wantChange: []string{"ws-1"}, check: limits(n(200), n(60))},
		{name: "null keeps default", path: p, body: `{"reads_per_tool_hourly":null,"ops_per_token_hourly":10}`, wantStatus: 200,
			wantCalls: ok, wantChange: []string{"ws-1"}, check: limits(nil, n(10))},
		{name: "absent keeps default", path: p, body: `{}`, wantStatus: 200, wantCalls: ok, wantChange: []string{"ws-1"}, check: limits(nil, nil)},
		{name: "zero", path: p, body: `{"reads_per_tool_hourly":0}`, wantStatus: 400, wantBody: "from 1 to 1000000"},
		{name: "negative", path: p, body: `{"ops_per_token_hourly":-5}`, wantStatus: 400, wantBody: `field \"ops_per_token_hourly\" is -5`},
		{name: "too big", path: p, body: `{"ops_per_token_hourly":1000001}`, wantStatus: 400, wantBody: "from 1 to 1000000"},
		{name: "fraction", path: p, body: `{"ops_per_token_hourly":1.5}`, wantStatus: 400, wantBody: "must be an integer"},
		{name: "string", path: p, body: `{"ops_per_token_hourly":"10"}`, wantStatus: 400, wantBody: "must be an integer"},
		{name: "unknown workspace", path: "/admin/v1/workspaces/ws-9/external-limits", body: `{}`, wantStatus: 404, wantCalls: ok},
	})
}

// TestFlowRules: PUT /workspaces/{ws}/flow-rules switches the shipped
// flow rule set of the workspace on and off through the store, announces
// the change (so cached callers are dropped), and refuses a body without
// a boolean "enabled", an unknown workspace, and every caller but the
// admin token.
func TestFlowRules(t *testing.T) {
	p := wsPath + "/flow-rules"
	stored := func(want bool) func(*testing.T, *fakeStore, *httptest.ResponseRecorder) {
		return func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
			if got := s.workspaces["ws-1"].FlowRules; got != want {
				t.Errorf("stored flow rules %v, want %v", got, want)
			}
		}
	}
	on := func(s *fakeStore) { w := s.workspaces["ws-1"]; w.FlowRules = true; s.workspaces["ws-1"] = w }
	ok := []string{"SetWorkspaceFlowRules"}
	reader := func(o *Options) {
		o.TokenReader = func(r *http.Request) (string, bool) {
			return "ws-1", r.Header.Get("Authorization") == "Bearer scmt_reader"
		}
	}
	wsAdmin := func(o *Options) {
		o.WorkspaceAdmin = func(r *http.Request) (string, string, bool) {
			return "ws-1", "u-1", r.Header.Get("Authorization") == "Bearer jwt-u-1"
		}
	}
	ownerOfWS1 := func(s *fakeStore) {
		s.members[[2]string{"ws-1", "u-1"}] = gateway.Member{WorkspaceID: "ws-1", UserID: "u-1", Role: "owner", SeatType: "standard"}
	}
	runCases(t, []apiCase{
		{name: "on", path: p, body: `{"enabled":true}`, wantStatus: 200, wantBody: `{"workspace_id":"ws-1","enabled":true}`,
			wantCalls: ok, wantChange: []string{"ws-1"}, check: stored(true)},
		{name: "off", path: p, body: `{"enabled":false}`, setup: on, wantStatus: 200, wantBody: `"enabled":false`,
			wantCalls: ok, wantChange: []string{"ws-1"}, check: stored(false)},
		{name: "get", method: get, path: p, setup: on, wantStatus: 200, wantBody: `{"workspace_id":"ws-1","enabled":true}`, wantCalls: []string{"Workspace"}},
		{name: "the workspace shows it", method: get, path: wsPath, setup: on, wantStatus: 200, wantBody: `"flow_rules":true`, wantCalls: []string{"Workspace"}},
		{name: "a replace of the workspace keeps it", path: wsPath, body: `{"name":"One","slug":"one"}`, setup: on, wantStatus: 200,
			wantBody: `"flow_rules":true`, wantCalls: []string{"PutWorkspace"}, wantChange: []string{"ws-1"}, check: stored(true)},
		{name: "missing enabled", path: p, body: `{}`, wantStatus: 400, wantBody: `field \"enabled\" is required`, check: stored(false)},
		{name: "not a bool", path: p, body: `{"enabled":"yes"}`, wantStatus: 400, wantBody: "must be true or false", check: stored(false)},
		{name: "null", path: p, body: `{"enabled":null}`, wantStatus: 400, wantBody: `field \"enabled\" is required`, check: stored(false)},
		{name: "unknown field", path: p, body: `{"enabled":true,"all":true}`, wantStatus: 400, wantBody: "accepted fields: enabled", check: stored(false)},
		{name: "unknown workspace", path: "/admin/v1/workspaces/ws-9/flow-rules", body: `{"enabled":true}`, wantStatus: 404,
			wantBody: "create it with PUT", wantCalls: ok},
		{name: "get unknown workspace", method: get, path: "/admin/v1/workspaces/ws-9/flow-rules", wantStatus: 404, wantCalls: []string{"Workspace"}},
		{name: "a read-only token reads it", method: get, path: p, header: hdr("Bearer scmt_reader"), opts: reader, wantStatus: 200,
			wantBody: `"enabled":false`, wantCalls: []string{"Workspace"}},
		{name: "a read-only token may not set it", path: p, body: `{"enabled":true}`, header: hdr("Bearer scmt_reader"), opts: reader,
			wantStatus: 403, check: stored(false)},
		{name: "a workspace owner may not set it", path: p, body: `{"enabled":true}`, header: hdr("Bearer jwt-u-1"), opts: wsAdmin,
			setup: ownerOfWS1, wantStatus: 403, wantCalls: []string{"Member"}, check: stored(false)},
	})
}

func ptrEqual(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func TestAuditEvents(t *testing.T) {
	filter := func(want gateway.AuditFilter) func(*testing.T, *fakeStore, *httptest.ResponseRecorder) {
		return func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
			if s.lastFilter != want {
				t.Errorf("filter = %+v, want %+v", s.lastFilter, want)
			}
		}
	}
	ok := []string{"ListAuditEvents"}
	get := http.MethodGet
	runCases(t, []apiCase{
		{name: "all filters", method: get, path: "/admin/v1/audit-events?workspace_id=ws-1&task_id=t-1&tool=workspace.info&status=denied&limit=5",
			wantStatus: 200, wantCalls: ok, check: filter(gateway.AuditFilter{WorkspaceID: "ws-1", TaskID: "t-1", Tool: "workspace.info", Status: "denied", Limit: 5})},
		{name: "default limit", method: get, path: "/admin/v1/audit-events", wantStatus: 200, wantBody: `"tool":"workspace.info"`,
			wantCalls: ok, check: filter(gateway.AuditFilter{Limit: 100})},
		{name: "limit 1000", method: get, path: "/admin/v1/audit-events?limit=1000", wantStatus: 200, wantCalls: ok, check: filter(gateway.AuditFilter{Limit: 1000})},
		{name: "empty is []", method: get, path: "/admin/v1/audit-events?workspace_id=ws-2", wantStatus: 200, wantBody: `{"events":[]}`, wantCalls: ok},
		{name: "limit 0", method: get, path: "/admin/v1/audit-events?limit=0", wantStatus: 400, wantBody: "from 1 to 1000"},
		{name: "limit 1001", method: get, path: "/admin/v1/audit-events?limit=1001", wantStatus: 400, wantBody: `limit \"1001\"`},
		{name: "limit not a number", method: get, path: "/admin/v1/audit-events?limit=ten", wantStatus: 400, wantBody: `limit \"ten\"`},
		{name: "unknown parameter", method: get, path: "/admin/v1/audit-events?workspace=ws-1", wantStatus: 400, wantBody: `unknown query parameter \"workspace\"`},
		{name: "repeated parameter", method: get, path: "/admin/v1/audit-events?tool=a&tool=b", wantStatus: 400, wantBody: "given 2 times"},
		{name: "bad status", method: get, path: "/admin/v1/audit-events?status=ok", wantStatus: 400, wantBody: "allowed, denied, error, rate_limited, confirmation_required"},
		{name: "bad tool", method: get, path: "/admin/v1/audit-events?tool=a%20b", wantStatus: 400, wantBody: "not a tool name"},
		{name: "kind and actor", method: get, path: "/admin/v1/audit-events?kind=tool_call&actor=user%3A7", wantStatus: 200, wantCalls: ok,
			check: filter(gateway.AuditFilter{Kind: "tool_call", Actor: "user:7", Limit: 100})},
		{name: "bad kind", method: get, path: "/admin/v1/audit-events?kind=login", wantStatus: 400, wantBody: "tool_call, auth, method, admin, token, approval, upstream, policy"},
		{name: "bad actor", method: get, path: "/admin/v1/audit-events?actor=a%0Ab", wantStatus: 400, wantBody: "control characters"},
		{name: "bad workspace", method: get, path: "/admin/v1/audit-events?workspace_id=%2Fx", wantStatus: 400, wantBody: "workspace_id"},
		{name: "full page has next_cursor", method: get, path: "/admin/v1/audit-events?limit=1", wantStatus: 200,
			wantBody: `"next_cursor":"` + encodeCursor(gateway.AuditPosition{Time: time.Time{}, ID: 1}) + `"`, wantCalls: ok},
		{name: "short page has none", method: get, path: "/admin/v1/audit-events?limit=2", wantStatus: 200, wantCalls: ok,
			check: func(t *testing.T, _ *fakeStore, rec *httptest.ResponseRecorder) {
				if strings.Contains(rec.Body.String(), "next_cursor") {
					t.Errorf("a short page has a next_cursor: %s", rec.Body)
				}
			}},
		{name: "cursor sets the position", method: get, path: "/admin/v1/audit-events?limit=5&cursor=" + encodeCursor(gateway.AuditPosition{Time: time.UnixMicro(1700000000123456), ID: 42}),
			wantStatus: 200, wantCalls: ok, check: func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
				b := s.lastFilter.Before
				if b.ID != 42 || !b.Time.Equal(time.UnixMicro(1700000000123456)) {
					t.Errorf("position %+v, want id 42 at 1700000000.123456", b)
				}
			}},
		{name: "forged cursor", method: get, path: "/admin/v1/audit-events?cursor=bm90LWEtY3Vyc29y", wantStatus: 400, wantBody: "not one this API returned"},
		{name: "cursor not base64", method: get, path: "/admin/v1/audit-events?cursor=%25%25", wantStatus: 400, wantBody: "not one this API returned"},
		{name: "cursor time out of range", method: get, path: "/admin/v1/audit-events?cursor=" + encodeCursor(gateway.AuditPosition{Time: time.UnixMicro(-9223372036854775807), ID: 1}), wantStatus: 400, wantBody: "not one this API returned"},
	})
}

func TestTokenReaderHook(t *testing.T) {
	reader := func(o *Options) {
		o.TokenReader = func(r *http.Request) (string, bool) {
			return "ws-1", r.Header.Get("Authorization") == "Bearer scmt_reader"
		}
	}
	tok := hdr("Bearer scmt_reader")
	runCases(t, []apiCase{
		{name: "reads own tokens", method: http.MethodGet, path: wsPath + "/api-tokens", header: tok, opts: reader,
			wantStatus: 200, wantCalls: []string{"ListAPITokens"}},
		{name: "other workspace refused", method: http.MethodGet, path: "/admin/v1/workspaces/ws-2/api-tokens", header: tok, opts: reader,
			wantStatus: 403, wantBody: `belongs to workspace \"ws-1\"`},
		{name: "audit scoped to own workspace", method: http.MethodGet, path: "/admin/v1/audit-events", header: tok, opts: reader,
			wantStatus: 200, wantCalls: []string{"ListAuditEvents"},
			check: func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
				if s.lastFilter.WorkspaceID != "ws-1" {
					t.Errorf("filter workspace = %q, want ws-1", s.lastFilter.WorkspaceID)
				}
			}},
		{name: "audit of another workspace refused", method: http.MethodGet, path: "/admin/v1/audit-events?workspace_id=ws-2", header: tok, opts: reader,
			wantStatus: 403},
		{name: "reader cannot write", path: wsPath, body: `{"name":"X","slug":"x"}`, header: tok, opts: reader,
			wantStatus: 403, wantBody: "may only read"},
		{name: "unknown token still 401", method: http.MethodGet, path: wsPath + "/api-tokens", header: hdr("Bearer scmt_other"), opts: reader,
			wantStatus: 401},
		{name: "reader only, admin off for admin token", method: http.MethodGet, path: wsPath + "/api-tokens", header: hdr("Bearer "),
			opts: func(o *Options) { reader(o); o.Token = "" }, wantStatus: 401},
		{name: "admin token reads any workspace", method: http.MethodGet, path: "/admin/v1/audit-events?workspace_id=ws-2", opts: reader,
			wantStatus: 200, wantCalls: []string{"ListAuditEvents"}},
	})
}

func TestTokenHelpers(t *testing.T) {
	cases := []struct {
		name, token, hash, fp string
	}{
		{name: "abc", token: "abc", hash: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", fp: "ba7816bf8f01cfea"},
		{name: "empty", token: "", hash: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", fp: "e3b0c44298fc1c14"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := HashToken(tc.token); got != tc.hash {
				t.Errorf("HashToken = %s, want %s", got, tc.hash)
			}
			if got := Fingerprint(tc.token); got != tc.fp {
				t.Errorf("Fingerprint = %s, want %s", got, tc.fp)
			}
		})
	}
	a, recA := NewAPIToken("ws-1", "l", []string{"mcp:read"}, testNow)
	b, _ := NewAPIToken("ws-1", "l", []string{"mcp:read"}, testNow)
	if a == b || !strings.HasPrefix(a, TokenPrefix) || len(a) != len(TokenPrefix)+43 {
		t.Errorf("tokens %q, %q: want distinct scmt_ + 43 characters", a, b)
	}
	if !fingerprintPattern.MatchString(recA.Fingerprint) || recA.Hash != HashToken(a) {
		t.Errorf("record %+v does not match value", recA)
	}
}

// TestConcurrentRequests shares one handler across goroutines; run with -race.
func TestConcurrentRequests(t *testing.T) {
	store := newFakeStore()
	var mu sync.Mutex
	changes := 0
	h := NewHandler(store, Options{Token: adminToken, OnChange: func(string) { mu.Lock(); changes++; mu.Unlock() }})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 25 {
				var rec *httptest.ResponseRecorder
				if i%2 == 0 {
					rec = serve(h, http.MethodPut, wsPath+"/tasks/t-1", `{"status":"running"}`, nil)
				} else {
					rec = serve(h, http.MethodGet, "/admin/v1/audit-events?limit=3", "", nil)
				}
				if rec.Code != http.StatusOK {
					t.Errorf("status %d: %s", rec.Code, rec.Body)
					return
				}
			}
		})
	}
	wg.Wait()
	if changes != 100 {
		t.Errorf("OnChange called %d times, want 100", changes)
	}
}

// TestMountedUnderPrefix mounts the handler the way the server does and
// checks that path variables still reach the handlers.
func TestMountedUnderPrefix(t *testing.T) {
	store := newFakeStore()
	root := mux.NewRouter()
	root.PathPrefix(Prefix).Handler(NewHandler(store, Options{Token: adminToken}))
	rec := serve(root, http.MethodPut, wsPath+"/members/u-7", `{"role":"owner"}`, nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if _, ok := store.members[[2]string{"ws-1", "u-7"}]; !ok {
		t.Errorf("member u-7 not stored: %v", store.members)
	}
}
