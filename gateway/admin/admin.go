// Package admin serves the operator API under /admin/v1 (docs/http.md):
// workspaces, members, agent profiles, permission overrides, seat types,
// org plans, tasks, scmt_ API tokens, external limits and the audit trail.
//
// Every request is authenticated with MCPGATE_ADMIN_TOKEN, every input is
// validated before the store is touched (bad input changes nothing), and
// every error leaves through one writer that maps gateway error codes to
// HTTP statuses.
package admin

import (
	"crypto/sha256"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"go.uber.org/zap"
)

// EnvAdminToken is the variable holding the admin bearer token (README.md,
// Configuration); it is named in the "admin API is off" reply.
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
	// default profile, overrides, tasks, external limits) with that
	// workspace id, and with ""
	// after global changes (seat types, org plans). Caches use it to
	// invalidate. It runs on the request goroutine; keep it fast.
	OnChange func(workspaceID string)
	// TokenReader is an optional hook for scmt_ tokens with management:read
	// (docs/http.md): it returns the token's workspace and ok=true when r
	// carries such an active token. Such callers may only GET, and only
	// their own workspace's API tokens and audit events. Nil: admin token only.
	TokenReader func(r *http.Request) (workspaceID string, ok bool)
	// Logger receives internal errors and one line per change; nil is a no-op.
	Logger *zap.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// MaxBodyBytes bounds request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
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
// with /admin/v1/ and answers JSON: 200 with the stored resource for PUT,
// 201 for token creation, 204 for revocation, and errors as
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
	if h.opts.Token == "" && h.opts.TokenReader == nil {
		h.writeError(w, r, notFound("admin API is off; set %s", EnvAdminToken))
		return
	}
	r, err := h.authenticate(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	h.router.ServeHTTP(w, r)
}

// routes lists docs/http.md; each path maps methods to handlers so a wrong
// method gets 405 with Allow.
func (h *handler) routes() *mux.Router {
	r := mux.NewRouter()
	r.NotFoundHandler = http.HandlerFunc(h.noRoute)
	ws := Prefix + "/workspaces/{ws}"
	h.route(r, ws, methods{http.MethodPut: h.putWorkspace})
	h.route(r, ws+"/members/{user}", methods{http.MethodPut: h.putMember})
	h.route(r, ws+"/members/{user}/permission-overrides", methods{http.MethodPut: h.putMemberOverrides})
	h.route(r, ws+"/profiles/{profile}", methods{http.MethodPut: h.putProfile})
	h.route(r, ws+"/default-profile", methods{http.MethodPut: h.putDefaultProfile})
	h.route(r, ws+"/permission-overrides", methods{http.MethodPut: h.putWorkspaceOverrides})
	h.route(r, ws+"/tasks/{task}", methods{http.MethodPut: h.putTask})
	h.route(r, ws+"/api-tokens", methods{http.MethodPost: h.createToken, http.MethodGet: h.listTokens})
	h.route(r, ws+"/external-limits", methods{http.MethodPut: h.putExternalLimits})
	h.route(r, Prefix+"/seat-types/{name}", methods{http.MethodPut: h.putSeatType})
	h.route(r, Prefix+"/org-plans/{name}", methods{http.MethodPut: h.putOrgPlan})
	h.route(r, Prefix+"/api-tokens/{fingerprint}", methods{http.MethodDelete: h.revokeToken})
	h.route(r, Prefix+"/audit-events", methods{http.MethodGet: h.listAuditEvents})
	return r
}

func (h *handler) route(r *mux.Router, path string, m methods) {
	r.Handle(path, h.dispatch(m))
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
