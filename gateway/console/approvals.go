package console

import (
	"net/http"
	"strings"
	"time"
)

// approval is one approval as GET /admin/v1/approvals lists it.
type approval struct {
	ID             string     `json:"id"`
	PrincipalKind  string     `json:"principal_kind"`
	Subject        string     `json:"subject"`
	WorkspaceID    string     `json:"workspace_id"`
	TaskID         string     `json:"task_id"`
	Tool           string     `json:"tool"`
	ArgumentsHash  string     `json:"arguments_hash"`
	PolicyRevision string     `json:"policy_revision"`
	Because        []string   `json:"because"`
	Status         string     `json:"status"`
	CreatedAt      time.Time  `json:"created_at"`
	ExpiresAt      time.Time  `json:"expires_at"`
	DecidedBy      string     `json:"decided_by"`
	DecidedAt      *time.Time `json:"decided_at"`
	Reason         string     `json:"reason"`
}

// pendingApproval is a pending approval with its decision form, refilled
// after a refusal.
type pendingApproval struct {
	approval
	DecidedBy string
	Reason    string
	Err       *formError
}

type approvalsView struct {
	Notice  string
	Error   string // a refusal that names no form
	Pending []pendingApproval
	Decided []approval
}

// decidedShown is how many approvals that left pending the inbox lists.
const decidedShown = 50

func (c *Console) approvalsPage(w http.ResponseWriter, r *http.Request, sess *session) {
	c.showApprovals(w, r, sess, http.StatusOK, noticeText[r.URL.Query().Get("notice")], "", nil)
}

// showApprovals renders the inbox: the pending approvals (the cc_server
// calls waiting for a person; the admin API lists no other kind) each with
// its form, then the latest decided ones with who decided. failed, when
// set, is the refused form of approval id.
func (c *Console) showApprovals(w http.ResponseWriter, r *http.Request, sess *session, code int, notice, id string, failed *pendingApproval) {
	var pending, all struct {
		Approvals []approval `json:"approvals"`
	}
	if err := c.call(r.Context(), sess.token, http.MethodGet, "/approvals?status=pending", nil, &pending); err != nil {
		c.failed(w, r, sess, err)
		return
	}
	if err := c.call(r.Context(), sess.token, http.MethodGet, "/approvals?limit=200", nil, &all); err != nil {
		c.failed(w, r, sess, err)
		return
	}
	v := approvalsView{Notice: notice}
	for _, a := range pending.Approvals {
		p := pendingApproval{approval: a, DecidedBy: sess.operator}
		if failed != nil && a.ID == id {
			p.DecidedBy, p.Reason, p.Err = failed.DecidedBy, failed.Reason, failed.Err
			failed = nil
		}
		v.Pending = append(v.Pending, p)
	}
	if failed != nil { // the approval is no longer pending
		v.Error = failed.Err.Message
	}
	for _, a := range all.Approvals {
		if a.Status != "pending" && len(v.Decided) < decidedShown {
			v.Decided = append(v.Decided, a)
		}
	}
	c.render(w, r, code, "approvals.html", sess, v)
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
		c.showApprovals(w, r, sess, status(err), "", id, form)
		return
	}
	notice := "approved"
	if verb == "reject" {
		notice = "rejected"
	}
	http.Redirect(w, r, Prefix+"/approvals?notice="+notice, http.StatusSeeOther)
}
