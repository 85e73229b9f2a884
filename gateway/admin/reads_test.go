package admin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

const get, del = http.MethodGet, http.MethodDelete

// TestPutThenGet checks that GET answers exactly what the PUT of the same
// path answered, for every resource PUT creates.
func TestPutThenGet(t *testing.T) {
	for _, tc := range []struct{ path, body string }{
		{wsPath, `{"name":"One","slug":"one","org_plan":"team"}`},
		{wsPath + "/members/u-2", `{"role":"admin","seat_type":"standard"}`},
		{wsPath + "/members/u-1/permission-overrides", `{"workspace.budget.view":true,"tools.*":false}`},
		{wsPath + "/profiles/p-2", `{"name":"Reader","allowlist":["supacloud.read.*"],"script_allowlist":[]}`},
		{wsPath + "/profiles/p-3", `{"name":"Any script","allowlist":[]}`},
		{wsPath + "/default-profile", `{"profile_id":"p-1"}`},
		{wsPath + "/default-profile", `{"profile_id":null}`},
		{wsPath + "/permission-overrides", `{"workspace.budget.view":false}`},
		{wsPath + "/permission-overrides", `{}`},
		{wsPath + "/tasks/t-1", `{"status":"running"}`},
		{wsPath + "/external-limits", `{"reads_per_tool_hourly":200}`},
		{wsPath + "/external-limits", `{}`},
		{wsPath + "/flow-rules", `{"enabled":true}`},
		{"/admin/v1/seat-types/sso-admin", `{"enterprise_only":true,"permissions":{"sso.manage":true}}`},
		{"/admin/v1/seat-types/basic", `{}`},
		{"/admin/v1/org-plans/enterprise", `{"permissions":{"sso.*":true}}`},
	} {
		t.Run(tc.path+" "+tc.body, func(t *testing.T) {
			h := NewHandler(newFakeStore(), Options{Token: adminToken, Now: func() time.Time { return testNow }})
			put := serve(h, http.MethodPut, tc.path, tc.body, nil)
			assertReply(t, put, 200, "")
			got := serve(h, get, tc.path, "", nil)
			assertReply(t, got, 200, "")
			if put.Body.String() != got.Body.String() {
				t.Errorf("PUT answered %s\nGET answered %s", put.Body, got.Body)
			}
		})
	}
}

func TestReadWorkspaces(t *testing.T) {
	more := func(s *fakeStore) {
		for _, id := range []string{"ws-3", "ws-2"} {
			s.workspaces[id] = gateway.Workspace{ID: id, Name: id, Slug: id}
		}
	}
	runCases(t, []apiCase{
		{name: "get", method: get, path: wsPath, wantStatus: 200, wantBody: `"id":"ws-1","name":"One","slug":"one","org_plan":"team","created_at":`,
			wantCalls: []string{"Workspace"}},
		{name: "get unknown", method: get, path: "/admin/v1/workspaces/ws-9", wantStatus: 404,
			wantBody: "create it with PUT /admin/v1/workspaces/ws-9", wantCalls: []string{"Workspace"}},
		{name: "get bad id", method: get, path: "/admin/v1/workspaces/-x", wantStatus: 400, wantBody: "workspace id"},
		{name: "list first page", method: get, path: "/admin/v1/workspaces?limit=2", setup: more, wantStatus: 200,
			wantBody: `"next_cursor":"ws-2"`, wantCalls: []string{"ListWorkspaces"},
			check: func(t *testing.T, _ *fakeStore, rec *httptest.ResponseRecorder) {
				if ids := listedIDs(t, rec, "workspaces", "id"); strings.Join(ids, " ") != "ws-1 ws-2" {
					t.Errorf("listed %v", ids)
				}
			}},
		{name: "list last page", method: get, path: "/admin/v1/workspaces?limit=2&cursor=ws-2", setup: more, wantStatus: 200,
			wantCalls: []string{"ListWorkspaces"},
			check: func(t *testing.T, _ *fakeStore, rec *httptest.ResponseRecorder) {
				if ids := listedIDs(t, rec, "workspaces", "id"); strings.Join(ids, " ") != "ws-3" || strings.Contains(rec.Body.String(), "next_cursor") {
					t.Errorf("listed %s", rec.Body)
				}
			}},
		{name: "list empty", method: get, path: "/admin/v1/workspaces", setup: func(s *fakeStore) { clear(s.workspaces) },
			wantStatus: 200, wantBody: `{"workspaces":[]}`, wantCalls: []string{"ListWorkspaces"}},
		{name: "list bad limit", method: get, path: "/admin/v1/workspaces?limit=0", wantStatus: 400, wantBody: "from 1 to 1000"},
		{name: "list bad cursor", method: get, path: "/admin/v1/workspaces?cursor=%2F", wantStatus: 400, wantBody: "not one this API returned"},
		{name: "list unknown parameter", method: get, path: "/admin/v1/workspaces?slug=one", wantStatus: 400, wantBody: "accepted: limit, cursor"},
	})
}

// listedIDs returns field of each item of the list name in rec's body.
func listedIDs(t *testing.T, rec *httptest.ResponseRecorder, name, field string) []string {
	t.Helper()
	var body map[string]json.RawMessage
	var items []map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %s: %v", rec.Body, err)
	}
	if err := json.Unmarshal(body[name], &items); err != nil {
		t.Fatalf("%s in %s: %v", name, rec.Body, err)
	}
	var ids []string
	for _, item := range items {
		ids = append(ids, item[field].(string))
	}
	return ids
}

func TestReadAndDeleteMembers(t *testing.T) {
	twoMembers := func(s *fakeStore) {
		s.members[[2]string{"ws-1", "u-0"}] = gateway.Member{WorkspaceID: "ws-1", UserID: "u-0", Role: "owner"}
		s.memberOver[[2]string{"ws-1", "u-1"}] = gateway.Permissions{"a": true}
	}
	runCases(t, []apiCase{
		{name: "list", method: get, path: wsPath + "/members", setup: twoMembers, wantStatus: 200,
			wantBody:  `{"members":[{"workspace_id":"ws-1","user_id":"u-0","role":"owner","seat_type":""},{"workspace_id":"ws-1","user_id":"u-1","role":"member","seat_type":"standard"}]}`,
			wantCalls: []string{"ListMembers"}},
		{name: "list empty", method: get, path: wsPath + "/members", setup: func(s *fakeStore) { clear(s.members) },
			wantStatus: 200, wantBody: `{"members":[]}`, wantCalls: []string{"ListMembers"}},
		{name: "list unknown workspace", method: get, path: "/admin/v1/workspaces/ws-9/members", wantStatus: 404, wantCalls: []string{"ListMembers"}},
		{name: "get", method: get, path: wsPath + "/members/u-1", wantStatus: 200, wantBody: `"seat_type":"standard"`, wantCalls: []string{"Member"}},
		{name: "get unknown", method: get, path: wsPath + "/members/u-9", wantStatus: 404, wantBody: `member \"u-9\" not found`, wantCalls: []string{"Member"}},
		{name: "delete", method: del, path: wsPath + "/members/u-1", setup: twoMembers, wantStatus: 204,
			wantCalls: []string{"DeleteMember"}, wantChange: []string{"ws-1"},
			check: func(t *testing.T, s *fakeStore, rec *httptest.ResponseRecorder) {
				if _, ok := s.members[[2]string{"ws-1", "u-1"}]; ok || s.memberOver[[2]string{"ws-1", "u-1"}] != nil || rec.Body.Len() != 0 {
					t.Errorf("member or overrides kept, or a body sent: %v %v %q", s.members, s.memberOver, rec.Body)
				}
			}},
		{name: "delete unknown", method: del, path: wsPath + "/members/u-9", wantStatus: 404, wantCalls: []string{"DeleteMember"}},
		{name: "delete bad id", method: del, path: wsPath + "/members/u%20x", wantStatus: 400, wantBody: "user id"},
	})
}

func TestReadAndDeleteProfiles(t *testing.T) {
	p1 := wsPath + "/profiles/p-1"
	withDefault := func(s *fakeStore) {
		s.defaults["ws-1"] = "p-1"
		s.profiles[[2]string{"ws-1", "p-0"}] = gateway.Profile{WorkspaceID: "ws-1", ID: "p-0", Name: "Zero"}
	}
	deletion := func(want profileDeletion, parts ...string) func(*testing.T, *fakeStore, *httptest.ResponseRecorder) {
		return func(t *testing.T, s *fakeStore, rec *httptest.ResponseRecorder) {
			var got profileDeletion
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			msg := got.Message
			got.Message = ""
			if strings.Join(got.RunningTasks, ",") != strings.Join(want.RunningTasks, ",") || got.RunningTasks == nil ||
				got.WorkspaceID != want.WorkspaceID || got.ProfileID != want.ProfileID || got.WasDefault != want.WasDefault ||
				got.RunningTasksTotal != want.RunningTasksTotal {
				t.Errorf("reply %+v, want %+v", got, want)
			}
			for _, part := range parts {
				if !strings.Contains(msg, part) {
					t.Errorf("message %q does not say %q", msg, part)
				}
			}
			if _, ok := s.profiles[[2]string{"ws-1", "p-1"}]; ok {
				t.Error("profile not deleted")
			}
			if _, ok := s.defaults["ws-1"]; ok && want.WasDefault {
				t.Error("default not cleared")
			}
		}
	}
	runCases(t, []apiCase{
		{name: "list", method: get, path: wsPath + "/profiles", setup: withDefault, wantStatus: 200,
			wantBody:  `{"profiles":[{"workspace_id":"ws-1","id":"p-0","name":"Zero","allowlist":[],"script_allowlist":null,"is_workspace_default":false},{"workspace_id":"ws-1","id":"p-1","name":"Ops","allowlist":["supacloud.ops.*"],"script_allowlist":null,"is_workspace_default":true}]}`,
			wantCalls: []string{"ListProfiles"}},
		{name: "list unknown workspace", method: get, path: "/admin/v1/workspaces/ws-9/profiles", wantStatus: 404, wantCalls: []string{"ListProfiles"}},
		{name: "get", method: get, path: p1, wantStatus: 200, wantBody: `"allowlist":["supacloud.ops.*"]`, wantCalls: []string{"Profile"}},
		{name: "get unknown", method: get, path: wsPath + "/profiles/p-9", wantStatus: 404, wantBody: "create it with PUT", wantCalls: []string{"Profile"}},
		{name: "get default profile", method: get, path: wsPath + "/default-profile", setup: withDefault, wantStatus: 200,
			wantBody: `{"profile_id":"p-1","workspace_id":"ws-1"}`, wantCalls: []string{"DefaultProfile"}},
		{name: "get default profile none", method: get, path: wsPath + "/default-profile", wantStatus: 200,
			wantBody: `{"profile_id":null,"workspace_id":"ws-1"}`, wantCalls: []string{"DefaultProfile"}},
		{name: "get default profile unknown workspace", method: get, path: "/admin/v1/workspaces/ws-9/default-profile", wantStatus: 404,
			wantCalls: []string{"DefaultProfile"}},
		{name: "delete the default", method: del, path: p1, wantStatus: 200,
			setup:     func(s *fakeStore) { withDefault(s); s.profileTasks = map[string][]string{"p-1": {"t-1", "t-2"}} },
			wantCalls: []string{"DeleteProfile"}, wantChange: []string{"ws-1"},
			check: deletion(profileDeletion{WorkspaceID: "ws-1", ProfileID: "p-1", WasDefault: true, RunningTasks: []string{"t-1", "t-2"}, RunningTasksTotal: 2},
				"profile p-1 deleted", "was the workspace default", "has no default profile now", "read-only fallback",
				"PUT /admin/v1/workspaces/ws-1/default-profile", "2 running task(s) made calls under it (t-1, t-2)",
				"agent_profile_id p-1 fall back to the read-only fallback", "(profile.deleted)",
				"PUT /admin/v1/workspaces/ws-1/profiles/p-1 creates it again")},
		{name: "delete another", method: del, path: p1, wantStatus: 200, wantCalls: []string{"DeleteProfile"}, wantChange: []string{"ws-1"},
			check: deletion(profileDeletion{WorkspaceID: "ws-1", ProfileID: "p-1", RunningTasks: []string{}},
				"No running task of this workspace has made a call under it",
				"fall back to the workspace default profile, or the read-only fallback while there is none")},
		{name: "delete unknown", method: del, path: wsPath + "/profiles/p-9", wantStatus: 404, wantCalls: []string{"DeleteProfile"}},
		{name: "delete bad id", method: del, path: wsPath + "/profiles/p*", wantStatus: 400, wantBody: "profile id"},
	})
}

func TestProfileDeletionMessage(t *testing.T) {
	many := []string{"t-1", "t-2"}
	for _, tc := range []struct {
		total int
		tasks []string
		want  string
	}{
		{-1, nil, "could not be listed; GET /admin/v1/audit-events?workspace_id=ws-1"},
		{25, many, "25 running task(s) made calls under it (t-1, t-2 and 23 more)"},
	} {
		if got := profileDeletionMessage("ws-1", "p-1", false, tc.tasks, tc.total); !strings.Contains(got, tc.want) || strings.Contains(got, "default profile now") {
			t.Errorf("message %q does not say %q (or speaks of the default)", got, tc.want)
		}
	}
}

func TestReadAndDeleteOverrides(t *testing.T) {
	set := func(s *fakeStore) {
		s.wsOver["ws-1"] = gateway.Permissions{"a.b": true, "c": false}
		s.memberOver[[2]string{"ws-1", "u-1"}] = gateway.Permissions{"x.*": true}
	}
	runCases(t, []apiCase{
		{name: "get workspace overrides", method: get, path: wsPath + "/permission-overrides", setup: set, wantStatus: 200,
			wantBody: `{"a.b":true,"c":false}`, wantCalls: []string{"WorkspaceOverrides"}},
		{name: "get none is {}", method: get, path: wsPath + "/permission-overrides", wantStatus: 200, wantBody: `{}`,
			wantCalls: []string{"WorkspaceOverrides"}},
		{name: "get member overrides", method: get, path: wsPath + "/members/u-1/permission-overrides", setup: set, wantStatus: 200,
			wantBody: `{"x.*":true}`, wantCalls: []string{"MemberOverrides"}},
		{name: "get of unknown member", method: get, path: wsPath + "/members/u-9/permission-overrides", wantStatus: 404,
			wantCalls: []string{"MemberOverrides"}},
		{name: "delete workspace key", method: del, path: wsPath + "/permission-overrides/c", setup: set, wantStatus: 204,
			wantCalls: []string{"DeleteWorkspaceOverride"}, wantChange: []string{"ws-1"},
			check: func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
				if _, ok := s.wsOver["ws-1"]["c"]; ok || !s.wsOver["ws-1"]["a.b"] {
					t.Errorf("overrides now %v, want only a.b", s.wsOver["ws-1"])
				}
			}},
		{name: "delete member key with wildcard", method: del, path: wsPath + "/members/u-1/permission-overrides/x.*", setup: set, wantStatus: 204,
			wantCalls: []string{"DeleteMemberOverride"}, wantChange: []string{"ws-1"}},
		{name: "delete unset key", method: del, path: wsPath + "/permission-overrides/z", setup: set, wantStatus: 404,
			wantBody: "no override for z", wantCalls: []string{"DeleteWorkspaceOverride"}},
		{name: "delete bad key", method: del, path: wsPath + "/permission-overrides/A%20B", wantStatus: 400, wantBody: "not a permission key"},
		{name: "delete member bad key", method: del, path: wsPath + "/members/u-1/permission-overrides/Budget", wantStatus: 400, wantBody: "not a permission key"},
	})
}

func TestReadAndDeleteSeatTypesAndOrgPlans(t *testing.T) {
	runCases(t, []apiCase{
		{name: "list seat types", method: get, path: "/admin/v1/seat-types", setup: func(s *fakeStore) {
			s.seatTypes["analyst"] = gateway.SeatType{Name: "analyst", EnterpriseOnly: true}
		}, wantStatus: 200,
			wantBody:  `{"seat_types":[{"name":"analyst","enterprise_only":true,"permissions":{}},{"name":"standard","enterprise_only":false,"permissions":{}}]}`,
			wantCalls: []string{"ListSeatTypes"}},
		{name: "get seat type", method: get, path: "/admin/v1/seat-types/standard", wantStatus: 200, wantBody: `"name":"standard"`, wantCalls: []string{"SeatType"}},
		{name: "get unknown seat type", method: get, path: "/admin/v1/seat-types/gold", wantStatus: 404,
			wantBody: "create it with PUT /admin/v1/seat-types/gold", wantCalls: []string{"SeatType"}},
		{name: "delete held seat type", method: del, path: "/admin/v1/seat-types/standard", wantStatus: 409,
			wantBody: "still held by 1 member: ws-1/u-1", wantCalls: []string{"DeleteSeatType"},
			check: func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
				if _, ok := s.seatTypes["standard"]; !ok {
					t.Error("refused delete removed the seat type")
				}
			}},
		{name: "delete seat type", method: del, path: "/admin/v1/seat-types/standard", setup: func(s *fakeStore) { clear(s.members) },
			wantStatus: 204, wantCalls: []string{"DeleteSeatType"}, wantChange: []string{""}},
		{name: "delete unknown seat type", method: del, path: "/admin/v1/seat-types/gold", wantStatus: 404, wantCalls: []string{"DeleteSeatType"}},
		{name: "list org plans", method: get, path: "/admin/v1/org-plans", wantStatus: 200,
			wantBody: `{"org_plans":[{"name":"team","permissions":{}}]}`, wantCalls: []string{"ListOrgPlans"}},
		{name: "list org plans empty", method: get, path: "/admin/v1/org-plans", setup: func(s *fakeStore) { clear(s.orgPlans) },
			wantStatus: 200, wantBody: `{"org_plans":[]}`, wantCalls: []string{"ListOrgPlans"}},
		{name: "get org plan", method: get, path: "/admin/v1/org-plans/team", wantStatus: 200, wantBody: `"name":"team"`, wantCalls: []string{"OrgPlan"}},
		{name: "get unknown org plan", method: get, path: "/admin/v1/org-plans/gold", wantStatus: 404, wantCalls: []string{"OrgPlan"}},
		{name: "delete org plan in use", method: del, path: "/admin/v1/org-plans/team", wantStatus: 409,
			wantBody: "still used by 1 workspace: ws-1", wantCalls: []string{"DeleteOrgPlan"}},
		{name: "delete org plan", method: del, path: "/admin/v1/org-plans/team", setup: func(s *fakeStore) { clear(s.workspaces) },
			wantStatus: 204, wantCalls: []string{"DeleteOrgPlan"}, wantChange: []string{""}},
	})
}

func TestReadTasks(t *testing.T) {
	tasks := func(s *fakeStore) {
		for i, st := range []string{"running", "completed", "running"} {
			id := "t-" + string(rune('1'+i))
			s.tasks[[2]string{"ws-1", id}] = gateway.Task{WorkspaceID: "ws-1", ID: id, Status: st, UpdatedAt: testNow}
		}
	}
	query := func(status, after, limit string) func(*testing.T, *fakeStore, *httptest.ResponseRecorder) {
		return func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
			if s.lastTaskQuery != [3]string{status, after, limit} {
				t.Errorf("store asked for %q, want %q", s.lastTaskQuery, [3]string{status, after, limit})
			}
		}
	}
	p := wsPath + "/tasks"
	runCases(t, []apiCase{
		{name: "list", method: get, path: p, setup: tasks, wantStatus: 200, wantBody: `"id":"t-3"`, wantCalls: []string{"ListTasks"},
			check: query("", "", "100")},
		{name: "list running, paged", method: get, path: p + "?status=running&limit=1", setup: tasks, wantStatus: 200,
			wantBody:  `{"next_cursor":"t-1","tasks":[{"workspace_id":"ws-1","id":"t-1","status":"running","updated_at":"2026-11-30T14:00:00Z"}]}`,
			wantCalls: []string{"ListTasks"}, check: query("running", "", "1")},
		{name: "list next page", method: get, path: p + "?status=running&limit=1&cursor=t-1", setup: tasks, wantStatus: 200,
			wantBody: `"id":"t-3"`, wantCalls: []string{"ListTasks"}, check: query("running", "t-1", "1")},
		{name: "list empty", method: get, path: p, wantStatus: 200, wantBody: `{"tasks":[]}`, wantCalls: []string{"ListTasks"}},
		{name: "list bad status", method: get, path: p + "?status=paused", wantStatus: 400, wantBody: "use one of running, completed, failed, cancelled"},
		{name: "list status twice", method: get, path: p + "?status=running&status=failed", wantStatus: 400, wantBody: "given 2 times"},
		{name: "list unknown workspace", method: get, path: "/admin/v1/workspaces/ws-9/tasks", wantStatus: 404, wantCalls: []string{"ListTasks"}},
		{name: "get", method: get, path: p + "/t-2", setup: tasks, wantStatus: 200, wantBody: `"status":"completed"`, wantCalls: []string{"Task"}},
		{name: "get unknown", method: get, path: p + "/t-9", wantStatus: 404, wantBody: "create it with PUT", wantCalls: []string{"Task"}},
	})
}

func TestReadExternalLimits(t *testing.T) {
	p := wsPath + "/external-limits"
	n := 200
	runCases(t, []apiCase{
		{name: "defaults shown for nulls", method: get, path: p, wantStatus: 200,
			wantBody:  `{"workspace_id":"ws-1","reads_per_tool_hourly":null,"ops_per_token_hourly":null,"effective":{"reads_per_tool_hourly":50,"ops_per_token_hourly":30}}`,
			wantCalls: []string{"ExternalLimits"}},
		{name: "stored value in effect", method: get, path: p, setup: func(s *fakeStore) { s.limits["ws-1"] = gateway.ExternalLimits{ReadsPerToolHourly: &n} },
			wantStatus: 200, wantBody: `"reads_per_tool_hourly":200,"ops_per_token_hourly":null,"effective":{"reads_per_tool_hourly":200,"ops_per_token_hourly":30}`,
			wantCalls: []string{"ExternalLimits"}},
		{name: "unknown workspace", method: get, path: "/admin/v1/workspaces/ws-9/external-limits", wantStatus: 404, wantCalls: []string{"ExternalLimits"}},
	})
}

// TestReaderScope: a management:read token reads its own workspace's
// paths, its audit events and the OpenAPI description, nothing global and
// nothing of another workspace, and changes nothing.
func TestReaderScope(t *testing.T) {
	reader := func(o *Options) {
		o.TokenReader = func(r *http.Request) (string, bool) {
			return "ws-1", r.Header.Get("Authorization") == "Bearer scmt_reader"
		}
	}
	tok := hdr("Bearer scmt_reader")
	var cases []apiCase
	for path, call := range map[string]string{
		"": "Workspace", "/members": "ListMembers", "/members/u-1": "Member", "/members/u-1/permission-overrides": "MemberOverrides",
		"/profiles": "ListProfiles", "/profiles/p-1": "Profile", "/default-profile": "DefaultProfile",
		"/permission-overrides": "WorkspaceOverrides", "/tasks": "ListTasks", "/external-limits": "ExternalLimits",
		"/api-tokens": "ListAPITokens",
	} {
		cases = append(cases,
			apiCase{name: "own " + path, method: get, path: wsPath + path, header: tok, opts: reader, wantStatus: 200, wantCalls: []string{call}},
			apiCase{name: "other " + path, method: get, path: "/admin/v1/workspaces/ws-2" + path, header: tok, opts: reader,
				wantStatus: 403, wantBody: `belongs to workspace \"ws-1\"`})
	}
	for _, path := range []string{"/admin/v1/api-tokens/0123456789abcdef", "/admin/v1/workspaces", "/admin/v1/seat-types", "/admin/v1/seat-types/standard", "/admin/v1/org-plans", "/admin/v1/org-plans/team"} {
		cases = append(cases, apiCase{name: "global " + path, method: get, path: path, header: tok, opts: reader,
			wantStatus: 403, wantBody: "this path needs MCPGATE_ADMIN_TOKEN"})
	}
	cases = append(cases,
		apiCase{name: "openapi", method: get, path: Prefix + OpenAPIPath, header: tok, opts: reader, wantStatus: 200, wantBody: "openapi: 3.1"},
		apiCase{name: "no delete", method: del, path: wsPath + "/members/u-1", header: tok, opts: reader, wantStatus: 403, wantBody: "may only read"},
		apiCase{name: "no delete of a profile", method: del, path: wsPath + "/profiles/p-1", header: tok, opts: reader, wantStatus: 403},
		apiCase{name: "admin token reads global", method: get, path: "/admin/v1/seat-types", opts: reader, wantStatus: 200, wantCalls: []string{"ListSeatTypes"}},
	)
	runCases(t, cases)
}

func TestOpenAPIServed(t *testing.T) {
	runCases(t, []apiCase{
		{name: "served", method: get, path: Prefix + OpenAPIPath, wantStatus: 200, wantBody: "openapi: 3.1.0",
			check: func(t *testing.T, _ *fakeStore, rec *httptest.ResponseRecorder) {
				if rec.Header().Get("Content-Type") != "application/yaml" || rec.Body.String() != string(OpenAPI) {
					t.Errorf("Content-Type %q, body of %d bytes", rec.Header().Get("Content-Type"), rec.Body.Len())
				}
			}},
		{name: "needs a credential", method: get, path: Prefix + OpenAPIPath, header: hdr(""), wantStatus: 401},
		{name: "GET only", method: http.MethodPut, path: Prefix + OpenAPIPath, body: `{}`, wantStatus: 405, wantBody: "use GET"},
	})
}
