package console

import (
	"errors"
	"net/http"
)

// loginView is the sign-in page's data. It never carries the token the
// visitor typed: a refused sign-in shows an empty field.
type loginView struct {
	Error string
}

// loginPage shows the sign-in form, starting a signed-out session so the
// form carries a CSRF token like every other.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	sess := c.current(r)
	if sess != nil && sess.token != "" {
		http.Redirect(w, r, Prefix+"/workspaces", http.StatusSeeOther)
		return
	}
	if sess == nil {
		if sess = c.newSession(w, r, ""); sess == nil {
			return
		}
	}
	c.render(w, r, http.StatusOK, "login.html", sess, loginView{})
}

// newSession starts a session holding token (SessionTTL; signInTTL for a
// signed-out one) and sends its cookie; when the table is full it answers
// 503 and returns nil.
func (c *Console) newSession(w http.ResponseWriter, r *http.Request, token string) *session {
	d := c.opts.SessionTTL
	if token == "" {
		d = signInTTL
	}
	now := c.opts.Now()
	sess := c.sessions.create(token, now.Add(d), now)
	if sess == nil {
		c.render(w, r, http.StatusServiceUnavailable, "error.html", nil, errorView{Title: "Busy",
			Message: "The console has too many open sessions right now. Wait a few minutes for old ones to expire, then try again."})
		return nil
	}
	c.setCookie(w, r, sess)
	return sess
}

// login checks the form's CSRF token, then the credential: the console
// asks the admin API itself (GET of the workspace list) whether it is the
// admin token. On success the signed-out session is replaced by a new one
// (a new id, so a planted cookie cannot ride along).
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	sess := c.current(r)
	if sess == nil || !sess.csrfOK(r.PostFormValue("csrf")) {
		c.forbidden(w, r, "The sign-in form's security token is missing or has expired, so you were not signed in. Open the sign-in page again and submit it from there.")
		return
	}
	token := r.PostFormValue("token")
	if token == "" {
		c.render(w, r, http.StatusBadRequest, "login.html", sess, loginView{Error: "Enter the gateway's admin token (the value of MCPGATE_ADMIN_TOKEN)."})
		return
	}
	err := c.call(r.Context(), token, http.MethodGet, "/workspaces?limit=1", nil, nil)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusForbidden:
		c.render(w, r, http.StatusForbidden, "login.html", sess, loginView{Error: "This API token may read only its own workspace; the console's read-only view for such tokens is not built yet. Sign in with the admin token (MCPGATE_ADMIN_TOKEN)."})
		return
	case errors.As(err, &ae) && ae.Status == http.StatusUnauthorized:
		c.render(w, r, http.StatusUnauthorized, "login.html", sess, loginView{Error: "That token was not accepted. Sign in with the gateway's admin token (the value of MCPGATE_ADMIN_TOKEN)."})
		return
	case err != nil:
		c.render(w, r, http.StatusBadGateway, "login.html", sess, loginView{Error: "The admin API could not check the token: " + err.Error()})
		return
	}
	c.sessions.delete(sess.id)
	if c.newSession(w, r, token) == nil {
		return
	}
	http.Redirect(w, r, Prefix+"/workspaces", http.StatusSeeOther)
}

// logout ends the session (POST with its CSRF token) and clears the cookie.
func (c *Console) logout(w http.ResponseWriter, r *http.Request, sess *session) {
	c.sessions.delete(sess.id)
	c.clearCookie(w, r)
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}
