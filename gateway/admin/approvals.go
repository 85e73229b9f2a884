package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gorilla/mux"
	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
)

// Approvals is what the approval routes need: gateway/approvals' Service
// implements it. The routes answer 404 without one (Options.Approvals).
type Approvals interface {
	// List returns the approvals f selects, newest first; status pending
	// lists those still open.
	List(ctx context.Context, f approvals.Filter) ([]approvals.Approval, error)
	// Decide approves or rejects a pending approval in the name of
	// decidedBy: EInvalid without decidedBy, ENotFound for an unknown id,
	// EConflict once it is no longer pending.
	Decide(ctx context.Context, id, status, decidedBy, reason string) (*approvals.Approval, error)
	// Watch registers an open approvals stream until ctx ends (the
	// approver counts as connected on every replica) and yields each
	// pending approval, then each again when it leaves pending; the
	// channel closes when ctx ends or the store fails.
	Watch(ctx context.Context) (<-chan approvals.Approval, error)
}

// Paths of the approval routes, under Prefix.
const (
	ApprovalsPath      = "/approvals"
	ApprovalStreamPath = "/approvals/stream"
)

// approvalStatuses are the values ?status= accepts.
var approvalStatuses = []string{approvals.StatusPending, approvals.StatusApproved, approvals.StatusRejected, approvals.StatusExpired, approvals.StatusUsed}

// streamKeepAlive is how often an idle approvals stream sends a comment,
// so that proxies keep it open; streamWrite bounds each write.
const (
	streamKeepAlive = 15 * time.Second
	streamWrite     = 30 * time.Second
)

// approvalRoutes registers the approval routes on r.
func (h *handler) approvalRoutes(r *mux.Router) {
	h.route(r, Prefix+ApprovalsPath, methods{http.MethodGet: h.listApprovals})
	h.route(r, Prefix+ApprovalStreamPath, methods{http.MethodGet: h.streamApprovals})
	h.route(r, Prefix+ApprovalsPath+"/{id}/approve", methods{http.MethodPost: h.decider(approvals.StatusApproved)})
	h.route(r, Prefix+ApprovalsPath+"/{id}/reject", methods{http.MethodPost: h.decider(approvals.StatusRejected)})
}

func (h *handler) approvals() (Approvals, error) {
	if h.opts.Approvals == nil {
		return nil, notFound("approvals are not available on this gateway")
	}
	return h.opts.Approvals, nil
}

// listApprovals is GET /admin/v1/approvals?status=&workspace_id=&limit=.
func (h *handler) listApprovals(w http.ResponseWriter, r *http.Request) error {
	ap, err := h.approvals()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := approvals.Filter{Status: q.Get("status"), WorkspaceID: q.Get("workspace_id")}
	if f.Status != "" {
		if err := checkEnum("status", f.Status, approvalStatuses); err != nil {
			return err
		}
	}
	if f.WorkspaceID != "" {
		if err := checkID("workspace_id", f.WorkspaceID); err != nil {
			return err
		}
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			return invalid("limit %q is not a number from 1 to 1000", clip(s))
		}
		f.Limit = n
	}
	list, err := ap.List(r.Context(), f)
	if err != nil {
		return err
	}
	if list == nil {
		list = []approvals.Approval{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": list})
	return nil
}

// DecisionRequest is the body of POST /admin/v1/approvals/{id}/approve and
// /reject: who decides (required) and why (optional).
type DecisionRequest struct {
	DecidedBy string `json:"decided_by"`
	Reason    string `json:"reason"`
}

// decider returns the handler of POST .../{id}/approve or /reject: 200 with
// the approval as decided; 400 without decided_by, 404 for an unknown id,
// 409 once it is no longer pending (decided, expired or used).
func (h *handler) decider(status string) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ap, err := h.approvals()
		if err != nil {
			return err
		}
		id := mux.Vars(r)["id"]
		if err := checkID("approval id", id); err != nil {
			return err
		}
		var in DecisionRequest
		if err := h.decode(w, r, &in); err != nil {
			return err
		}
		if err := checkText("decided_by", in.DecidedBy); err != nil {
			return invalid("%s: name the person who decides", gateway.ErrorMessageOf(err))
		}
		if utf8.RuneCountInString(in.Reason) > maxTextRunes || strings.ContainsFunc(in.Reason, unicode.IsControl) {
			return invalid("field \"reason\" must be plain text of at most %d characters", maxTextRunes)
		}
		a, err := ap.Decide(r.Context(), id, status, in.DecidedBy, in.Reason)
		if err != nil {
			return err
		}
		h.log.Info("approval decided", append(logChange(r), zap.String("status", a.Status), zap.String("decided_by", a.DecidedBy))...)
		writeJSON(w, http.StatusOK, a)
		return nil
	}
}

// streamApprovals is GET /admin/v1/approvals/stream: a text/event-stream
// of "approval" events, each the JSON of one approval — every pending one
// when the stream opens and as it appears, then again as it leaves
// pending. While it is open the caller counts as a responsible person:
// calls that need an approval wait for one instead of being refused.
func (h *handler) streamApprovals(w http.ResponseWriter, r *http.Request) error {
	ap, err := h.approvals()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	events, err := ap.Watch(ctx)
	if err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(s string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWrite))
		if _, err := fmt.Fprint(w, s); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write(": approvals stream open; you count as an approver while it stays open\n\n") {
		return nil
	}
	keep := time.NewTicker(streamKeepAlive)
	defer keep.Stop()
	for {
		select {
		case a, ok := <-events:
			if !ok {
				return nil // the store failed or the request ended: the client reconnects
			}
			b, _ := json.Marshal(a)
			if !write("event: approval\nid: " + a.ID + "\ndata: " + string(b) + "\n\n") {
				return nil
			}
		case <-keep.C:
			if !write(": keep-alive\n\n") {
				return nil
			}
		}
	}
}
