package admin

import (
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gorilla/mux"
	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
)

// Paths of the human gate routes, under /workspaces/{ws}.
const (
	GatesPath        = "/gates"
	GateDecisionPath = "/gates/{gate}/decision"
)

// maxGateTextRunes bounds a gate decision's answer and note.
const maxGateTextRunes = 2000

// gateStatuses are the values ?status= of the gates listing accepts.
var gateStatuses = []string{approvals.GateWaiting, approvals.GateApproved, approvals.GateRejected}

// GateDecisionRequest is the body of POST
// /admin/v1/workspaces/{ws}/gates/{gate}/decision: approve or reject, the
// answer (approving a question gate needs one), an optional note, and, for
// the admin token only, decided_by naming the operator who decides (the
// token names no person). A console sign-in decides as its own user
// ("user:<id>"): decided_by is then left out, and one naming anybody else
// is refused.
type GateDecisionRequest struct {
	Decision  string `json:"decision"`
	Answer    string `json:"answer"`
	Note      string `json:"note"`
	DecidedBy string `json:"decided_by"`
}

// errNoGates is the answer of the gates routes when the backend adapter
// keeps no human gates the gateway can decide (an upstream MCP server):
// writeError sends it as 501 NotImplemented.
var errNoGates error = &notImplemented{msg: "this gateway's backend keeps no human gates the gateway can show: human gates are decided in the backend, in its own interface for people"}

// notImplemented is a route the gateway serves but its backend cannot
// answer; writeError sends it as 501 with code NotImplemented.
type notImplemented struct{ msg string }

func (e *notImplemented) Error() string { return e.msg }

// gateTarget is the backend's human gates and the path's workspace: 501
// (errNoGates) when the backend keeps none, 400 for a bad workspace id,
// 404 naming an unknown workspace (as for every route under
// /workspaces/{ws}).
func (h *handler) gateTarget(r *http.Request) (approvals.HumanGates, string, error) {
	if h.opts.Gates == nil {
		return nil, "", errNoGates
	}
	ids, err := pathIDs(r, "ws")
	if err != nil {
		return nil, "", err
	}
	if _, err := h.store.Workspace(r.Context(), ids[0]); err != nil {
		return nil, "", err
	}
	return h.opts.Gates, ids[0], nil
}

// listGates is GET /admin/v1/workspaces/{ws}/gates?status=: the
// backend's human gates of the workspace, waiting and decided (status
// narrows them), with their prompts.
func (h *handler) listGates(w http.ResponseWriter, r *http.Request) error {
	hg, ws, err := h.gateTarget(r)
	if err != nil {
		return err
	}
	status := r.URL.Query().Get("status")
	if status != "" {
		if err := checkEnum("status", status, gateStatuses); err != nil {
			return err
		}
	}
	all, err := hg.ListGates(r.Context(), ws)
	if err != nil {
		return err
	}
	out := []approvals.Gate{}
	for _, g := range all {
		if status == "" || g.Status == status {
			out = append(out, g)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"gates": out})
	return nil
}

// decideGate is POST /admin/v1/workspaces/{ws}/gates/{gate}/decision: 200
// with the gate as decided (and the status of the task or run it
// resumed); 400 for a bad body or a decision the backend refuses (its
// message), 404 for an unknown gate, 409 once the gate is decided.
func (h *handler) decideGate(w http.ResponseWriter, r *http.Request) error {
	hg, ws, err := h.gateTarget(r)
	if err != nil {
		return err
	}
	id := mux.Vars(r)["gate"]
	if err := checkID("gate id", id); err != nil {
		return err
	}
	var in GateDecisionRequest
	if err := h.decode(w, r, &in); err != nil {
		return err
	}
	if err := checkEnum("decision", in.Decision, []string{approvals.GateApprove, approvals.GateReject}); err != nil {
		return err
	}
	for field, v := range map[string]string{"answer": in.Answer, "note": in.Note} {
		if err := checkNote(field, v, maxGateTextRunes); err != nil {
			return err
		}
	}
	by, err := decider(r, in.DecidedBy)
	if err != nil {
		return err
	}
	g, err := hg.DecideGate(r.Context(), ws, id, approvals.GateDecision{Decision: in.Decision, Answer: in.Answer, Note: in.Note, DecidedBy: by})
	if err != nil {
		return err
	}
	h.log.Info("admin change", append(logChange(r), zap.String("gate_class", g.Class),
		zap.String("decision", g.Decision), zap.String("decided_by", g.DecidedBy))...)
	writeJSON(w, http.StatusOK, g)
	return nil
}

// decider is who decides: a console sign-in's own user, or the operator
// the admin token's caller names.
func decider(r *http.Request, named string) (string, error) {
	if wa, ok := workspaceAdminOf(r.Context()); ok {
		self := "user:" + wa.userID
		if named != "" && named != self && named != wa.userID {
			return "", invalid("you decide as %s (your console sign-in); leave decided_by out", self)
		}
		return self, nil
	}
	if err := checkText("decided_by", named); err != nil {
		return "", invalid("%s: name the person who decides", gateway.ErrorMessageOf(err))
	}
	return strings.TrimSpace(named), nil
}

// checkNote allows an empty string or plain text (line breaks allowed) of
// at most max characters.
func checkNote(field, v string, max int) error {
	if utf8.RuneCountInString(v) > max || strings.ContainsFunc(v, func(c rune) bool { return unicode.IsControl(c) && c != '\n' && c != '\r' && c != '\t' }) {
		return invalid("field %q must be plain text of at most %d characters", field, max)
	}
	return nil
}
