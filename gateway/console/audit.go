package console

import (
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// auditFilters are the filters of the audit page, the query parameters of
// GET /admin/v1/audit-events it passes on.
var auditFilters = []string{"workspace_id", "task_id", "tool", "status", "kind", "actor"}

// auditStatuses are the statuses the audit filter offers (the admin API
// checks the value).
var auditStatuses = []string{"allowed", "denied", "error", "rate_limited", "confirmation_required"}

type auditView struct {
	Filter   map[string]string // the filters as given
	Statuses []string
	Kinds    []string
	Events   []gateway.AuditEvent
	Next     template.URL // the query of the next page (url.Values.Encode), "" on the last
	Error    *formError
	// Chain is the tamper-evident chain's state, for the admin token's
	// sessions; nil for the others (the admin API shows it to the admin
	// token only).
	Chain *chainView
}

// chainView is the audit chain as GET /admin/v1/audit-chain (and, when
// asked, GET /admin/v1/audit-chain/verify) answer it.
type chainView struct {
	Head       chainPlace `json:"head"`
	Checkpoint *struct {
		chainPlace
		Time   time.Time `json:"time"`
		KeyID  string    `json:"key_id"`
		Signed bool      `json:"signed"`
	} `json:"checkpoint"`
	// Verify is the verification asked for with ?verify=1; nil when the
	// page did not ask (it reads every sealed row).
	Verify *struct {
		Verified bool       `json:"verified"`
		Rows     int64      `json:"rows"`
		Head     chainPlace `json:"head"`
		Unsealed int64      `json:"unsealed"`
		Problem  *struct {
			Seq    int64  `json:"seq"`
			What   string `json:"what"`
			Detail string `json:"detail"`
		} `json:"problem"`
	}
	// Error says why the chain could not be read ("" when it was).
	Error string
}

// chainPlace is a seq and its hash (lowercase hex).
type chainPlace struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// auditChain reads the chain's state for the admin token's session, and
// verifies it when verify is set; a failure is shown on the page, next
// to the events, not instead of them.
func (c *Console) auditChain(w http.ResponseWriter, r *http.Request, sess *session, verify bool) *chainView {
	if sess.reader != "" {
		return nil
	}
	v := &chainView{}
	if err := c.call(r.Context(), sess.token, http.MethodGet, "/audit-chain", nil, v); err != nil {
		v.Error = err.Error()
		return v
	}
	if verify {
		if err := c.call(r.Context(), sess.token, http.MethodGet, "/audit-chain/verify", nil, &v.Verify); err != nil {
			v.Error = err.Error()
		}
		// The verification may outlast the server's write timeout, which
		// counts from the request: the page gets a deadline of its own.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(verifyWriteGrace))
	}
	return v
}

// verifyWriteGrace is how long the audit page has to be written once a
// verification it asked for is done, as the admin API's reply has.
const verifyWriteGrace = 30 * time.Second

// auditPage lists audit events newest first, 50 a page, with the filters
// of the form (sent as given; the admin API checks them and its message
// goes next to the field it names) and the cursor of the previous page.
func (c *Console) auditPage(w http.ResponseWriter, r *http.Request, sess *session) {
	in := r.URL.Query()
	q := url.Values{"limit": {"50"}}
	v := auditView{Filter: map[string]string{}, Statuses: auditStatuses, Kinds: gateway.AuditKinds,
		Chain: c.auditChain(w, r, sess, in.Get("verify") == "1")}
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
