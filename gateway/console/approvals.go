package console

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/gateway/approvals"
)

// pendingApproval is a pending approval with its decision form, refilled
// after a refusal.
type pendingApproval struct {
	approvals.Approval
	DecidedBy string
	Reason    string
	Err       *formError
}

type approvalsView struct {
	// Tab is the inbox tab this page is: "approvals".
	Tab string
	// Refresh is the meta refresh of the page in seconds; 0 for none (a
	// page showing a refused form stays until the operator moves on).
	Refresh int
	// Present says whether the operator counts as an approver now;
	// PresenceErr is why recording it failed.
	Present     bool
	PresenceTTL int // seconds
	PresenceErr string
	Notice      string
	Error       string // a refusal that names no form
	Pending     []pendingApproval
	Decided     []approvals.Approval
	// Gates counts the human gates waiting per workspace, linking to the
	// Human gates tab where they are decided.
	Gates gatesSummary
}

// decidedShown is how many approvals that left pending the inbox lists.
const decidedShown = 50

// approvalsPage is the inbox's Pending approvals tab, for operators; a
// session bound to one workspace has only the Human gates tab (the
// gateway's own approvals need the admin token) and is sent there.
func (c *Console) approvalsPage(w http.ResponseWriter, r *http.Request, sess *session) {
	if sess.reader != "" {
		http.Redirect(w, r, Prefix+"/approvals/gates", http.StatusSeeOther)
		return
	}
	c.showApprovals(w, r, sess, http.StatusOK, noticeText[r.URL.Query().Get("notice")], approvalID{})
}

// approvalID names the refused approval form a page answering a POST
// shows again.
type approvalID struct {
	id   string
	form *pendingApproval
}

// showApprovals renders the Pending approvals tab: the pending approvals
// (the cc_server calls waiting for a person; the admin API lists no other
// kind) each with its form, how many human gates wait per workspace (they
// are decided on the Human gates tab), then the latest decided approvals
// with who decided. Each load renews the operator's approver presence,
// and the page reloads itself (meta refresh) to keep renewing it.
func (c *Console) showApprovals(w http.ResponseWriter, r *http.Request, sess *session, code int, notice string, failed approvalID) {
	v := approvalsView{Tab: "approvals", Notice: notice}
	if !c.loadApprovals(w, r, sess, code, &v, failed) {
		return
	}
	v.Gates = c.loadGates(r, sess, nil).summary()
	c.render(w, r, code, "approvals.html", sess, v)
}

// loadApprovals fills v with the gateway's approvals and the operator's
// presence; false when it already answered with an error page.
func (c *Console) loadApprovals(w http.ResponseWriter, r *http.Request, sess *session, code int, v *approvalsView, failed approvalID) bool {
	var pending, all struct {
		Approvals []approvals.Approval `json:"approvals"`
	}
	if err := c.call(r.Context(), sess.token, http.MethodGet, "/approvals?status=pending", nil, &pending); err != nil {
		c.failed(w, r, sess, err)
		return false
	}
	if err := c.call(r.Context(), sess.token, http.MethodGet, "/approvals?limit=200", nil, &all); err != nil {
		c.failed(w, r, sess, err)
		return false
	}
	if code == http.StatusOK {
		v.Refresh = int(c.opts.ApprovalsRefresh.Round(time.Second) / time.Second)
	}
	if c.opts.Approvers != nil {
		if err := c.opts.Approvers.Present(r.Context(), approverID(sess)); err != nil {
			v.PresenceErr = err.Error()
		} else {
			v.Present, v.PresenceTTL = true, int(c.opts.Approvers.PresenceTTL().Round(time.Second)/time.Second)
		}
	}
	form := failed.form
	for _, a := range pending.Approvals {
		p := pendingApproval{Approval: a, DecidedBy: sess.operator}
		if form != nil && a.ID == failed.id {
			p.DecidedBy, p.Reason, p.Err = form.DecidedBy, form.Reason, form.Err
			form = nil
		}
		v.Pending = append(v.Pending, p)
	}
	if form != nil { // the approval is no longer pending
		v.Error = form.Err.Message
	}
	for _, a := range all.Approvals {
		if a.Status != approvals.StatusPending && len(v.Decided) < decidedShown {
			v.Decided = append(v.Decided, a)
		}
	}
	return true
}

// decideApproval sends POST /approvals/{id}/approve or /reject (the
// form's "verb") with decided_by from the form, which starts as the name
// given at sign-in.
func (c *Console) decideApproval(w http.ResponseWriter, r *http.Request, sess *session) {
	id, verb := r.PathValue("id"), r.PostFormValue("verb")
	form := &pendingApproval{DecidedBy: strings.TrimSpace(r.PostFormValue("decided_by")), Reason: r.PostFormValue("reason")}
	var err error
	if verb != "approve" && verb != "reject" {
		err = &apiError{Status: http.StatusBadRequest, Message: "choose Approve or Reject"}
	} else {
		err = c.call(r.Context(), sess.token, http.MethodPost, "/approvals/"+esc(id)+"/"+verb,
			map[string]string{"decided_by": form.DecidedBy, "reason": form.Reason}, nil)
	}
	if err != nil {
		form.Err = fieldError(err, "decided_by", "reason")
		c.showApprovals(w, r, sess, status(err), "", approvalID{id: id, form: form})
		return
	}
	notice := "approved"
	if verb == "reject" {
		notice = "rejected"
	}
	http.Redirect(w, r, Prefix+"/approvals?notice="+notice, http.StatusSeeOther)
}

// approverID is the approver id of a console session: "console_" and a
// hash of the session id (the store never sees the cookie value).
func approverID(sess *session) string {
	h := sha256.Sum256([]byte("mcpgate console approver\x00" + sess.id))
	return "console_" + hex.EncodeToString(h[:16])
}

// signOut ends the operator's approver presence, then the session.
func (c *Console) signOut(w http.ResponseWriter, r *http.Request, sess *session) {
	if c.opts.Approvers != nil && sess.reader == "" {
		_ = c.opts.Approvers.Absent(r.Context(), approverID(sess)) // else it lapses within the presence TTL
	}
	c.logout(w, r, sess)
}

// RefreshContent is the content of the approvals page's meta refresh:
// the interval, then the inbox's own address (a page answering a POST
// reloads as the inbox).
func (v approvalsView) RefreshContent() string {
	return strconv.Itoa(v.Refresh) + "; url=" + Prefix + "/approvals"
}
