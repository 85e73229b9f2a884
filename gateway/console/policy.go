package console

import (
	"net/http"
	"time"
)

// policyAttempt is one load of a policy bundle as GET /admin/v1/policy
// shows it.
type policyAttempt struct {
	Time     time.Time `json:"time"`
	Trigger  string    `json:"trigger"`
	Revision string    `json:"revision"`
	Outcome  string    `json:"outcome"`
	Tests    int       `json:"tests"`
	Error    string    `json:"error"`
}

// policyStatus is the reply of GET /admin/v1/policy.
type policyStatus struct {
	Surface     string         `json:"surface"`
	Revision    string         `json:"revision"`
	Source      string         `json:"source"`
	Watched     bool           `json:"watched"`
	LiveSince   time.Time      `json:"live_since"`
	LastAttempt *policyAttempt `json:"last_attempt"`
	LastFailure *policyAttempt `json:"last_failure"`
	Shadow      *struct {
		Source      string         `json:"source"`
		Revision    string         `json:"revision"`
		LastAttempt *policyAttempt `json:"last_attempt"`
		FlipsSince  time.Time      `json:"flips_since"`
		Flips       []struct {
			Tool      string `json:"tool"`
			Direction string `json:"direction"`
			Count     int64  `json:"count"`
		} `json:"flips"`
	} `json:"shadow"`
}

type policyView struct {
	Status policyStatus
	Notice string
	Error  string // why the reload was refused (OPA's message) or failed
}

func (c *Console) policyPage(w http.ResponseWriter, r *http.Request, sess *session) {
	c.showPolicy(w, r, sess, http.StatusOK, policyView{Notice: noticeText[r.URL.Query().Get("notice")]})
}

func (c *Console) showPolicy(w http.ResponseWriter, r *http.Request, sess *session, code int, v policyView) {
	if err := c.call(r.Context(), sess.token, http.MethodGet, "/policy", nil, &v.Status); err != nil {
		c.failed(w, r, sess, err)
		return
	}
	c.render(w, r, code, "policy.html", sess, v)
}

// reloadPolicy sends POST /admin/v1/policy/reload. A refused candidate
// (422, the running revision stays) or a bundle that never reloads (409)
// shows the admin API's message above the status.
func (c *Console) reloadPolicy(w http.ResponseWriter, r *http.Request, sess *session) {
	if err := c.call(r.Context(), sess.token, http.MethodPost, "/policy/reload", nil, nil); err != nil {
		c.showPolicy(w, r, sess, status(err), policyView{Error: err.Error()})
		return
	}
	http.Redirect(w, r, Prefix+"/policy?notice=reloaded", http.StatusSeeOther)
}
