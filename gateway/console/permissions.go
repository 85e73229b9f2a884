package console

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate/gateway"
)

// chainTask is the task id the permissions page explains its calls in. The
// explainer treats a task it has not seen as running and writes nothing,
// so no task of that name ever needs to exist.
const chainTask = "console.permissions"

// chainTool is the tool whose explanation the permissions page asks for:
// its all_permissions carry the precedence chain of every permission key
// (whatever the tool), and workspace.info is one every member may be
// explained for, which reads the keys its redactions name (the bundle's
// data.supacloud.permissions.redactions).
const chainTool = "workspace.info"

// chainLink is one link of a permission key's precedence chain as the
// bundle's data.supacloud.explain resolves it: user_override, seat_type,
// workspace_override, org_plan or default. Value is nil when the link
// holds no value; Name and Applies are the seat type's and org plan's.
type chainLink struct {
	Link    string  `json:"link"`
	Name    *string `json:"name"`
	Applies *bool   `json:"applies"`
	Value   *bool   `json:"value"`
}

// Shown is the link's value as the chain table shows it: true, false or
// "—" for none.
func (l chainLink) Shown() string {
	if l.Value == nil {
		return "—"
	}
	return strconv.FormatBool(*l.Value)
}

// Note names the seat type or org plan of the link, and says when the
// seat type does not apply: "(developer, does not apply)"; "" otherwise.
func (l chainLink) Note() string {
	if l.Name == nil {
		return ""
	}
	if l.Applies != nil && !*l.Applies {
		return "(" + *l.Name + ", does not apply)"
	}
	return "(" + *l.Name + ")"
}

// permission is one entry of data.supacloud.explain.permissions: the key,
// the result field it keeps, its resolved value, the link that decided it
// ("edition" when the edition cap forced it false) and the chain.
type permission struct {
	Field         string      `json:"field"`
	Key           string      `json:"key"`
	Value         bool        `json:"value"`
	Redacted      bool        `json:"redacted"`
	EditionCapped bool        `json:"edition_capped"`
	DecidedBy     string      `json:"decided_by"`
	Chain         []chainLink `json:"chain"`
}

// explanation is the reply of POST /admin/v1/explain, as far as the
// console shows it.
type explanation struct {
	User     string   `json:"user"`
	Notes    []string `json:"notes"`
	Decision struct {
		Allow    bool   `json:"allow"`
		Tier     string `json:"tier"`
		Revision string `json:"revision"`
		Reasons  []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"reasons"`
	} `json:"decision"`
	Explain struct {
		Gates []struct {
			Gate       string `json:"gate"`
			Rule       string `json:"rule"`
			Passed     bool   `json:"passed"`
			DeniesWith any    `json:"denies_with"`
		} `json:"gates"`
		DecidedBy struct {
			Rule string `json:"rule"`
			Gate string `json:"gate"`
			Code string `json:"code"`
		} `json:"decided_by"`
		Profile     map[string]any `json:"profile"`
		Grant       map[string]any `json:"grant"`
		Permissions []permission   `json:"permissions"`
		// AllPermissions is every permission key the bundle or the
		// member's links know, sorted by key (absent from bundles older
		// than the key table).
		AllPermissions []permission `json:"all_permissions"`
		Edition        struct {
			Name string `json:"name"`
		} `json:"edition"`
	} `json:"explain"`
}

// memberPermissions is one member's part of the permissions page.
type memberPermissions struct {
	gateway.Member
	Text  string // the override form's text, key=true|false a line
	Err   *formError
	Chain []permission // every key resolved, by key; nil when ChainErr says why
}

type permissionsView struct {
	WS      string
	Notice  string
	WSText  string
	WSErr   *formError
	Members []memberPermissions
	// ChainErr is why no chain could be resolved (the explainer's or the
	// admin API's message), shown once.
	ChainErr string
}

// overridesText writes overrides one key=value a line, sorted by key.
func overridesText(p map[string]bool) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(p)) {
		fmt.Fprintf(&b, "%s=%t\n", k, p[k])
	}
	return b.String()
}

// parseOverrides reads the override form: one key=true or key=false a
// line, blank lines skipped. The keys themselves are the admin API's to
// check.
func parseOverrides(text string) (map[string]bool, error) {
	out := map[string]bool{}
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		v = strings.TrimSpace(v)
		if !ok || (v != "true" && v != "false") {
			return nil, &apiError{Status: http.StatusBadRequest, Message: fmt.Sprintf("line %d (%q) is not key=true or key=false; write one override a line, such as workspace.budget.view=false", i+1, clip(l))}
		}
		out[strings.TrimSpace(k)] = v == "true"
	}
	return out, nil
}

// clip shortens s for a message.
func clip(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}

func (c *Console) permissionsPage(w http.ResponseWriter, r *http.Request, sess *session) {
	c.showPermissions(w, r, sess, http.StatusOK, noticeText[r.URL.Query().Get("notice")], "", nil, nil)
}

// showPermissions renders the permissions page. When form is non-nil it
// is the submitted text of the form that failed with fe: the workspace's
// (user "") or that member's.
func (c *Console) showPermissions(w http.ResponseWriter, r *http.Request, sess *session, code int, notice, user string, form *string, fe *formError) {
	ws := r.PathValue("ws")
	base := "/workspaces/" + esc(ws)
	v := permissionsView{WS: ws, Notice: notice}
	var wsOver map[string]bool
	if err := c.call(r.Context(), sess.token, http.MethodGet, base+"/permission-overrides", nil, &wsOver); err != nil {
		c.failed(w, r, sess, err)
		return
	}
	v.WSText = overridesText(wsOver)
	if form != nil && user == "" {
		v.WSText, v.WSErr = *form, fe
	}
	var members struct {
		Members []gateway.Member `json:"members"`
	}
	if err := c.call(r.Context(), sess.token, http.MethodGet, base+"/members", nil, &members); err != nil {
		c.failed(w, r, sess, err)
		return
	}
	for _, m := range members.Members {
		mp := memberPermissions{Member: m}
		var over map[string]bool
		if err := c.call(r.Context(), sess.token, http.MethodGet, base+"/members/"+esc(m.UserID)+"/permission-overrides", nil, &over); err != nil {
			c.failed(w, r, sess, err)
			return
		}
		mp.Text = overridesText(over)
		if form != nil && user == m.UserID {
			mp.Text, mp.Err = *form, fe
		}
		if v.ChainErr == "" {
			var ex explanation
			err := c.call(r.Context(), sess.token, http.MethodPost, "/explain",
				map[string]any{"workspace": ws, "task": chainTask, "user": m.UserID, "tool": chainTool}, &ex)
			if err != nil {
				v.ChainErr = err.Error()
			} else if mp.Chain = ex.Explain.AllPermissions; mp.Chain == nil {
				mp.Chain = ex.Explain.Permissions // a bundle without the key table: the keys the tool reads
			}
		}
		v.Members = append(v.Members, mp)
	}
	c.render(w, r, code, "permissions.html", sess, v)
}

// saveWorkspaceOverrides sends PUT …/permission-overrides with the form's
// overrides (an empty form clears them).
func (c *Console) saveWorkspaceOverrides(w http.ResponseWriter, r *http.Request, sess *session) {
	c.saveOverrides(w, r, sess, "")
}

// saveMemberOverrides sends PUT …/members/{user}/permission-overrides.
func (c *Console) saveMemberOverrides(w http.ResponseWriter, r *http.Request, sess *session) {
	c.saveOverrides(w, r, sess, r.PathValue("user"))
}

func (c *Console) saveOverrides(w http.ResponseWriter, r *http.Request, sess *session, user string) {
	ws := r.PathValue("ws")
	text := r.PostFormValue("overrides")
	path := "/workspaces/" + esc(ws) + "/permission-overrides"
	if user != "" {
		path = "/workspaces/" + esc(ws) + "/members/" + esc(user) + "/permission-overrides"
	}
	p, err := parseOverrides(text)
	if err == nil {
		err = c.call(r.Context(), sess.token, http.MethodPut, path, p, nil)
	}
	if err != nil {
		c.showPermissions(w, r, sess, status(err), "", user, &text, &formError{Field: "overrides", Message: err.Error()})
		return
	}
	http.Redirect(w, r, Prefix+"/workspaces/"+esc(ws)+"/permissions?notice=overrides-saved", http.StatusSeeOther)
}
