package console

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/gateway/console/consolesession"
)

// FormCookieName is the cookie holding the sign-in form's CSRF token: the
// form must send the same value back. It needs no server state, so the
// form may be served by one replica and submitted to another.
const FormCookieName = "mcpgate_console_form"

// apiTokenPrefix starts every scmt_ API token (docs/requirements.md#api-tokens).
const apiTokenPrefix = "scmt_"

// loginView is the sign-in page's data. It never carries the token the
// visitor typed: a refused sign-in shows an empty field. Field names the
// field the message belongs to ("token" or "workspace").
type loginView struct {
	Error     string
	Field     string
	Operator  string
	Workspace string
}

// loginPage shows the sign-in form, with a CSRF token kept in a cookie of
// its own (FormCookieName) like every other form's.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	sess, err := c.current(r)
	if err != nil {
		c.unavailable(w, r, err)
		return
	}
	if sess != nil {
		http.Redirect(w, r, c.home(sess), http.StatusSeeOther)
		return
	}
	form := c.formSession(w, r)
	status, v := http.StatusOK, loginView{}
	if f, ok := signInRefusal(r, form); ok {
		status, v = f.Status, f.View
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
	}
	c.render(w, r, status, "login.html", form, v)
}

// RefusalCookieName is the cookie that carries a refused sign-in from its
// POST to the GET of the sign-in page the POST is redirected to
// (POST/redirect/GET, so a browser's refresh never posts the token
// again): the reply's status, Retry-After and the form's view, sealed
// with the sign-in form's token (FormCookieName), so it opens only beside
// the form cookie it was made for. Like the form cookie it needs no
// server state; its path is Prefix+"/login" and it lasts refusalTTL.
const RefusalCookieName = "mcpgate_console_refusal"

// refusalTTL is how long a refused sign-in's page is shown again on a
// refresh: long enough to read it, short enough that a later visit starts
// from a clean form.
const refusalTTL = 5 * time.Minute

// maxRefusalCookie bounds the refusal cookie's value, well inside the
// 4096 bytes browsers keep per cookie; a longer one (a very long name or
// workspace typed into the form) is not set and the page is the POST's
// own reply instead.
const maxRefusalCookie = 3072

// signInRefused is a refused sign-in as the sign-in page shows it after
// the redirect: the status it is answered with, its Retry-After in
// seconds ("" for none) and the form's view.
type signInRefused struct {
	Status     int       `json:"status"`
	RetryAfter string    `json:"retry_after,omitempty"`
	View       loginView `json:"view"`
}

// refuseSignIn answers a refused sign-in POST with a redirect to the
// sign-in page, which then shows v with status (the refusal cookie,
// RefusalCookieName). The Retry-After a limited sign-in set moves to that
// page: on a 303 it would ask the browser to wait before following it.
func (c *Console) refuseSignIn(w http.ResponseWriter, r *http.Request, form *session, status int, v loginView) {
	b, err := json.Marshal(signInRefused{Status: status, RetryAfter: w.Header().Get("Retry-After"), View: v})
	value := base64.RawURLEncoding.EncodeToString(seal(form.csrf, b))
	if err != nil || len(value) > maxRefusalCookie {
		c.render(w, r, status, "login.html", form, v)
		return
	}
	w.Header().Del("Retry-After")
	http.SetCookie(w, &http.Cookie{Name: RefusalCookieName, Value: value, Path: Prefix + "/login", MaxAge: int(refusalTTL.Seconds()),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}

// signInRefusal reads the refusal cookie beside the sign-in form's token
// form; false when there is none or it was not sealed for that token.
func signInRefusal(r *http.Request, form *session) (signInRefused, bool) {
	var f signInRefused
	ck, err := r.Cookie(RefusalCookieName)
	if err != nil {
		return f, false
	}
	sealed, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil {
		return f, false
	}
	b, err := unseal(form.csrf, sealed)
	if err != nil || json.Unmarshal(b, &f) != nil || f.Status < 400 || f.Status > 599 {
		return signInRefused{}, false
	}
	return f, true
}

// formSession returns the signed-out visitor's pseudo-session whose CSRF
// token is the form cookie's value, setting a new cookie when there is
// none.
func (c *Console) formSession(w http.ResponseWriter, r *http.Request) *session {
	if ck, err := r.Cookie(FormCookieName); err == nil && len(ck.Value) >= 32 {
		return &session{csrf: ck.Value}
	}
	v := randomToken()
	http.SetCookie(w, &http.Cookie{Name: FormCookieName, Value: v, Path: Prefix, MaxAge: int(signInTTL.Seconds()),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	return &session{csrf: v}
}

// home is where a signed-in visitor starts: the workspace list for the
// admin token, its own workspace for a read-only API token or workspace
// admin.
func (c *Console) home(sess *session) string {
	if sess.reader != "" {
		return Prefix + "/workspaces/" + esc(sess.reader)
	}
	return Prefix + "/workspaces"
}

// login checks the form's CSRF token and the failed sign-in limits, then
// the credential: the console asks the admin API itself whether it is the
// admin token (GET of the workspace list), or, refused the list with 403,
// an scmt_ token with management:read or a workspace admin's console
// sign-in JWT (then GET of the workspace the form names, or the JWT's
// workspace_id, must succeed, and the session is bound to that
// workspace). On success a new session (a new id, so a planted cookie
// cannot ride along) is stored. A refused sign-in, whatever refused it, is
// answered with a redirect to the sign-in page that shows why
// (refuseSignIn), so a refresh never posts the token again (issue 30,
// point 8).
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	form := &session{}
	if ck, err := r.Cookie(FormCookieName); err == nil {
		form.csrf = ck.Value
	}
	v := loginView{Operator: strings.TrimSpace(r.PostFormValue("operator")), Workspace: strings.TrimSpace(r.PostFormValue("workspace"))}
	if form.csrf == "" || !form.csrfOK(r.PostFormValue("csrf")) {
		// Shown on a fresh form (a new form token when the cookie is gone).
		v.Field, v.Error = "token", "The sign-in form's security token is missing or has expired, so you were not signed in. Enter the token again in this form and sign in."
		c.refuseSignIn(w, r, c.formSession(w, r), http.StatusForbidden, v)
		return
	}
	token := r.PostFormValue("token")
	refuse := func(code int, field, msg string) {
		v.Field, v.Error = field, msg
		c.refuseSignIn(w, r, form, code, v)
	}
	addr := clientAddress(r)
	d, global := c.limits.begin(r.Context(), addr)
	if d > 0 {
		c.limits.signins.WithLabelValues(outcomeLimited).Inc()
		w.Header().Set("Retry-After", retryAfter(d))
		refuse(http.StatusTooManyRequests, "token", "Too many failed sign-ins from your address. Wait "+retryAfter(d)+" seconds, then sign in again; the token was not checked.")
		return
	}
	failure := false
	defer func() { c.limits.end(r.Context(), addr, failure) }()
	if token == "" {
		refuse(http.StatusBadRequest, "token", "Enter the gateway's admin token (the value of MCPGATE_ADMIN_TOKEN), an API token with management:read, or your console sign-in token.")
		return
	}
	failed := func(code int, field, msg string) {
		failure = true
		if global > 0 {
			// Past the global limit a wrong credential is answered as
			// limited; a correct one still signs in (SignInLimits). It
			// was checked, so it counts as refused (end), not limited.
			w.Header().Set("Retry-After", retryAfter(global))
			code, msg = http.StatusTooManyRequests, "Too many failed sign-ins to this gateway. Check the token, wait "+retryAfter(global)+" seconds, then sign in again."
		}
		refuse(code, field, msg)
	}
	now := c.opts.Now()
	proto := session{token: token, operator: v.Operator, kind: consolesession.Admin, expires: now.Add(c.opts.SessionTTL)}
	err := c.call(r.Context(), token, http.MethodGet, "/workspaces?limit=1", nil, nil)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusForbidden:
		// An API token or a workspace admin: bound to one workspace.
		proto.kind = consolesession.Reader
		if !strings.HasPrefix(token, apiTokenPrefix) {
			proto.kind = consolesession.WorkspaceAdmin
			claims := unverifiedClaims(token)
			if v.Workspace == "" {
				v.Workspace = claims.WorkspaceID
			}
			proto.user = claims.Subject
			if exp := time.Unix(claims.Exp, 0); claims.Exp > 0 && exp.Before(proto.expires) {
				proto.expires = exp
			}
		}
		if v.Workspace == "" {
			refuse(http.StatusBadRequest, "workspace", "This token may only use its own workspace. Enter that workspace's id, then sign in again.")
			return
		}
		if err := c.call(r.Context(), token, http.MethodGet, "/workspaces/"+esc(v.Workspace), nil, nil); err != nil {
			failed(status(err), "workspace", err.Error())
			return
		}
		proto.reader = v.Workspace
	case errors.As(err, &ae) && ae.Status == http.StatusUnauthorized:
		failed(http.StatusUnauthorized, "token", "That token was not accepted. Sign in with the gateway's admin token (the value of MCPGATE_ADMIN_TOKEN), an active API token with management:read, or an unexpired console sign-in token.")
		return
	case err != nil:
		refuse(http.StatusBadGateway, "token", "The admin API could not check the token: "+err.Error())
		return
	}
	if ck, err := r.Cookie(CookieName); err == nil && ck.Value != "" {
		_ = c.sessions.DeleteSession(r.Context(), idHash(ck.Value))
	}
	next, err := c.startSession(r.Context(), proto)
	if err != nil {
		c.unavailable(w, r, err)
		return
	}
	c.limits.signins.WithLabelValues(outcomeSignedIn).Inc()
	c.setCookie(w, r, next)
	http.SetCookie(w, &http.Cookie{Name: FormCookieName, Value: "", Path: Prefix, MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.SetCookie(w, &http.Cookie{Name: RefusalCookieName, Value: "", Path: Prefix + "/login", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, c.home(next), http.StatusSeeOther)
}

// jwtHint is what the console reads, unverified, from a console sign-in
// JWT: the workspace to bind the session to when the form names none, the
// user, and the expiry the session must not outlive. The admin API
// verifies the token itself on every call.
type jwtHint struct {
	Subject     string `json:"sub"`
	WorkspaceID string `json:"workspace_id"`
	Exp         int64  `json:"exp"`
}

// unverifiedClaims decodes the payload of a JWT without checking it; the
// zero value for anything that is not one.
func unverifiedClaims(token string) jwtHint {
	var h jwtHint
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return h
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err == nil {
		_ = json.Unmarshal(b, &h)
	}
	return h
}

// logout ends the session (POST with its CSRF token) and clears the cookie.
func (c *Console) logout(w http.ResponseWriter, r *http.Request, sess *session) {
	if err := c.sessions.DeleteSession(r.Context(), idHash(sess.id)); err != nil {
		c.unavailable(w, r, err)
		return
	}
	c.clearCookie(w, r)
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}
