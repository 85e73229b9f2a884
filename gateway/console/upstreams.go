package console

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
)

// upstreamsView is the Upstreams page (docs/requirements.md#pinned-tools):
// every bridged upstream with its tools, and for each quarantined tool its
// pinned and current definitions side by side with the decision form.
type upstreamsView struct {
	Notice string
	Error  string // a refused decision whose tool is no longer quarantined
	// None is the admin API's message when the gateway bridges no
	// upstream (MCPGATE_UPSTREAMS_FILE unset).
	None      string
	Upstreams []upstreamView
	// Operator is who a decision is recorded as: the name given at
	// sign-in ("" when none was given; the admin API then refuses it).
	Operator string
}

// upstreamView is one upstream of GET /admin/v1/upstreams, with its tools
// from GET /admin/v1/upstreams/{name}/tools.
type upstreamView struct {
	Name    string         `json:"name"`
	Surface string         `json:"surface"`
	State   string         `json:"state"`
	Tools   map[string]int `json:"tools"` // tools by pin state
	Pins    []pinnedTool   `json:"-"`
	Err     string         `json:"-"` // why its tools could not be read
}

// upstreamTool is one tool of GET /admin/v1/upstreams/{name}/tools: its
// registry name, pin and whether the upstream lists it now.
type upstreamTool struct {
	Name string `json:"name"`
	gateway.ToolPin
	Listed bool `json:"listed"`
}

// pinnedTool is a tool as the page shows it; a quarantined one carries
// its definitions' diff and its decision form's refusal.
type pinnedTool struct {
	upstreamTool
	// What says what quarantined it; Against names the left side of the
	// diff (the pinned definition, a renamed tool's, or none).
	What, Against string
	Fields        []defField
	Err           *formError
}

// Quarantined reports whether the tool waits for a decision.
func (p pinnedTool) Quarantined() bool { return p.State == gateway.PinQuarantined }

// defField is one member of a tool definition (description, inputSchema,
// annotations, …) in both versions, line by line.
type defField struct {
	Name    string
	Changed bool
	Note    string // a member only one version has
	Rows    []diffRow
}

// diffRow is one line of the side-by-side diff. Left is the approved
// version's line, Right the one under review; a Mark is "same",
// "removed" (left), "added" (right) or "" for no line on that side.
type diffRow struct {
	Left, Right         string
	LeftMark, RightMark string
}

// pinRefusal is the refused decision form a page answering a POST shows.
type pinRefusal struct {
	upstream, tool string
	err            *formError
}

func (c *Console) upstreamsPage(w http.ResponseWriter, r *http.Request, sess *session) {
	c.showUpstreams(w, r, sess, http.StatusOK, noticeText[r.URL.Query().Get("notice")], nil)
}

// showUpstreams renders the Upstreams page from the admin API's upstream
// routes; refused, when set, is shown on its tool's form.
func (c *Console) showUpstreams(w http.ResponseWriter, r *http.Request, sess *session, code int, notice string, refused *pinRefusal) {
	v := upstreamsView{Notice: notice, Operator: sess.operator}
	var list struct {
		Upstreams []upstreamView `json:"upstreams"`
	}
	if err := c.call(r.Context(), sess.token, http.MethodGet, "/upstreams", nil, &list); err != nil {
		if status(err) != http.StatusNotFound {
			c.failed(w, r, sess, err)
			return
		}
		v.None = err.Error()
	}
	for _, u := range list.Upstreams {
		var tools struct {
			Tools []upstreamTool `json:"tools"`
		}
		if err := c.call(r.Context(), sess.token, http.MethodGet, "/upstreams/"+esc(u.Name)+"/tools", nil, &tools); err != nil {
			u.Err = err.Error()
		}
		for _, t := range tools.Tools {
			p := pinnedTool{upstreamTool: t}
			if p.Quarantined() {
				p.review(tools.Tools)
				if refused != nil && refused.upstream == u.Name && refused.tool == t.Tool {
					p.Err, refused = refused.err, nil
				}
			}
			u.Pins = append(u.Pins, p)
		}
		v.Upstreams = append(v.Upstreams, u)
	}
	if refused != nil { // decided meanwhile, or no such tool
		v.Error = refused.err.Message
	}
	c.render(w, r, code, "upstreams.html", sess, v)
}

// review fills what quarantined p and the diff of its definitions: the
// pinned one against the current one; for a rename, the definition
// pinned under the old name (in tools, the same upstream's); for a new
// tool, nothing.
func (p *pinnedTool) review(tools []upstreamTool) {
	left := p.Definition
	p.Against = "Pinned (approved)"
	switch p.Change {
	case gateway.PinChangeNew:
		p.What, p.Against = "a new tool, listed after the upstream's first review", "Pinned (none: never approved)"
	case gateway.PinChangeRename:
		p.What, p.Against = "renamed from "+p.RenamedFrom, "Pinned as "+p.RenamedFrom
		for _, t := range tools {
			if t.Tool == p.RenamedFrom {
				left = t.Definition
			}
		}
	default:
		p.What = "its definition changed since it was pinned"
	}
	p.Fields = definitionFields(left, p.Current)
}

// memberOrder is the order the members of a tool definition are shown
// in (docs/requirements.md#pinned-tools); any other member follows, by
// name.
var memberOrder = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

// definitionFields compares two tool definitions (JSON objects) member by
// member. A string member (a description) is shown as its text, line by
// line; any other (a schema, the annotations) as indented JSON. Both go
// through approvals.Visible, so invisible characters show as \u escapes.
func definitionFields(pinned, current json.RawMessage) []defField {
	var a, b map[string]json.RawMessage
	_ = json.Unmarshal(pinned, &a) // none pinned: every member is new
	_ = json.Unmarshal(current, &b)
	var names []string
	for _, m := range []map[string]json.RawMessage{a, b} {
		for k := range m {
			if !slices.Contains(names, k) {
				names = append(names, k)
			}
		}
	}
	rank := func(n string) int {
		if i := slices.Index(memberOrder, n); i >= 0 {
			return i
		}
		return len(memberOrder)
	}
	slices.SortFunc(names, func(x, y string) int {
		if d := rank(x) - rank(y); d != 0 {
			return d
		}
		return strings.Compare(x, y)
	})
	var out []defField
	for _, n := range names {
		l, inL := a[n]
		rv, inR := b[n]
		lt, rt := memberText(l, inL), memberText(rv, inR)
		f := defField{Name: n, Changed: inL != inR || lt != rt, Rows: sideBySide(lt, rt)}
		switch {
		case !inL:
			f.Note = "not in the pinned definition"
		case !inR:
			f.Note = "not in the current definition"
		}
		out = append(out, f)
	}
	return out
}

// memberText is how one member's value is shown: a string's text, any
// other value indented; "" when absent.
func memberText(raw json.RawMessage, ok bool) string {
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return approvals.Visible(s)
	}
	return approvals.Pretty(raw)
}

// sideBySide pairs the lines of left and right by a line diff
// (github.com/sergi/go-diff): equal lines side by side, a run of removed
// lines beside the run of added lines that replaced it.
func sideBySide(left, right string) []diffRow {
	dmp := diffmatchpatch.New()
	ca, cb, lines := dmp.DiffLinesToChars(withNewline(left), withNewline(right))
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), lines)
	var rows []diffRow
	var removed, added []string
	flush := func() {
		for i := range max(len(removed), len(added)) {
			var row diffRow
			if i < len(removed) {
				row.Left, row.LeftMark = removed[i], "removed"
			}
			if i < len(added) {
				row.Right, row.RightMark = added[i], "added"
			}
			rows = append(rows, row)
		}
		removed, added = nil, nil
	}
	for _, d := range diffs {
		ls := splitLines(d.Text)
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			removed = append(removed, ls...)
		case diffmatchpatch.DiffInsert:
			added = append(added, ls...)
		default:
			flush()
			for _, l := range ls {
				rows = append(rows, diffRow{Left: l, Right: l, LeftMark: "same", RightMark: "same"})
			}
		}
	}
	flush()
	return rows
}

// withNewline ends a non-empty text with a newline, so its last line
// compares like the others.
func withNewline(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}

// splitLines splits a run of whole lines (each ending in a newline).
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// decidePin sends POST /admin/v1/upstreams/{name}/tools/{tool}/approve or
// /reject (the form's "verb"), recording the signed-in person (the name
// given at sign-in), never a form field, as decided_by; then back to the
// page, at the upstream.
func (c *Console) decidePin(w http.ResponseWriter, r *http.Request, sess *session) {
	name, tool, verb := r.PathValue("name"), r.PathValue("tool"), r.PostFormValue("verb")
	var err error
	if verb != "approve" && verb != "reject" {
		err = &apiError{Status: http.StatusBadRequest, Message: "choose Approve or Reject"}
	} else {
		err = c.call(r.Context(), sess.token, http.MethodPost, "/upstreams/"+esc(name)+"/tools/"+esc(tool)+"/"+verb,
			map[string]string{"decided_by": sess.operator}, nil)
	}
	if err != nil {
		fe := &formError{Message: err.Error()}
		if strings.Contains(fe.Message, "decided_by") {
			fe.Message += ". " + signInNameHint
		}
		c.showUpstreams(w, r, sess, status(err), "", &pinRefusal{upstream: name, tool: tool, err: fe})
		return
	}
	notice := map[string]string{"approve": "pin-approved", "reject": "pin-rejected"}[verb]
	http.Redirect(w, r, Prefix+"/upstreams?notice="+notice+"#upstream-"+esc(name), http.StatusSeeOther)
}
