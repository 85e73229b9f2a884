package console

import (
	"errors"
	"net/http"
	"strings"
)

// loginView is the sign-in page's data. It never carries the token the
// visitor typed: a refused sign-in shows an empty field. Field names the
// field the message belongs to ("token" or "workspace").
type loginView struct {
	Error     string
	Field     string
	Operator  string
	Workspace string
}

// loginPage shows the sign-in form, starting a signed-out session so the
// form carries a CSRF token like every other.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	sess := c.current(r)
	if sess != nil && sess.token != "" {
		http.Redirect(w, r, c.home(sess), http.StatusSeeOther)
		return
	}
	if sess == nil {
		if sess = c.newSession(w, r, session{}); sess == nil {
			return
		}
	}
	c.render(w, r, http.StatusOK, "login.html", sess, loginView{})
}

// home is where a signed-in visitor starts: the workspace list for the
// admin token, its own workspace for a read-only API token.
func (c *Console) home(sess *session) string {
	if sess.reader != "" {
		return Prefix + "/workspaces/" + esc(sess.reader)
	}
	return Prefix + "/workspaces"
}

// newSession starts a session from proto (SessionTTL; signInTTL for a
// signed-out one) and sends its cookie; when the table is full it answers
// 503 and returns nil.
func (c *Console) newSession(w http.ResponseWriter, r *http.Request, proto session) *session {
	d := c.opts.SessionTTL
	if proto.token == "" {
		d = signInTTL
	}
	now := c.opts.Now()
	proto.expires = now.Add(d)
	sess := c.sessions.create(proto, now)
	if sess == nil {
		c.render(w, r, http.StatusServiceUnavailable, "error.html", nil, errorView{Title: "Busy",
			Message: "The console has too many open sessions right now. Wait a few minutes for old ones to expire, then try again."})
		return nil
	}
	c.setCookie(w, r, sess)
	return sess
}

// login checks the form's CSRF token, then the credential: the console
// asks the admin API itself whether it is the admin token (GET of the
// workspace list) or an scmt_ token with management:read (refused the list
// with 403; then GET of the workspace the form names must succeed, and the
// session only reads that workspace). On success the signed-out session is
// replaced by a new one (a new id, so a planted cookie cannot ride along).
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	sess := c.current(r)
	if sess == nil || !sess.csrfOK(r.PostFormValue("csrf")) {
		c.forbidden(w, r, "The sign-in form's security token is missing or has expired, so you were not signed in. Open the sign-in page again and submit it from there.")
		return
	}
	token := r.PostFormValue("token")
	v := loginView{Operator: strings.TrimSpace(r.PostFormValue("operator")), Workspace: strings.TrimSpace(r.PostFormValue("workspace"))}
	refuse := func(code int, field, msg string) {
		v.Field, v.Error = field, msg
		c.render(w, r, code, "login.html", sess, v)
	}
	if token == "" {
		refuse(http.StatusBadRequest, "token", "Enter the gateway's admin token (the value of MCPGATE_ADMIN_TOKEN), or an API token with management:read.")
		return
	}
	proto := session{token: token, operator: v.Operator}
	err := c.call(r.Context(), token, http.MethodGet, "/workspaces?limit=1", nil, nil)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusForbidden:
		// A read-only API token: it may read only its own workspace.
		if v.Workspace == "" {
			refuse(http.StatusBadRequest, "workspace", "This API token may only read its own workspace. Enter that workspace's id, then sign in again.")
			return
		}
		if err := c.call(r.Context(), token, http.MethodGet, "/workspaces/"+esc(v.Workspace), nil, nil); err != nil {
			refuse(status(err), "workspace", err.Error())
			return
		}
		proto.reader = v.Workspace
	case errors.As(err, &ae) && ae.Status == http.StatusUnauthorized:
		refuse(http.StatusUnauthorized, "token", "That token was not accepted. Sign in with the gateway's admin token (the value of MCPGATE_ADMIN_TOKEN), or an active API token with management:read.")
		return
	case err != nil:
		refuse(http.StatusBadGateway, "token", "The admin API could not check the token: "+err.Error())
		return
	}
	c.sessions.delete(sess.id)
	next := c.newSession(w, r, proto)
	if next == nil {
		return
	}
	http.Redirect(w, r, c.home(next), http.StatusSeeOther)
}

// logout ends the session (POST with its CSRF token) and clears the cookie.
func (c *Console) logout(w http.ResponseWriter, r *http.Request, sess *session) {
	c.sessions.delete(sess.id)
	c.clearCookie(w, r)
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}
