package admin

import (
	"context"
	"net/http"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
)

// Policy is the gateway's live policy as the admin API shows and reloads
// it; *policy.Live implements it.
type Policy interface {
	// Status is the live revision, its source, the last load attempt,
	// the last refused one and the shadow candidate.
	Status() policystatus.Status
	// Reload loads the policy folder again and swaps it in when it passes
	// its checks. It returns the attempt; err is an EConflict
	// *gateway.Error for a bundle that never reloads (the embedded one),
	// or why the candidate was refused (attempt.Outcome "refused").
	Reload(ctx context.Context, trigger string) (*policystatus.Attempt, error)
}

// reloadTrigger is the policystatus.Attempt.Trigger of a reload asked
// for through this API.
const reloadTrigger = "admin"

// policyStatus: GET /policy → policystatus.Status, with the shadow
// candidate's revision and its flips counted since start per tool and
// direction.
func (h *handler) policyStatus(w http.ResponseWriter, _ *http.Request) error {
	if h.opts.Policy == nil {
		return notFound("this gateway has no policy status to show")
	}
	writeJSON(w, http.StatusOK, h.status())
	return nil
}

// status is the Policy's status as the API shows it: a shadow's flips
// are a list, [] when none flipped.
func (h *handler) status() policystatus.Status {
	st := h.opts.Policy.Status()
	if st.Shadow != nil && st.Shadow.Flips == nil {
		sh := *st.Shadow
		sh.Flips = []policystatus.ShadowFlips{}
		st.Shadow = &sh
	}
	return st
}

// reloadPolicy: POST /policy/reload → 200 {"attempt", "status"} when the
// candidate passed (outcome "live" or "unchanged"); 422 with the same body
// and "error" {"code":"PolicyRefused","message": OPA's message} when it was
// refused and the running revision stays; 409 for the embedded bundle.
func (h *handler) reloadPolicy(w http.ResponseWriter, r *http.Request) error {
	if h.opts.Policy == nil {
		return notFound("this gateway has no policy to reload")
	}
	at, err := h.opts.Policy.Reload(r.Context(), reloadTrigger)
	if at == nil {
		return err // not reloadable: EConflict
	}
	h.log.Info("admin policy reload", append(logChange(r), zap.String("outcome", at.Outcome), zap.String("candidate_revision", at.Revision))...)
	body := map[string]any{"attempt": at, "status": h.status()}
	if err != nil {
		body["error"] = map[string]string{"code": "PolicyRefused", "message": at.Error}
		writeJSON(w, http.StatusUnprocessableEntity, body)
		return nil
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}
