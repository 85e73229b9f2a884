package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/gateway"
)

// Tiers are the allowlist entries the profile form offers as checkboxes,
// in the order of docs/requirements.md#tiers: each grants one tier,
// supacloud.script.run the script.run carve-out, supacloud.full all five.
// Every other entry (an exact tool name) goes in the form's text box.
var Tiers = []Tier{
	{"supacloud.read.*", "Read tier: workspace, project, task, runner and schedule reads (metadata only)"},
	{"supacloud.ops.*", "Ops tier: start workflow runs, manage schedules, trigger a repo sync"},
	{"supacloud.script.run", "script.run (an ops tool that needs this grant of its own)"},
	{"supacloud.scaffold.*", "Scaffold tier: create proposals, start scaffold tasks"},
	{"supacloud.deploy.*", "Deploy tier: deploy or roll back apps, apply app migrations (owner or admin only)"},
	{"supacloud.full", "All five tiers at once"},
}

// Tier is one allowlist checkbox: the entry and what it grants.
type Tier struct {
	Entry string
	Label string
}

// Scopes are the API token scopes of docs/requirements.md#api-tokens, in its order, with
// what each reaches.
var Scopes = []Tier{
	{"mcp:read", "mcp:read — the read level (runs, tasks, backlog, approvals, memories)"},
	{"mcp:ops", "mcp:ops — the control level (trigger workflows, create, steer and cancel tasks, decide approvals, rerun failed steps, manage schedules)"},
	{"management:read", "management:read — optional read access to the management API beside MCP"},
}

// errorView is the data of error.html.
type errorView struct {
	Title   string
	Message string
}

// formError is the admin API's message for one form, placed next to the
// field it names (Field "" puts it above the form).
type formError struct {
	Field   string
	Message string
}

// For returns the message when it belongs to field, else "".
func (e *formError) For(field string) string {
	if e != nil && e.Field == field {
		return e.Message
	}
	return ""
}

// Top returns the message when it names no field of the form, else "".
func (e *formError) Top() string {
	if e != nil && e.Field == "" {
		return e.Message
	}
	return ""
}

var fieldPattern = regexp.MustCompile(`^field "([a-z_]+)"`)

// fieldError turns an admin API error into a formError. The field is the
// one the message starts by naming (`field "label" …`), or one of the
// other subjects the admin API's messages name first, or the message's
// first word when that is one of fields; fields lists the form's fields,
// and any other name puts the message above the form.
func fieldError(err error, fields ...string) *formError {
	msg := err.Error()
	field := ""
	if m := fieldPattern.FindStringSubmatch(msg); m != nil {
		field = m[1]
	}
	for prefix, name := range map[string]string{"profile id ": "id", "user id ": "user_id", "profile_id ": "profile_id", "scope ": "scopes", "fingerprint ": "fingerprint"} {
		if strings.HasPrefix(msg, prefix) {
			field = name
		}
	}
	if first, _, _ := strings.Cut(msg, " "); field == "" && slices.Contains(fields, first) {
		field = first // e.g. `tool "x" is not a tool name`, `args must be …`
	}
	if !slices.Contains(fields, field) {
		field = ""
	}
	return &formError{Field: field, Message: msg}
}

// status is the HTTP status of a page that shows err: the admin API's own
// for its refusals, 502 for anything else.
func status(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return http.StatusBadGateway
}

// failed shows an admin API error that leaves no page to show.
func (c *Console) failed(w http.ResponseWriter, r *http.Request, sess *session, err error) {
	c.render(w, r, status(err), "error.html", sess, errorView{Title: "The admin API refused", Message: err.Error()})
}

type workspacesView struct {
	Workspaces []gateway.Workspace
	Next       string
}

func (c *Console) workspacesPage(w http.ResponseWriter, r *http.Request, sess *session) {
	if sess.reader != "" {
		http.Redirect(w, r, c.home(sess), http.StatusSeeOther)
		return
	}
	path := "/workspaces?limit=50"
	if cur := r.URL.Query().Get("cursor"); cur != "" {
		path += "&cursor=" + url.QueryEscape(cur)
	}
	var out struct {
		Workspaces []gateway.Workspace `json:"workspaces"`
		Next       string              `json:"next_cursor"`
	}
	if err := c.call(r.Context(), sess.token, http.MethodGet, path, nil, &out); err != nil {
		c.failed(w, r, sess, err)
		return
	}
	c.render(w, r, http.StatusOK, "workspaces.html", sess, workspacesView(out))
}

type workspaceView struct {
	Workspace gateway.Workspace
	Members   []memberRow
	Roles     []string
	Add       memberForm
	Notice    string
	// Error is a refusal of a member's form when that member is no
	// longer listed (removed meanwhile).
	Error string
}

func (c *Console) workspacePage(w http.ResponseWriter, r *http.Request, sess *session) {
	c.showWorkspace(w, r, sess, http.StatusOK, noticeText[r.URL.Query().Get("notice")], nil, nil)
}

// showWorkspace renders the workspace page with its members. add, when
// set, is the refused add-member form; row the refused form of one member.
func (c *Console) showWorkspace(w http.ResponseWriter, r *http.Request, sess *session, code int, notice string, add *memberForm, row *memberRow) {
	ws := r.PathValue("ws")
	v := workspaceView{Roles: Roles, Notice: notice, Add: memberForm{Role: "member"}}
	if add != nil {
		v.Add = *add
	}
	var members struct {
		Members []gateway.Member `json:"members"`
	}
	if err := c.call(r.Context(), sess.token, http.MethodGet, "/workspaces/"+esc(ws), nil, &v.Workspace); err != nil {
		c.failed(w, r, sess, err)
		return
	}
	if err := c.call(r.Context(), sess.token, http.MethodGet, "/workspaces/"+esc(ws)+"/members", nil, &members); err != nil {
		c.failed(w, r, sess, err)
		return
	}
	for _, m := range members.Members {
		mr := memberRow{Member: m, FormRole: m.Role, FormSeat: m.SeatType}
		if row != nil && row.UserID == m.UserID {
			if row.FormRole != "" || row.FormSeat != "" { // a refused change: refill the form with what was sent
				mr.FormRole, mr.FormSeat = row.FormRole, row.FormSeat
			}
			mr.Err, row = row.Err, nil
		}
		v.Members = append(v.Members, mr)
	}
	if row != nil {
		v.Error = row.Err.Message
	}
	c.render(w, r, code, "workspace.html", sess, v)
}

type profilesView struct {
	WS       string
	Profiles []gateway.Profile
	Default  string // id of the workspace default profile, "" when none
	Notice   string
	Error    *formError
}

func (c *Console) profilesPage(w http.ResponseWriter, r *http.Request, sess *session) {
	c.showProfiles(w, r, sess, http.StatusOK, r.URL.Query().Get("notice"), nil)
}

// noticeText are the messages a redirect after a change may ask for
// (?notice=<key>); other values show nothing.
var noticeText = map[string]string{
	"member-saved":    "The member was saved; their role and seat type apply to their next call.",
	"member-removed":  "The member was removed from the workspace.",
	"profile-saved":   "The profile was saved.",
	"default-set":     "The workspace default profile was set; tasks without a profile now get its allowlist.",
	"default-cleared": "The workspace has no default profile now; tasks without a profile get the read-only fallback.",
	"token-revoked":   "The token was revoked; it stops working at once.",
	"limits-saved":    "The external limits were saved.",
	"overrides-saved": "The permission overrides were saved; the chains below show what each member gets now.",
	"approved":        "The approval was approved; the waiting call runs now.",
	"rejected":        "The approval was rejected; the waiting call is refused.",
	"gate-approved":   "The human gate was approved; the paused task or workflow run goes on.",
	"gate-rejected":   "The human gate was rejected; the backend has the decision, and the task or workflow run it paused was told.",
	"reloaded":        "The policy was reloaded.",
	"pin-approved":    "The tool's current definition was approved and pinned; every replica lists and serves it within a second.",
	"pin-rejected":    "The tool's current definition was rejected; it stays out of tools/list, and its calls are refused, while the upstream lists that definition.",
}

func (c *Console) showProfiles(w http.ResponseWriter, r *http.Request, sess *session, code int, notice string, fe *formError) {
	ws := r.PathValue("ws")
	var out struct {
		Profiles []gateway.Profile `json:"profiles"`
	}
	if err := c.call(r.Context(), sess.token, http.MethodGet, "/workspaces/"+esc(ws)+"/profiles", nil, &out); err != nil {
		c.failed(w, r, sess, err)
		return
	}
	v := profilesView{WS: ws, Profiles: out.Profiles, Notice: noticeText[notice], Error: fe}
	for _, p := range out.Profiles {
		if p.IsDefault {
			v.Default = p.ID
		}
	}
	c.render(w, r, code, "profiles.html", sess, v)
}

// profileForm is the data of profile.html: what the form shows, from the
// stored profile or from a refused submission.
type profileForm struct {
	WS         string
	New        bool
	ID         string
	Name       string
	Tiers      []tierBox
	Exact      string // allowlist entries that are not tiers, one a line
	Restricted bool   // script_allowlist is set
	Scripts    string // its entries, one a line
	Error      *formError
}

// tierBox is one checkbox of the profile form.
type tierBox struct {
	Tier
	Checked bool
}

func newProfileForm(ws string, isNew bool, p gateway.Profile) profileForm {
	f := profileForm{WS: ws, New: isNew, ID: p.ID, Name: p.Name, Restricted: p.Restricted(),
		Scripts: strings.Join(p.ScriptAllowlist, "\n")}
	var exact []string
	for _, e := range p.Allowlist {
		if !slices.ContainsFunc(Tiers, func(t Tier) bool { return t.Entry == e }) {
			exact = append(exact, e)
		}
	}
	for _, t := range Tiers {
		f.Tiers = append(f.Tiers, tierBox{Tier: t, Checked: slices.Contains(p.Allowlist, t.Entry)})
	}
	f.Exact = strings.Join(exact, "\n")
	return f
}

func (c *Console) profileNewPage(w http.ResponseWriter, r *http.Request, sess *session) {
	c.render(w, r, http.StatusOK, "profile.html", sess, newProfileForm(r.PathValue("ws"), true, gateway.Profile{}))
}

func (c *Console) profileEditPage(w http.ResponseWriter, r *http.Request, sess *session) {
	ws := r.PathValue("ws")
	var p gateway.Profile
	if err := c.call(r.Context(), sess.token, http.MethodGet, "/workspaces/"+esc(ws)+"/profiles/"+esc(r.PathValue("profile")), nil, &p); err != nil {
		c.failed(w, r, sess, err)
		return
	}
	c.render(w, r, http.StatusOK, "profile.html", sess, newProfileForm(ws, false, p))
}

// saveProfile sends the form as PUT …/profiles/{id}: the checked tiers and
// the exact names make the allowlist; "only these scripts" sends
// script_allowlist (an empty box: no script), "any script" sends null.
func (c *Console) saveProfile(w http.ResponseWriter, r *http.Request, sess *session) {
	ws := r.PathValue("ws")
	p := gateway.Profile{ID: strings.TrimSpace(r.PostFormValue("id")), Name: r.PostFormValue("name"), Allowlist: []string{}}
	for _, t := range Tiers {
		if slices.Contains(r.PostForm["tier"], t.Entry) {
			p.Allowlist = append(p.Allowlist, t.Entry)
		}
	}
	p.Allowlist = append(p.Allowlist, lines(r.PostFormValue("exact"))...)
	if r.PostFormValue("script_mode") == "only" {
		p.ScriptAllowlist = append([]string{}, lines(r.PostFormValue("scripts"))...)
	}
	isNew := r.PostFormValue("new") == "1"
	var err error
	if p.ID == "" {
		err = &apiError{Status: http.StatusBadRequest, Message: "profile id is required; enter 1-128 characters from A-Z a-z 0-9 . _ : -"}
	} else {
		body := map[string]any{"name": p.Name, "allowlist": p.Allowlist, "script_allowlist": p.ScriptAllowlist}
		err = c.call(r.Context(), sess.token, http.MethodPut, "/workspaces/"+esc(ws)+"/profiles/"+esc(p.ID), body, nil)
	}
	if err != nil {
		f := newProfileForm(ws, isNew, p)
		f.Exact, f.Scripts = r.PostFormValue("exact"), r.PostFormValue("scripts")
		f.Error = fieldError(err, "id", "name", "allowlist", "script_allowlist")
		c.render(w, r, status(err), "profile.html", sess, f)
		return
	}
	http.Redirect(w, r, Prefix+"/workspaces/"+esc(ws)+"/profiles?notice=profile-saved", http.StatusSeeOther)
}

// setDefaultProfile sends PUT …/default-profile: the form's profile_id, or
// null to clear (docs/requirements.md#workspace-default-profile: at most one per workspace; setting one clears
// the previous).
func (c *Console) setDefaultProfile(w http.ResponseWriter, r *http.Request, sess *session) {
	ws := r.PathValue("ws")
	var id *string
	if v := r.PostFormValue("profile_id"); v != "" {
		id = &v
	}
	if err := c.call(r.Context(), sess.token, http.MethodPut, "/workspaces/"+esc(ws)+"/default-profile", map[string]any{"profile_id": id}, nil); err != nil {
		c.showProfiles(w, r, sess, status(err), "", fieldError(err))
		return
	}
	notice := "default-set"
	if id == nil {
		notice = "default-cleared"
	}
	http.Redirect(w, r, Prefix+"/workspaces/"+esc(ws)+"/profiles?notice="+notice, http.StatusSeeOther)
}

type limits struct {
	Reads     *int `json:"reads_per_tool_hourly"`
	Ops       *int `json:"ops_per_token_hourly"`
	Effective struct {
		Reads int `json:"reads_per_tool_hourly"`
		Ops   int `json:"ops_per_token_hourly"`
	} `json:"effective"`
}

// tokensView is the data of tokens.html, the API tokens tab (docs/requirements.md#api-tokens).
type tokensView struct {
	WS      string
	Created *createdToken // shown on this page only
	Tokens  []gateway.APIToken
	Notice  string
	// the create form, refilled after a refusal
	Label      string
	Scopes     []tierBox
	CreateErr  *formError
	RevokeErr  *formError
	Limits     limits
	ReadsInput string
	OpsInput   string
	LimitsErr  *formError
}

func (c *Console) tokensPage(w http.ResponseWriter, r *http.Request, sess *session) {
	ws := r.PathValue("ws")
	v := tokensView{WS: ws, Notice: noticeText[r.URL.Query().Get("notice")]}
	if t := c.takeFlash(r.Context(), sess).Token; t != nil && t.Workspace == ws {
		v.Created = t
	}
	c.showTokens(w, r, sess, http.StatusOK, v, nil)
}

// showTokens fills v from the admin API and renders it; picked are the
// scopes to show checked (nil: the defaults of a fresh form).
func (c *Console) showTokens(w http.ResponseWriter, r *http.Request, sess *session, code int, v tokensView, picked []string) {
	base := "/workspaces/" + esc(v.WS)
	var list struct {
		Tokens []gateway.APIToken `json:"tokens"`
	}
	if err := c.call(r.Context(), sess.token, http.MethodGet, base+"/api-tokens", nil, &list); err != nil {
		c.failed(w, r, sess, err)
		return
	}
	var lim limits
	if err := c.call(r.Context(), sess.token, http.MethodGet, base+"/external-limits", nil, &lim); err != nil {
		c.failed(w, r, sess, err)
		return
	}
	v.Tokens, v.Limits = list.Tokens, lim
	if v.LimitsErr == nil {
		v.ReadsInput, v.OpsInput = intText(lim.Reads), intText(lim.Ops)
	}
	for _, s := range Scopes {
		v.Scopes = append(v.Scopes, tierBox{Tier: s, Checked: slices.Contains(picked, s.Entry)})
	}
	c.render(w, r, code, "tokens.html", sess, v)
}

// createToken sends POST …/api-tokens and keeps the value for the next
// page only (then redirects, so a reload never shows it again).
func (c *Console) createToken(w http.ResponseWriter, r *http.Request, sess *session) {
	ws := r.PathValue("ws")
	label, scopes := r.PostFormValue("label"), r.PostForm["scope"]
	var out struct {
		Token       string `json:"token"`
		Fingerprint string `json:"fingerprint"`
	}
	body := map[string]any{"label": label, "scopes": append([]string{}, scopes...)}
	if err := c.call(r.Context(), sess.token, http.MethodPost, "/workspaces/"+esc(ws)+"/api-tokens", body, &out); err != nil {
		c.showTokens(w, r, sess, status(err), tokensView{WS: ws, Label: label, CreateErr: fieldError(err, "label", "scopes")}, scopes)
		return
	}
	created := &createdToken{Workspace: ws, Label: label, Value: out.Token, Fingerprint: out.Fingerprint}
	if err := c.setFlash(r.Context(), sess, flash{Token: created}); err != nil {
		// The session store failed: show the value now rather than lose it.
		c.showTokens(w, r, sess, http.StatusCreated, tokensView{WS: ws, Created: created}, nil)
		return
	}
	http.Redirect(w, r, Prefix+"/workspaces/"+esc(ws)+"/tokens", http.StatusSeeOther)
}

// revokeToken sends DELETE /api-tokens/{fingerprint}.
func (c *Console) revokeToken(w http.ResponseWriter, r *http.Request, sess *session) {
	ws := r.PathValue("ws")
	fp := r.PostFormValue("fingerprint")
	if err := c.call(r.Context(), sess.token, http.MethodDelete, "/api-tokens/"+esc(fp), nil, nil); err != nil {
		c.showTokens(w, r, sess, status(err), tokensView{WS: ws, RevokeErr: fieldError(err)}, nil)
		return
	}
	http.Redirect(w, r, Prefix+"/workspaces/"+esc(ws)+"/tokens?notice=token-revoked", http.StatusSeeOther)
}

// numberPattern is a JSON number literal.
var numberPattern = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// limitValue is what a limits field sends: null when empty (the default
// stays, docs/requirements.md#external-limits), the number typed, or else the text as a string,
// which the admin API refuses with its own message.
func limitValue(s string) any {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return nil
	case numberPattern.MatchString(s):
		return json.Number(s)
	default:
		return s
	}
}

// saveLimits sends PUT …/external-limits from the two fields.
func (c *Console) saveLimits(w http.ResponseWriter, r *http.Request, sess *session) {
	ws := r.PathValue("ws")
	reads, ops := r.PostFormValue("reads_per_tool_hourly"), r.PostFormValue("ops_per_token_hourly")
	body := map[string]any{"reads_per_tool_hourly": limitValue(reads), "ops_per_token_hourly": limitValue(ops)}
	if err := c.call(r.Context(), sess.token, http.MethodPut, "/workspaces/"+esc(ws)+"/external-limits", body, nil); err != nil {
		v := tokensView{WS: ws, ReadsInput: reads, OpsInput: ops,
			LimitsErr: fieldError(err, "reads_per_tool_hourly", "ops_per_token_hourly")}
		c.showTokens(w, r, sess, status(err), v, nil)
		return
	}
	http.Redirect(w, r, Prefix+"/workspaces/"+esc(ws)+"/tokens?notice=limits-saved", http.StatusSeeOther)
}
