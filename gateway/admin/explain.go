package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
)

// ExplainPath is the decision playground: POST a call, get the policy's
// decision with its explanation (docs/http.md, Explain).
const ExplainPath = "/explain"

// ExplainRequest is the body of POST /admin/v1/explain, the flags of
// `mcpgate policy explain`: the agent task session to explain a call of
// (workspace, task, optional profile and user) and the call (tool and its
// arguments, a JSON object).
type ExplainRequest struct {
	Workspace string `json:"workspace"`
	Task      string `json:"task"`
	// Profile is the session's agent_profile_id; "" for none (the
	// workspace default profile, else the read-only fallback).
	Profile string `json:"profile"`
	// User is the acting user (the JWT's sub); "" takes the actor of the
	// task's latest audited call.
	User string `json:"user"`
	Tool string `json:"tool"`
	// Args are the call's arguments; absent or null for none.
	Args json.RawMessage `json:"args"`
}

// Explainer answers an ExplainRequest with a JSON-encodable explanation
// (gateway/server builds it over the live store and the engine). Errors
// are *gateway.Error values: EInvalid for a request it cannot explain,
// ENotFound for an unknown workspace.
type Explainer func(ctx context.Context, req ExplainRequest) (any, error)

// explain is POST /admin/v1/explain: it checks the request and answers
// 200 with the explanation, which changes nothing.
func (h *handler) explain(w http.ResponseWriter, r *http.Request) error {
	if h.opts.Explain == nil {
		return notFound("explain is not available on this gateway")
	}
	var in ExplainRequest
	if err := h.decode(w, r, &in); err != nil {
		return err
	}
	if err := CheckExplainRequest(in); err != nil {
		return err
	}
	out, err := h.opts.Explain(r.Context(), in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// CheckExplainRequest validates req as the admin API does: workspace,
// task and tool are required ids, profile and user optional ones, and args
// a JSON object when present. The error is EInvalid, naming the field.
func CheckExplainRequest(req ExplainRequest) error {
	for _, f := range []struct{ name, v string }{{"workspace", req.Workspace}, {"task", req.Task}, {"tool", req.Tool}} {
		if f.v == "" {
			return invalid("%s is required: explain needs the workspace, the task and the tool of the call", f.name)
		}
		if err := checkID(f.name, f.v); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, v string }{{"profile", req.Profile}, {"user", req.User}} {
		if f.v != "" {
			if err := checkID(f.name, f.v); err != nil {
				return err
			}
		}
	}
	if a := bytes.TrimSpace(req.Args); len(a) > 0 && !bytes.Equal(a, []byte("null")) && a[0] != '{' {
		return invalid("args must be a JSON object of the call's arguments, e.g. {\"slug\": \"nightly-report\"}")
	}
	return nil
}
