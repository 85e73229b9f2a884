package console

import (
	"html/template"
	"net/http"
	"net/url"

	"github.com/mcpgate/mcpgate/gateway"
)

// auditFilters are the filters of the audit page, the query parameters of
// GET /admin/v1/audit-events it passes on.
var auditFilters = []string{"workspace_id", "task_id", "tool", "status"}

// auditStatuses are the statuses the audit filter offers (the admin API
// checks the value).
var auditStatuses = []string{"allowed", "denied", "error", "rate_limited", "confirmation_required"}

type auditView struct {
	Filter   map[string]string // the filters as given
	Statuses []string
	Events   []gateway.AuditEvent
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
		Events []gateway.AuditEvent `json:"events"`
		Next   string               `json:"next_cursor"`
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
