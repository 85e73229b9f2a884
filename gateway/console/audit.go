package console

import (
	"html/template"
	"net/http"
	"net/url"
	"time"
)

// auditFilters are the filters of the audit page, the query parameters of
// GET /admin/v1/audit-events it passes on.
var auditFilters = []string{"workspace_id", "task_id", "tool", "status"}

// auditStatuses are the statuses the audit filter offers (the admin API
// checks the value).
var auditStatuses = []string{"allowed", "denied", "error", "rate_limited", "confirmation_required"}

// auditEvent is one audit row as the admin API lists it.
type auditEvent struct {
	ID             int64     `json:"id"`
	Time           time.Time `json:"time"`
	WorkspaceID    string    `json:"workspace_id"`
	TaskID         string    `json:"task_id"`
	ProfileID      string    `json:"profile_id"`
	Actor          string    `json:"actor"`
	PrincipalKind  string    `json:"principal_kind"`
	TokenFP        string    `json:"token_fingerprint"`
	Tool           string    `json:"tool"`
	Tier           string    `json:"tier"`
	Status         string    `json:"status"`
	ReasonCodes    []string  `json:"reason_codes"`
	PolicyRevision string    `json:"policy_revision"`
	DecisionID     string    `json:"decision_id"`
	Surface        string    `json:"surface"`
	ApprovalID     string    `json:"approval_id"`
}

type auditView struct {
	Filter   map[string]string // the filters as given
	Statuses []string
	Events   []auditEvent
	Next     template.URL // the query of the next page (url.Values.Encode), "" on the last
	Error    *formError
}

// auditPage lists audit events newest first, 50 a page, with the filters
// of the form (sent as given; the admin API checks them and its message
// goes next to the field it names) and the cursor of the previous page.
func (c *Console) auditPage(w http.ResponseWriter, r *http.Request, sess *session) {
	in := r.URL.Query()
	q := url.Values{"limit": {"50"}}
	v := auditView{Filter: map[string]string{}, Statuses: auditStatuses}
	for _, k := range auditFilters {
		if s := in.Get(k); s != "" {
			q.Set(k, s)
			v.Filter[k] = s
		}
	}
	if cur := in.Get("cursor"); cur != "" {
		q.Set("cursor", cur)
	}
	var out struct {
		Events []auditEvent `json:"events"`
		Next   string       `json:"next_cursor"`
	}
	if err := c.call(r.Context(), sess.token, http.MethodGet, "/audit-events?"+q.Encode(), nil, &out); err != nil {
		v.Error = fieldError(err, append(auditFilters, "cursor")...)
		c.render(w, r, status(err), "audit.html", sess, v)
		return
	}
	v.Events = out.Events
	if out.Next != "" {
		next := url.Values{"cursor": {out.Next}}
		for k, s := range v.Filter {
			next.Set(k, s)
		}
		v.Next = template.URL(next.Encode()) // percent-encoded by Encode
	}
	c.render(w, r, http.StatusOK, "audit.html", sess, v)
}
