package console

import (
	"net/http"

	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
)

// policyView is the policy page: the reply of GET /admin/v1/policy and
// what the last reload said.
type policyView struct {
	Status policystatus.Status
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
