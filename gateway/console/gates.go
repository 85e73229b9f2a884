package console

import (
	"net/http"
	"strings"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
)

// waitingGate is a waiting gate (as GET /admin/v1/workspaces/{ws}/gates
// lists it: a point where the backend's agent task or workflow run waits
// for a person) with its decision form, refilled after a refusal.
//
// Prompt is shown. approvals.list redacts a task gate's prompt for the
// machines that call it, but the console's visitors are people signed in
// for the workspace (an operator with the admin token, a workspace owner
// or admin, a management:read reader of that workspace); deciding a gate
// "in SupaCloud", as the refusal to machines tells them to, means reading
// what it asks, so the person sees the prompt the agent may not.
type waitingGate struct {
	approvals.Gate
	FormAnswer, FormNote string
	Err                  *formError
}

// workspaceGates is the "Human gates" section of one workspace.
type workspaceGates struct {
	Workspace string
	Waiting   []waitingGate
	Decided   []approvals.Gate
	// Error is why the workspace's gates could not be listed.
	Error string
}

// gatesView is the Human gates tab of the inbox.
type gatesView struct {
	// Tab is the inbox tab this page is: "gates".
	Tab string
	// Notice is the message of the decision just made.
	Notice string
	// Operator is set for a session with the admin token, whose inbox
	// also has the Pending approvals tab.
	Operator bool
	// Unsupported is the admin API's message when the backend keeps no
	// gates the gateway can show: they are decided in the backend.
	Unsupported string
	Workspaces  []workspaceGates
	// More says that only the first gateWorkspaces workspaces are shown.
	More bool
	// CanDecide: the session may decide (the admin token, a workspace
	// owner or admin); a read-only session sees the lists only.
	CanDecide bool
	// DecidesAs is who the decisions are recorded as; "" for an operator
	// who gave no name at sign-in.
	DecidesAs string
	// Error is a refusal of a gate no longer listed as waiting.
	Error string
}

// gatesSummary is what the Pending approvals tab says of the human gates:
// how many wait in each workspace that has any.
type gatesSummary struct {
	Unsupported string
	Error       string
	Waiting     []gateCount
	More        bool
}

// gateCount is how many gates wait in one workspace.
type gateCount struct {
	Workspace string
	Waiting   int
}

// summary counts v's waiting gates per workspace, leaving out the
// workspaces where none waits.
func (v gatesView) summary() gatesSummary {
	s := gatesSummary{Unsupported: v.Unsupported, Error: v.Error, More: v.More}
	for _, ws := range v.Workspaces {
		if ws.Error != "" && s.Error == "" {
			s.Error = ws.Error
		}
		if n := len(ws.Waiting); n > 0 {
			s.Waiting = append(s.Waiting, gateCount{Workspace: ws.Workspace, Waiting: n})
		}
	}
	return s
}

// gateWorkspaces bounds how many workspaces' gates an operator's page
// lists (the first page of the workspace list).
const gateWorkspaces = 100

// gateRefusal is a refused gate decision form on its way back to the page.
type gateRefusal struct {
	workspace, id string
	form          *waitingGate
}

// gatesPage is the inbox's Human gates tab.
func (c *Console) gatesPage(w http.ResponseWriter, r *http.Request, sess *session) {
	c.showGates(w, r, sess, http.StatusOK, noticeText[r.URL.Query().Get("notice")], nil)
}

// showGates renders the Human gates tab: the backend's gates per workspace
// the session may see, the waiting ones with their decision forms (refused
// refilled with its message), then the decided ones with who decided.
//
// The tab has no meta refresh, so a person typing an answer or a note is
// never interrupted by a reload, and it does not renew the operator's
// approver presence: human gates are the backend's, not the gateway's
// pending approvals that presence exists for (a cc_server call waits only
// while an approver is present; a backend's gate waits for as long as the
// backend keeps it). The Pending approvals tab keeps both.
func (c *Console) showGates(w http.ResponseWriter, r *http.Request, sess *session, code int, notice string, refused *gateRefusal) {
	v := c.loadGates(r, sess, refused)
	v.Tab, v.Notice = "gates", notice
	c.render(w, r, code, "gates.html", sess, v)
}

// loadGates lists the gates of every workspace the session may see: each
// workspace for the admin token, the session's own otherwise.
func (c *Console) loadGates(r *http.Request, sess *session, refused *gateRefusal) gatesView {
	v := gatesView{Operator: sess.reader == "", CanDecide: sess.reader == "" || sess.tokenAdmin(), DecidesAs: decidesAs(sess)}
	ids := []string{sess.reader}
	if sess.reader == "" {
		var list struct {
			Workspaces []gateway.Workspace `json:"workspaces"`
			Next       string              `json:"next_cursor"`
		}
		if err := c.call(r.Context(), sess.token, http.MethodGet, "/workspaces?limit=100", nil, &list); err != nil {
			v.Error = err.Error()
			return v
		}
		ids, v.More = ids[:0], list.Next != ""
		for _, w := range list.Workspaces {
			ids = append(ids, w.ID)
		}
	}
	for _, ws := range ids {
		var out struct {
			Gates []approvals.Gate `json:"gates"`
		}
		wg := workspaceGates{Workspace: ws}
		if err := c.call(r.Context(), sess.token, http.MethodGet, "/workspaces/"+esc(ws)+"/gates", nil, &out); err != nil {
			if status(err) == http.StatusNotImplemented { // the same backend serves every workspace
				return gatesView{Operator: v.Operator, Unsupported: err.Error()}
			}
			wg.Error = err.Error()
		}
		for _, g := range out.Gates {
			if g.Status != approvals.GateWaiting {
				wg.Decided = append(wg.Decided, g)
				continue
			}
			wt := waitingGate{Gate: g}
			if refused != nil && refused.workspace == ws && refused.id == g.ID {
				wt.FormAnswer, wt.FormNote, wt.Err = refused.form.FormAnswer, refused.form.FormNote, refused.form.Err
				refused = nil
			}
			wg.Waiting = append(wg.Waiting, wt)
		}
		v.Workspaces = append(v.Workspaces, wg)
	}
	if refused != nil { // decided meanwhile, or not a gate of a listed workspace
		v.Error = refused.form.Err.Message
	}
	return v
}

// decidesAs is who the admin API records as deciding a gate for sess.
func decidesAs(sess *session) string {
	if sess.tokenAdmin() {
		return "user:" + sess.user
	}
	return sess.operator
}

// decideGate sends POST /workspaces/{ws}/gates/{gate}/decision with the
// form's verb (approve or reject), answer and note. Who decides is the
// session's, never the form's: the operator's sign-in name with the admin
// token, and nothing for a workspace admin, whom the admin API records as
// its own user.
func (c *Console) decideGate(w http.ResponseWriter, r *http.Request, sess *session) {
	ws, id, verb := r.PathValue("ws"), r.PathValue("gate"), r.PostFormValue("verb")
	form := &waitingGate{FormAnswer: r.PostFormValue("answer"), FormNote: r.PostFormValue("note")}
	body := map[string]string{"decision": verb, "answer": form.FormAnswer, "note": form.FormNote}
	if sess.reader == "" {
		body["decided_by"] = sess.operator
	}
	var err error
	if verb != "approve" && verb != "reject" {
		err = &apiError{Status: http.StatusBadRequest, Message: "choose Approve or Reject"}
	} else {
		err = c.call(r.Context(), sess.token, http.MethodPost, "/workspaces/"+esc(ws)+"/gates/"+esc(id)+"/decision", body, nil)
	}
	if err != nil {
		form.Err = gateFieldError(err, verb, form.FormAnswer)
		c.showGates(w, r, sess, status(err), "", &gateRefusal{workspace: ws, id: id, form: form})
		return
	}
	notice := map[string]string{"approve": "gate-approved", "reject": "gate-rejected"}[verb]
	http.Redirect(w, r, Prefix+"/approvals/gates?notice="+notice+"#gates-"+esc(ws), http.StatusSeeOther)
}

// signInNameHint follows a refusal for a missing decided_by: the console
// records a decision as the name given at sign-in, never a form field.
const signInNameHint = "The console names you by the name you gave at sign-in: sign out, then sign in again with your name."

// gateFieldError places the admin API's refusal of a gate decision next to
// the field at fault: a field the message names (`field "answer" …`), or
// the answer when an approval with no answer was refused as invalid (the
// backend's "approving question gate … needs an answer"); anything else
// goes above the form. A missing decided_by is the sign-in's, not a
// field's, and says how to give one.
func gateFieldError(err error, verb, answer string) *formError {
	e := fieldError(err, "answer", "note")
	switch {
	case strings.HasPrefix(e.Message, `field "decided_by"`):
		e.Message += ". " + signInNameHint
	case e.Field == "" && verb == "approve" && strings.TrimSpace(answer) == "" && status(err) == http.StatusBadRequest:
		e.Field = "answer"
	}
	return e
}
