package admin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

// TestWorkspaceAdminHook: a console sign-in JWT of a workspace member
// reaches exactly the token routes (and the settings reads) of its own
// workspace, and only while its role is owner or admin
// (docs/requirements.md#api-tokens); the role is read on every request.
func TestWorkspaceAdminHook(t *testing.T) {
	// "Bearer jwt-<user>" stands for a verified console JWT of <user> in ws-1.
	hook := func(o *Options) {
		o.WorkspaceAdmin = func(r *http.Request) (string, string, bool) {
			user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer jwt-")
			return "ws-1", user, ok
		}
	}
	role := func(user, role string) func(*fakeStore) {
		return func(s *fakeStore) {
			s.members[[2]string{"ws-1", user}] = gateway.Member{WorkspaceID: "ws-1", UserID: user, Role: role, SeatType: "standard"}
		}
	}
	otherToken := func(s *fakeStore) {
		role("u-admin", "admin")(s)
		s.workspaces["ws-2"] = gateway.Workspace{ID: "ws-2", Name: "Two", Slug: "two"}
		s.tokens["fedcba9876543210"] = gateway.APIToken{Fingerprint: "fedcba9876543210", WorkspaceID: "ws-2", Label: "theirs", Status: TokenActive}
	}
	const post = http.MethodPost
	admin, owner, member := hdr("Bearer jwt-u-admin"), hdr("Bearer jwt-u-owner"), hdr("Bearer jwt-u-1")
	runCases(t, []apiCase{
		{name: "admin creates a token", method: post, path: wsPath + "/api-tokens", body: `{"label":"ci","scopes":["mcp:read"]}`,
			header: admin, opts: hook, setup: role("u-admin", "admin"),
			wantStatus: 201, wantBody: `"token":"scmt_`, wantCalls: []string{"Member", "CreateAPIToken"}},
		{name: "owner lists tokens", method: http.MethodGet, path: wsPath + "/api-tokens", header: owner, opts: hook, setup: role("u-owner", "owner"),
			wantStatus: 200, wantBody: `"fingerprint":"0123456789abcdef"`, wantCalls: []string{"Member", "ListAPITokens"}},
		{name: "admin revokes its workspace's token", method: http.MethodDelete, path: "/admin/v1/api-tokens/0123456789abcdef",
			header: admin, opts: hook, setup: role("u-admin", "admin"),
			wantStatus: 204, wantCalls: []string{"Member", "APIToken", "RevokeAPIToken"},
			check: func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
				if s.tokens["0123456789abcdef"].Status != TokenRevoked {
					t.Error("the token is not revoked")
				}
			}},
		{name: "admin reads its workspace's token", method: http.MethodGet, path: "/admin/v1/api-tokens/0123456789abcdef",
			header: admin, opts: hook, setup: role("u-admin", "admin"),
			wantStatus: 200, wantBody: `"status":"active"`, wantCalls: []string{"Member", "APIToken", "APIToken"}},
		{name: "admin cannot read another workspace's token", method: http.MethodGet, path: "/admin/v1/api-tokens/fedcba9876543210",
			header: admin, opts: hook, setup: otherToken,
			wantStatus: 403, wantCalls: []string{"Member", "APIToken"}},
		{name: "admin reads the workspace settings", method: http.MethodGet, path: wsPath + "/external-limits", header: admin, opts: hook,
			setup: role("u-admin", "admin"), wantStatus: 200, wantCalls: []string{"Member", "ExternalLimits"}},
		{name: "member role refused with a message", method: post, path: wsPath + "/api-tokens", body: `{"label":"ci","scopes":["mcp:read"]}`,
			header: member, opts: hook,
			wantStatus: 403, wantBody: `role \"member\" in workspace \"ws-1\"; API tokens need the owner or admin role`, wantCalls: []string{"Member"}},
		{name: "viewer cannot even list", method: http.MethodGet, path: wsPath + "/api-tokens", header: hdr("Bearer jwt-u-v"), opts: hook,
			setup: role("u-v", "viewer"), wantStatus: 403, wantBody: `role \"viewer\"`, wantCalls: []string{"Member"}},
		{name: "not a member refused", method: http.MethodGet, path: wsPath + "/api-tokens", header: hdr("Bearer jwt-u-gone"), opts: hook,
			wantStatus: 403, wantBody: `is not a member of workspace \"ws-1\"`, wantCalls: []string{"Member"}},
		{name: "other workspace's tokens refused", method: http.MethodGet, path: "/admin/v1/workspaces/ws-2/api-tokens", header: admin, opts: hook,
			setup: otherToken, wantStatus: 403, wantBody: `not of \"ws-2\"`, wantCalls: []string{"Member"}},
		{name: "other workspace's token not revoked", method: http.MethodDelete, path: "/admin/v1/api-tokens/fedcba9876543210", header: admin, opts: hook,
			setup: otherToken, wantStatus: 403, wantBody: "may read or revoke only its own tokens", wantCalls: []string{"Member", "APIToken"},
			check: func(t *testing.T, s *fakeStore, _ *httptest.ResponseRecorder) {
				if s.tokens["fedcba9876543210"].Status != TokenActive {
					t.Error("another workspace's token was revoked")
				}
			}},
		{name: "admin sets the external limits (the same settings tab)", method: http.MethodPut, path: wsPath + "/external-limits", body: `{"reads_per_tool_hourly":5}`,
			header: admin, opts: hook, setup: role("u-admin", "admin"), wantStatus: 200, wantBody: `"reads_per_tool_hourly":5`,
			wantCalls: []string{"Member", "PutExternalLimits"}, wantChange: []string{"ws-1"}},
		{name: "member may not set the external limits", method: http.MethodPut, path: wsPath + "/external-limits", body: `{"reads_per_tool_hourly":5}`,
			header: member, opts: hook, wantStatus: 403, wantBody: `role \"member\"`, wantCalls: []string{"Member"}},
		{name: "other workspace's limits refused", method: http.MethodPut, path: "/admin/v1/workspaces/ws-2/external-limits", body: `{"reads_per_tool_hourly":5}`,
			header: admin, opts: hook, setup: otherToken, wantStatus: 403, wantBody: `not of \"ws-2\"`, wantCalls: []string{"Member"}},
		{name: "other routes refused", method: http.MethodPut, path: wsPath + "/profiles/p1", body: `{"allowed_tools":["run.list"]}`,
			header: admin, opts: hook, setup: role("u-admin", "admin"), wantStatus: 403, wantBody: "create, list and revoke its API tokens", wantCalls: []string{"Member"}},
		{name: "members of the workspace may not be changed", method: http.MethodPut, path: wsPath + "/members/u-admin", body: `{"role":"owner","seat_type":"standard"}`,
			header: admin, opts: hook, setup: role("u-admin", "admin"), wantStatus: 403, wantCalls: []string{"Member"}},
		{name: "the workspace list refused", method: http.MethodGet, path: "/admin/v1/workspaces", header: admin, opts: hook,
			setup: role("u-admin", "admin"), wantStatus: 403, wantCalls: []string{"Member"}},
		{name: "no hook: 401", method: http.MethodGet, path: wsPath + "/api-tokens", header: admin, setup: role("u-admin", "admin"), wantStatus: 401},
	})
}

// TestWorkspaceAdminDemotedAtOnce: the role is read on every request, so
// a demotion takes effect on the next one.
func TestWorkspaceAdminDemotedAtOnce(t *testing.T) {
	store := newFakeStore()
	store.members[[2]string{"ws-1", "u-1"}] = gateway.Member{WorkspaceID: "ws-1", UserID: "u-1", Role: "admin", SeatType: "standard"}
	h := NewHandler(store, Options{Token: adminToken, WorkspaceAdmin: func(r *http.Request) (string, string, bool) {
		return "ws-1", "u-1", r.Header.Get("Authorization") == "Bearer jwt"
	}})
	jwt := hdr("Bearer jwt")
	assertReply(t, serve(h, http.MethodGet, wsPath+"/api-tokens", "", jwt), 200, "0123456789abcdef")
	assertReply(t, serve(h, http.MethodPut, wsPath+"/members/u-1", `{"role":"member","seat_type":"standard"}`, nil), 200, "")
	assertReply(t, serve(h, http.MethodGet, wsPath+"/api-tokens", "", jwt), 403, "need the owner or admin role")
}
