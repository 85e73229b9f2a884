// Package admin serves the operator API under /admin/v1 (docs/http.md):
// workspaces, members, agent profiles, permission overrides, seat types,
// org plans, tasks, scmt_ API tokens, external limits, the audit trail,
// the gateway's approvals and the backend's human gates, and the live
// policy (its revision, and reloading it).
//
// Every request is authenticated with MCPGATE_ADMIN_TOKEN, every input is
// validated before the store is touched (bad input changes nothing), and
// every error leaves through one writer that maps gateway error codes to
// HTTP statuses.
package admin

import (
	"crypto/sha256"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
)

// EnvAdminToken is the variable holding the admin bearer token (docs/configuration.md);
// it is named in the "admin API is off" reply.
const EnvAdminToken = "MCPGATE_ADMIN_TOKEN"

// DefaultMaxBodyBytes bounds a request body when Options.MaxBodyBytes is 0.
const DefaultMaxBodyBytes int64 = 64 << 10

// Prefix is the path prefix the handler serves; mount it with
// router.PathPrefix(admin.Prefix).Handler(h).
const Prefix = "/admin/v1"

// Options configures NewHandler. Only Token is needed to switch the API on.
type Options struct {
	// Token is MCPGATE_ADMIN_TOKEN. Empty (and no TokenReader) turns the
	// admin API off: every path answers 404 "admin API is off".
	Token string
	// ValidateGrant, when set, checks each profile allowlist entry; its error
	// message is returned as a 400 (the server passes a checker that rejects
	// entries that grant no tool).
	ValidateGrant func(entry string) error
	// OnChange, when set, is called after a successful change that can alter
	// what a workspace's callers may see or do (workspace, members, profiles,
	// default profile, overrides, tasks, external limits; PUT or DELETE)
	// with that workspace id, and with "" after global changes (seat
	// types, org plans). Caches use it to
	// invalidate. It runs on the request goroutine; keep it fast.
	OnChange func(workspaceID string)
	// TokenReader is an optional hook for scmt_ tokens with management:read
	// (docs/http.md): it returns the token's workspace and ok=true when r
	// carries such an active token. Such callers may only GET, and only
	// their own workspace's paths (/workspaces/{ws}/…), its audit events
	// and the OpenAPI description; seat types, org plans and the workspace
	// list are the admin token's. Nil: admin token only.
	TokenReader func(r *http.Request) (workspaceID string, ok bool)
	// WorkspaceAdmin is an optional hook for console sign-in JWTs of
	// workspace members (docs/http.md, "Workspace owners and admins"): it
	// returns the token's workspace and user and ok=true when r carries a
	// valid one. Such a caller reaches only the routes of WorkspaceAdminRoutes,
	// only in its own workspace, and only while its member role there is
	// owner or admin, checked on every request
	// (docs/requirements.md#api-tokens). Nil: no such callers.
	WorkspaceAdmin func(r *http.Request) (workspaceID, userID string, ok bool)
	// Logger receives internal errors and one line per change; nil is a no-op.
	Logger *zap.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// MaxBodyBytes bounds request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Explain answers POST /admin/v1/explain (admin token only); nil
	// answers it 404.
	Explain Explainer
	// Policy, when set, is shown by GET /policy and reloaded by POST
	// /policy/reload (admin token only); nil answers both 404.
	Policy Policy
	// Approvals serves the approval routes (list pending, approve, reject,
	// the approvals stream; admin token only); nil answers them 404.
	Approvals Approvals
	// Gates, when set, is the backend adapter's human gates, listed and
	// decided under /workspaces/{ws}/gates (admin token, a workspace
	// owner's or admin's console sign-in; management:read tokens list);
	// nil answers those routes 501: the backend decides its gates itself.
	Gates approvals.HumanGates
	// Upstreams serves /upstreams (the bridged upstreams, their tools'
	// pins and the decisions on quarantined ones; admin token only); nil
	// answers those routes 404.
	Upstreams Upstreams
	// Chain, when set, is the store's audit chain, shown by GET
	// /audit-chain and verified by GET /audit-chain/verify (admin token
	// only); nil answers both 404.
	Chain AuditChain
	// Audit, when set, records every write (after authentication, with
	// its actor, before and after) and every refused credential
	// (docs/operations.md, "Audit trail"); nil records nothing.
	Audit Auditor
}

// handler is the admin API; see NewHandler.
type handler struct {
	store     Store
	opts      Options
	log       *zap.Logger
	tokenHash [sha256.Size]byte
	router    *mux.Router
}

// NewHandler returns the admin API over store. It serves paths starting
// with /admin/v1/ and answers JSON: 200 with the stored resource for PUT
// and GET, 201 for token creation, 204 for DELETE (200 with what falls
// back for a profile), the OpenAPI description at OpenAPIPath, and errors as
// {"error":{"code","message"}} with 400 (bad input), 401 (credential), 403
// (read-only token), 404 (unknown route or parent, or API off), 405, 409
// and 500 (cause logged, never shown).
func NewHandler(store Store, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	h := &handler{store: store, opts: opts, log: opts.Logger, tokenHash: sha256.Sum256([]byte(opts.Token))}
	h.router = h.routes()
	return h
}

// ServeHTTP checks that the API is on and the caller authenticated before
// routing, so unauthenticated callers learn nothing about the routes.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if h.opts.Token == "" && h.opts.TokenReader == nil && h.opts.WorkspaceAdmin == nil {
		h.writeError(w, r, notFound("admin API is off; set %s", EnvAdminToken))
		return
	}
	r, err := h.authenticate(r)
	if err != nil {
		if h.opts.Audit != nil && gateway.ErrorCodeOf(err) == gateway.EUnauthenticated {
			h.opts.Audit.RefusedRequest(AuditSurface, r, err)
		}
		h.writeError(w, r, err)
		return
	}
	if h.opts.Audit != nil && r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.audited(w, r)
		return
	}
	h.router.ServeHTTP(w, r)
}

// routes lists every route (docs/admin.md; openapi.yaml
// describes the same). Each method of a path is a route of its own, so
// router.Walk sees paths and methods; a path's last route answers its
// other methods with 405 and Allow.
func (h *handler) routes() *mux.Router {
	r := mux.NewRouter()
	r.NotFoundHandler = http.HandlerFunc(h.noRoute)
	const get, put, del = http.MethodGet, http.MethodPut, http.MethodDelete
	ws := Prefix + "/workspaces/{ws}"
	h.route(r, Prefix+"/workspaces", methods{get: h.listWorkspaces})
	h.route(r, ws, methods{put: h.putWorkspace, get: h.getWorkspace})
	h.route(r, ws+"/members", methods{get: h.listMembers})
	h.route(r, ws+"/members/{user}", methods{put: h.putMember, get: h.getMember, del: h.deleteMember})
	h.route(r, ws+"/members/{user}/permission-overrides", methods{put: h.putMemberOverrides, get: h.getMemberOverrides})
	h.route(r, ws+"/members/{user}/permission-overrides/{key}", methods{del: h.deleteMemberOverride})
	h.route(r, ws+"/profiles", methods{get: h.listProfiles})
	h.route(r, ws+"/profiles/{profile}", methods{put: h.putProfile, get: h.getProfile, del: h.deleteProfile})
	h.route(r, ws+"/default-profile", methods{put: h.putDefaultProfile, get: h.getDefaultProfile})
	h.route(r, ws+"/permission-overrides", methods{put: h.putWorkspaceOverrides, get: h.getWorkspaceOverrides})
	h.route(r, ws+"/permission-overrides/{key}", methods{del: h.deleteWorkspaceOverride})
	h.route(r, ws+"/tasks", methods{get: h.listTasks})
	h.route(r, ws+"/tasks/{task}", methods{put: h.putTask, get: h.getTask})
	h.route(r, ws+"/api-tokens", methods{http.MethodPost: h.createToken, get: h.listTokens})
	h.route(r, ws+"/external-limits", methods{put: h.putExternalLimits, get: h.getExternalLimits})
	h.route(r, ws+"/flow-rules", methods{put: h.putFlowRules, get: h.getFlowRules})
	h.route(r, ws+GatesPath, methods{get: h.listGates})
	h.route(r, ws+GateDecisionPath, methods{http.MethodPost: h.decideGate})
	h.route(r, Prefix+"/seat-types", methods{get: h.listSeatTypes})
	h.route(r, Prefix+"/seat-types/{name}", methods{put: h.putSeatType, get: h.getSeatType, del: h.deleteSeatType})
	h.route(r, Prefix+"/org-plans", methods{get: h.listOrgPlans})
	h.route(r, Prefix+"/org-plans/{name}", methods{put: h.putOrgPlan, get: h.getOrgPlan, del: h.deleteOrgPlan})
	h.route(r, Prefix+"/api-tokens/{fingerprint}", methods{get: h.getToken, del: h.revokeToken})
	h.route(r, Prefix+"/audit-events", methods{get: h.listAuditEvents})
	h.route(r, Prefix+"/audit-chain", methods{get: h.getAuditChain})
	h.route(r, Prefix+"/audit-chain/verify", methods{get: h.verifyAuditChain})
	h.route(r, Prefix+"/policy", methods{get: h.policyStatus})
	h.route(r, Prefix+"/policy/reload", methods{http.MethodPost: h.reloadPolicy})
	h.route(r, Prefix+OpenAPIPath, methods{get: h.openAPI})
	h.route(r, Prefix+ExplainPath, methods{http.MethodPost: h.explain})
	h.approvalRoutes(r)
	h.upstreamRoutes(r)
	return r
}

// readerGlobal are the paths outside /workspaces/{ws} that read-only
// token callers may GET: the audit listing scopes itself to the token's
// workspace, and the description of the API holds no data.
var readerGlobal = []string{Prefix + "/audit-events", Prefix + OpenAPIPath}

// route registers one route per method of path, then a method-less route
// that answers the other methods with 405.
func (h *handler) route(r *mux.Router, path string, m methods) {
	allowed := slices.Sorted(maps.Keys(m))
	scoped := strings.Contains(path, "{ws}")
	for _, method := range allowed {
		r.Handle(path, h.endpoint(m[method], scoped, slices.Contains(readerGlobal, path),
			slices.Contains(WorkspaceAdminRoutes[path], method))).Methods(method)
	}
	r.Handle(path, methodNotAllowed(strings.Join(allowed, ", ")))
}

// changed logs a successful change and tells OnChange.
func (h *handler) changed(r *http.Request, workspaceID string) {
	h.log.Info("admin change", logChange(r)...)
	if h.opts.OnChange != nil {
		h.opts.OnChange(workspaceID)
	}
}

// logChange is the log context of one change: method and path (ids only,
// never a body, which may hold a token).
func logChange(r *http.Request) []zap.Field {
	return []zap.Field{zap.String("method", r.Method), zap.String("path", r.URL.Path)}
}
