package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/mcpgate/mcpgate/gateway"
)

type readerKey struct{}

// authenticate accepts the admin token (compared in constant time over
// SHA-256 digests, so neither content nor length leaks), through
// Options.TokenReader a read-only workspace token for GETs, or, through
// Options.WorkspaceAdmin, a console sign-in JWT of a member whose role is
// owner or admin (checked now, on every request).
func (h *handler) authenticate(r *http.Request) (*http.Request, error) {
	token, ok := bearer(r)
	if ok && h.opts.Token != "" && h.isAdminToken(token) {
		return r, nil
	}
	if h.opts.TokenReader != nil {
		if ws, ok := h.opts.TokenReader(r); ok {
			if r.Method != http.MethodGet {
				return r, gateway.Errorf(gateway.EForbidden, "API tokens may only read the admin API (GET); changes need %s", EnvAdminToken)
			}
			return r.WithContext(context.WithValue(r.Context(), readerKey{}, ws)), nil
		}
	}
	if h.opts.WorkspaceAdmin != nil {
		if ws, user, ok := h.opts.WorkspaceAdmin(r); ok {
			return h.authorizeWorkspaceAdmin(r, ws, user)
		}
	}
	if !ok {
		return r, gateway.Errorf(gateway.EUnauthenticated, "missing Authorization: Bearer header; send Authorization: Bearer $%s", EnvAdminToken)
	}
	return r, gateway.Errorf(gateway.EUnauthenticated, "admin token not accepted; send Authorization: Bearer $%s", EnvAdminToken)
}

func (h *handler) isAdminToken(token string) bool {
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], h.tokenHash[:]) == 1
}

// bearer returns the token of "Authorization: Bearer <token>" (scheme
// case-insensitive, RFC 7235) and whether one was sent.
func bearer(r *http.Request) (string, bool) {
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	return token, strings.EqualFold(scheme, "Bearer") && token != ""
}

// readerWorkspace returns the workspace of a read-only token caller, and
// false for the admin token (which may read every workspace).
func readerWorkspace(ctx context.Context) (string, bool) {
	ws, ok := ctx.Value(readerKey{}).(string)
	return ws, ok
}

// checkReader refuses a read-only token caller reading another workspace.
func checkReader(ctx context.Context, workspaceID string) error {
	if ws, ok := readerWorkspace(ctx); ok && ws != workspaceID {
		return gateway.Errorf(gateway.EForbidden, "this API token belongs to workspace %q; it can read only that workspace", ws)
	}
	return nil
}

// WorkspaceAdminRoutes are the routes, with their methods, a workspace
// owner or admin signed in with a console sign-in JWT may use (docs/requirements.md#api-tokens:
// "Einstellungen → Anmeldedaten → API-Tokens (Owner oder
// Admin)"): create, list and revoke its workspace's API tokens, read the
// workspace and its members, read and set its external limits (step
// 4: "Derselbe Einstellungs-Tab trägt die externen Limits des Workspace";
// the workspace-wide daily cap stays the operator's), and list and decide
// the backend's human gates of its workspace, the decisions
// docs/requirements.md#human-gates leaves to a person in SupaCloud. Every other route
// answers such a caller 403. Revoking checks that the token belongs to the
// caller's workspace.
var WorkspaceAdminRoutes = map[string][]string{
	Prefix + "/workspaces/{ws}":                    {http.MethodGet},
	Prefix + "/workspaces/{ws}/members":            {http.MethodGet},
	Prefix + "/workspaces/{ws}/external-limits":    {http.MethodGet, http.MethodPut},
	Prefix + "/workspaces/{ws}/api-tokens":         {http.MethodGet, http.MethodPost},
	Prefix + "/workspaces/{ws}" + GatesPath:        {http.MethodGet},
	Prefix + "/workspaces/{ws}" + GateDecisionPath: {http.MethodPost},
	Prefix + "/api-tokens/{fingerprint}":           {http.MethodGet, http.MethodDelete},
	Prefix + OpenAPIPath:                           {http.MethodGet},
}

// The member roles that may manage API tokens (docs/requirements.md#api-tokens).
const (
	roleOwner = "owner"
	roleAdmin = "admin"
)

type workspaceAdminKey struct{}

// workspaceAdmin is a caller signed in with a console sign-in JWT whose
// membership authenticate checked on this request.
type workspaceAdmin struct {
	workspaceID, userID, role string
}

// authorizeWorkspaceAdmin checks, on every request, that user is a member
// of ws with the owner or admin role: a demoted or removed member loses
// access at once.
func (h *handler) authorizeWorkspaceAdmin(r *http.Request, ws, user string) (*http.Request, error) {
	m, err := h.store.Member(r.Context(), ws, user)
	if gateway.ErrorCodeOf(err) == gateway.ENotFound {
		return r, gateway.Errorf(gateway.EForbidden, "user %q is not a member of workspace %q; only its owners and admins may manage its API tokens — ask an owner to add you, or use %s", user, ws, EnvAdminToken)
	}
	if err != nil {
		return r, err
	}
	if m.Role != roleOwner && m.Role != roleAdmin {
		return r, gateway.Errorf(gateway.EForbidden, "user %q has the role %q in workspace %q; API tokens need the owner or admin role — ask an owner to change your role", user, m.Role, ws)
	}
	wa := &workspaceAdmin{workspaceID: ws, userID: user, role: m.Role}
	return r.WithContext(context.WithValue(r.Context(), workspaceAdminKey{}, wa)), nil
}

// workspaceAdminOf returns the workspace admin caller of ctx, if any.
func workspaceAdminOf(ctx context.Context) (*workspaceAdmin, bool) {
	wa, ok := ctx.Value(workspaceAdminKey{}).(*workspaceAdmin)
	return wa, ok
}

// allows refuses a route outside WorkspaceAdminRoutes (routeOK false) and
// a scoped route of another workspace.
func (wa *workspaceAdmin) allows(r *http.Request, scoped, routeOK bool) error {
	if !routeOK {
		return gateway.Errorf(gateway.EForbidden, "as an %s of workspace %q you may create, list and revoke its API tokens, set its external limits, decide its human gates and read its settings; %s %s needs %s",
			wa.role, wa.workspaceID, r.Method, clip(r.URL.Path), EnvAdminToken)
	}
	if ws := mux.Vars(r)["ws"]; scoped && ws != wa.workspaceID {
		return gateway.Errorf(gateway.EForbidden, "you are an %s of workspace %q, not of %q; you may manage only that workspace's API tokens", wa.role, wa.workspaceID, clip(ws))
	}
	return nil
}
