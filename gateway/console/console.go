// Package console serves the operator's web console under /console:
// server-rendered pages (html/template, every asset embedded) over the
// admin API, which it calls in-process through the admin API's own
// http.Handler, so every change goes through the admin API's
// authentication, validation and messages.
//
// A visitor signs in with the admin token; with an scmt_ API token
// holding management:read for a read-only view of that token's workspace
// (the admin API answers such a token's GETs there and refuses the rest;
// the console shows it no change form and refuses its POSTs); or with a
// console sign-in JWT (aud mcpgate-console, signed with the agent session
// key) of a workspace member, who may create, list and revoke that
// workspace's API tokens and read its settings while the admin API finds
// the member's role owner or admin (docs/requirements.md#api-tokens).
//
// Sessions live in a SessionStore: the audit store when the gateway
// passes one (so any replica serves a signed-in visitor, and a restart
// keeps them), else this process's memory. The browser holds only a
// random session id in an HttpOnly, SameSite=Strict cookie (Secure over
// TLS) that expires; the store keeps a hash of it and the credential
// sealed with a key derived from it, and the console sends the
// credential as the bearer of each admin API call it makes for that
// visitor. Every form carries the session's CSRF token (the sign-in form
// a token matched against a cookie of its own, so it needs no stored
// state), and a POST without it is refused with 403 before anything
// changes. Failed sign-ins are limited per client address and overall
// (SignInLimits). The token is never written into a page.
//
// The admin API's replies are read into the types that own them (the
// domain's Workspace, Member, Profile, APIToken, AuditEvent and
// ToolPin, approvals.Approval and Gate, policystatus.Status),
// and an approval's arguments are shown by approvals.Pretty, as the
// elicitation shows them: the console keeps no copy of them. It imports
// the domain and those owners, never a store or the wiring (test/layout).
package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Prefix is the path the console is served under; mount it with
// router.PathPrefix(console.Prefix).Handler(h).
const Prefix = "/console"

// CookieName is the session cookie's name. Its path is Prefix.
const CookieName = "mcpgate_console"

// Defaults for Options fields left zero.
const (
	// DefaultSessionTTL is how long a signed-in session lasts.
	DefaultSessionTTL = 8 * time.Hour
	// DefaultMaxSessions bounds the in-memory session table.
	DefaultMaxSessions = 10_000
	// signInTTL is how long the sign-in form's token cookie lasts.
	signInTTL = 30 * time.Minute
	// DefaultApprovalsRefresh is how often the approvals page reloads
	// itself when Options.ApprovalsRefresh is 0: three loads fit in the
	// presence TTL, so one slow load does not drop the operator.
	DefaultApprovalsRefresh = 5 * time.Second
)

// Options configures New.
type Options struct {
	// Admin is the admin API's handler (serving paths under AdminPrefix).
	// The console sends it requests with the signed-in visitor's token.
	// Required.
	Admin http.Handler
	// AdminPrefix is the admin API's path prefix, "/admin/v1".
	AdminPrefix string
	// SessionTTL is the lifetime of a signed-in session; 0 means
	// DefaultSessionTTL.
	SessionTTL time.Duration
	// MaxSessions bounds the in-memory session table (Sessions nil); 0
	// means DefaultMaxSessions. Signed-out visitors take no room (the
	// sign-in form's CSRF token rides in a cookie of its own); when the
	// table is full of live signed-in sessions a sign-in is answered 503.
	MaxSessions int
	// Sessions keeps signed-in sessions where every replica reads them;
	// nil keeps them in memory (one process, MaxSessions).
	Sessions SessionStore
	// SignInLimits bounds failed sign-ins; zero fields take the defaults
	// of DefaultSignInLimits.
	SignInLimits SignInLimits
	// Registerer, when set, receives the console's metrics
	// (mcpgate_console_signins_total).
	Registerer prometheus.Registerer
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Approvers, when set, counts an operator who has the approvals page
	// open as an approver (see Approvers); nil: the page counts nobody,
	// and calls that need an approval wait only for an approvals stream.
	Approvers Approvers
	// ApprovalsRefresh is how often the approvals page (the inbox's
	// Pending approvals tab; its Human gates tab never reloads itself)
	// reloads itself (a meta refresh: the console runs no script),
	// renewing the operator's presence each time; 0 means
	// DefaultApprovalsRefresh.
	ApprovalsRefresh time.Duration
}

// Approvers records operators present on the approvals page;
// gateway/approvals' Service implements it. An operator (signed in with
// the admin token; a read-only session never counts) is Present each time
// their approvals page loads, under an id bound to their console session,
// and counts as connected until PresenceTTL (approvals.DefaultPresenceTTL,
// 15 s) passes without another load; sign-out makes them Absent at once.
type Approvers interface {
	// Present records approver id as connected for PresenceTTL from now.
	Present(ctx context.Context, id string) error
	// Absent forgets approver id at once.
	Absent(ctx context.Context, id string) error
	// PresenceTTL is how long a Present approver counts without renewal.
	PresenceTTL() time.Duration
}

// Console is the console's http.Handler; see New.
type Console struct {
	opts     Options
	sessions SessionStore
	limits   *signInLimiter
	mux      *http.ServeMux
}

// New returns the console. It serves GET and POST under Prefix: the
// sign-in page; the workspaces, members, permission overrides (with each
// member's resolved precedence chain), agent profiles and API tokens
// pages; the approvals inbox (tabs Pending approvals and Human gates),
// audit events, decision playground and policy status; the bridged
// upstreams with their tools' pinned definitions under review; and the
// embedded stylesheet.
func New(opts Options) *Console {
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ApprovalsRefresh <= 0 {
		opts.ApprovalsRefresh = DefaultApprovalsRefresh
	}
	c := &Console{opts: opts, sessions: opts.Sessions, limits: newSignInLimiter(opts.SignInLimits, opts.Registerer)}
	if c.sessions == nil {
		c.sessions = newMemorySessions(opts.MaxSessions)
	}
	c.mux = c.routes()
	return c
}

// ServeHTTP sets the headers every console reply carries and routes.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	c.mux.ServeHTTP(w, r)
}

// pageFunc serves one page for a signed-in visitor.
type pageFunc func(w http.ResponseWriter, r *http.Request, sess *session)

func (c *Console) routes() *http.ServeMux {
	m := http.NewServeMux()
	m.Handle("GET "+Prefix+"/static/", http.StripPrefix(Prefix, http.FileServerFS(staticFS)))
	m.HandleFunc("GET "+Prefix+"/login", c.loginPage)
	m.HandleFunc("POST "+Prefix+"/login", c.login)
	m.HandleFunc("GET "+Prefix+"/{$}", c.signedIn(func(w http.ResponseWriter, r *http.Request, sess *session) {
		http.Redirect(w, r, c.home(sess), http.StatusSeeOther)
	}))
	m.HandleFunc("GET "+Prefix, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
	})
	m.HandleFunc("POST "+Prefix+"/logout", c.change(c.signOut))
	m.HandleFunc("GET "+shownPath, c.signedIn(c.shown))
	ws := Prefix + "/workspaces/{ws}"
	m.HandleFunc("GET "+Prefix+"/workspaces", c.signedIn(c.workspacesPage))
	m.HandleFunc("GET "+ws, c.signedIn(c.workspacePage))
	m.HandleFunc("POST "+ws+"/members", c.change(c.saveMember))
	m.HandleFunc("POST "+ws+"/members/{user}", c.change(c.saveMember))
	m.HandleFunc("POST "+ws+"/members/{user}/remove", c.change(c.removeMember))
	m.HandleFunc("GET "+ws+"/permissions", c.signedIn(c.permissionsPage))
	m.HandleFunc("POST "+ws+"/permissions", c.change(c.saveWorkspaceOverrides))
	m.HandleFunc("POST "+ws+"/members/{user}/permissions", c.change(c.saveMemberOverrides))
	m.HandleFunc("GET "+ws+"/profiles", c.signedIn(c.profilesPage))
	m.HandleFunc("GET "+ws+"/profiles/new", c.adminOnly(c.profileNewPage))
	m.HandleFunc("GET "+ws+"/profiles/{profile}", c.adminOnly(c.profileEditPage))
	m.HandleFunc("POST "+ws+"/profiles", c.change(c.saveProfile))
	m.HandleFunc("POST "+ws+"/default-profile", c.change(c.setDefaultProfile))
	m.HandleFunc("GET "+ws+"/tokens", c.signedIn(c.tokensPage))
	m.HandleFunc("POST "+ws+"/tokens", c.change(c.createToken))
	m.HandleFunc("POST "+ws+"/tokens/revoke", c.change(c.revokeToken))
	m.HandleFunc("POST "+ws+"/external-limits", c.change(c.saveLimits))
	m.HandleFunc("GET "+Prefix+"/approvals", c.signedIn(c.approvalsPage))
	m.HandleFunc("GET "+Prefix+"/approvals/gates", c.signedIn(c.gatesPage))
	m.HandleFunc("POST "+Prefix+"/approvals/{id}", c.change(c.decideApproval))
	m.HandleFunc("POST "+ws+"/gates/{gate}", c.change(c.decideGate))
	m.HandleFunc("GET "+Prefix+"/audit", c.signedIn(c.auditPage))
	m.HandleFunc("GET "+Prefix+"/playground", c.adminOnly(c.playgroundPage))
	m.HandleFunc("POST "+Prefix+"/playground", c.change(c.explainCall))
	m.HandleFunc("GET "+Prefix+"/policy", c.adminOnly(c.policyPage))
	m.HandleFunc("POST "+Prefix+"/policy/reload", c.change(c.reloadPolicy))
	m.HandleFunc("GET "+Prefix+"/upstreams", c.adminOnly(c.upstreamsPage))
	m.HandleFunc("POST "+Prefix+"/upstreams/{name}/tools/{tool}", c.change(c.decidePin))
	m.HandleFunc(Prefix+"/", func(w http.ResponseWriter, r *http.Request) {
		c.render(w, r, http.StatusNotFound, "error.html", nil, errorView{
			Title: "Not found", Message: "There is no console page at " + r.URL.Path + ". Start again from the workspaces list."})
	})
	return m
}

// current returns the visitor's live signed-in session, or nil; an error
// when the session store cannot be read.
func (c *Console) current(r *http.Request) (*session, error) {
	ck, err := r.Cookie(CookieName)
	if err != nil || ck.Value == "" {
		return nil, nil
	}
	return c.loadSession(r.Context(), ck.Value)
}

// unavailable answers 503 when the session store cannot be read or written.
func (c *Console) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	msg := "The console could not reach its session store (the audit store), so it cannot tell who you are. Check the gateway's database, then reload this page."
	if errors.Is(err, ErrSessionsFull) {
		msg = "The console has too many open sessions right now. Wait a few minutes for old ones to expire, then try again."
	}
	c.render(w, r, http.StatusServiceUnavailable, "error.html", nil, errorView{Title: "Unavailable", Message: msg})
}

// setCookie sends the session cookie: HttpOnly, SameSite=Strict, Secure
// when the request came over TLS, expiring with the session.
func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, sess *session) {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: sess.id, Path: Prefix,
		Expires: sess.expires, MaxAge: int(sess.expires.Sub(c.opts.Now()).Seconds()),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
}

// clearCookie removes the session cookie from the browser.
func (c *Console) clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: Prefix, MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// signedIn serves f to a signed-in visitor and sends anyone else to the
// sign-in page.
func (c *Console) signedIn(f pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, err := c.current(r)
		if err != nil {
			c.unavailable(w, r, err)
			return
		}
		if sess == nil {
			http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
			return
		}
		f(w, r, sess)
	}
}

// adminOnly serves f to a visitor signed in with the admin token; a
// read-only API token or workspace admin session gets 403 (these pages read what only the
// admin token may: other workspaces, approvals, the policy, explain).
func (c *Console) adminOnly(f pageFunc) http.HandlerFunc {
	return c.signedIn(func(w http.ResponseWriter, r *http.Request, sess *session) {
		if sess.reader != "" {
			c.render(w, r, http.StatusForbidden, "error.html", sess, errorView{Title: "Read-only",
				Message: "This page needs the admin token; you signed in for workspace " + sess.reader + " only. Sign in with MCPGATE_ADMIN_TOKEN to use it."})
			return
		}
		f(w, r, sess)
	})
}

// change guards every POST after sign-in: a signed-in session and its CSRF
// token in the form's "csrf" field, else 403 and nothing is done. A
// read-only API token session may only sign out; a workspace admin may
// also create and revoke its workspace's API tokens.
func (c *Console) change(f pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		sess, err := c.current(r)
		if err != nil {
			c.unavailable(w, r, err)
			return
		}
		if sess == nil {
			c.forbidden(w, r, "You are not signed in, or your session has expired. Sign in again, then repeat the change.")
			return
		}
		if !sess.csrfOK(r.PostFormValue("csrf")) {
			c.forbidden(w, r, "This form's security token is missing or does not belong to your session, so nothing was changed. Reload the page and submit the form again.")
			return
		}
		if sess.reader != "" && r.URL.Path != Prefix+"/logout" && !(sess.tokenAdmin() && tokenAction(r, sess.reader)) {
			msg := "You signed in with a read-only API token, so nothing was changed. Changes need the admin token (MCPGATE_ADMIN_TOKEN)."
			if sess.tokenAdmin() {
				msg = "As an owner or admin of workspace " + sess.reader + " you may create and revoke its API tokens, set its external limits and decide its human gates only, so nothing was changed. Other changes need the admin token (MCPGATE_ADMIN_TOKEN)."
			}
			c.forbidden(w, r, msg)
			return
		}
		f(w, r, sess)
	}
}

// tokenAction reports whether r is a POST creating or revoking an API
// token of workspace ws, setting its external limits (the API tokens tab
// of docs/requirements.md#api-tokens), or deciding one of its human gates (the decisions docs/requirements.md#human-gates
// leaves to a person in SupaCloud): what a workspace admin session may
// change.
func tokenAction(r *http.Request, ws string) bool {
	base := Prefix + "/workspaces/" + esc(ws)
	p := r.URL.EscapedPath()
	switch p {
	case base + "/tokens", base + "/tokens/revoke", base + "/external-limits":
		return true
	}
	gate, ok := strings.CutPrefix(p, base+"/gates/")
	return ok && gate != "" && !strings.Contains(gate, "/")
}

func (c *Console) forbidden(w http.ResponseWriter, r *http.Request, msg string) {
	c.render(w, r, http.StatusForbidden, "error.html", nil, errorView{Title: "Refused", Message: msg})
}

// apiError is the admin API's error reply: {"error":{"code","message"}}.
type apiError struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return e.Message }

// call sends one request to the admin API with the session's token and
// decodes a 2xx reply into out (when non-nil). Any other reply is an
// *apiError carrying the admin API's own message.
func (c *Console) call(ctx context.Context, token, method, path string, in, out any) error {
	var body io.Reader = http.NoBody
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.opts.AdminPrefix+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	c.opts.Admin.ServeHTTP(rec, req)
	if rec.status >= 200 && rec.status < 300 {
		if out == nil || rec.status == http.StatusNoContent {
			return nil
		}
		return json.Unmarshal(rec.body.Bytes(), out)
	}
	var e struct {
		Error apiError `json:"error"`
	}
	if json.Unmarshal(rec.body.Bytes(), &e) != nil || e.Error.Message == "" {
		e.Error.Message = "the admin API answered " + http.StatusText(rec.status)
	}
	e.Error.Status = rec.status
	return &e.Error
}

// recorder is the http.ResponseWriter of an in-process admin API call.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// esc escapes one path segment of an admin API path.
func esc(s string) string { return url.PathEscape(s) }

// lines splits a textarea into its non-blank lines, trimmed.
func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
