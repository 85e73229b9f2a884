package admin

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"

	"github.com/mcpgate/mcpgate/gateway"
)

// ExplainPath is the decision playground: POST a call, get the policy's
// decision with its explanation (docs/http.md, Explain).
const ExplainPath = "/explain"

// ExplainRequest is the body of POST /admin/v1/explain, the flags of
// `mcpgate policy explain`: the session to explain a call of and the call
// (tool and its arguments, a JSON object). On SupaCloud (Surface "" or
// "supacloud") the session is an agent task session: workspace, task,
// optional profile and user. On cc_server (Surface "ccserver") it is a
// cc_server credential's claims: user (sub, required), kind, mode,
// workspace (a server-started agent's own) and ticket.
type ExplainRequest struct {
	// Surface names the surface whose policy decides the call: "" or
	// "supacloud", or "ccserver" (gateway.SurfaceCCServer).
	Surface string `json:"surface"`
	// Workspace is the session's workspace; on cc_server the
	// workspace_id claim of a server-started agent, "" for a user.
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
	// Kind, Mode and Ticket are cc_server claims: the principal kind
	// ("user", the default, or "agent"), the conversation mode ("" is
	// chat) and the run's own ticket (ticket_id).
	Kind   string `json:"kind"`
	Mode   string `json:"mode"`
	Ticket string `json:"ticket"`
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

// CheckExplainRequest validates req as the admin API does. On SupaCloud
// workspace, task and tool are required ids, profile and user optional
// ones, and kind, mode and ticket (cc_server claims) absent; on cc_server
// user and tool are required ids, kind user or agent, workspace, mode and
// ticket optional ids, and task and profile (SupaCloud's) absent. args
// must be a JSON object when present. The error is EInvalid, naming the
// field.
func CheckExplainRequest(req ExplainRequest) error {
	required := []struct{ name, v string }{{"workspace", req.Workspace}, {"task", req.Task}, {"tool", req.Tool}}
	optional := []struct{ name, v string }{{"profile", req.Profile}, {"user", req.User}}
	foreign := []struct{ name, v string }{{"kind", req.Kind}, {"mode", req.Mode}, {"ticket", req.Ticket}}
	need := "the workspace, the task and the tool of the call"
	switch req.Surface {
	case "", gateway.SurfaceSupaCloud:
	case gateway.SurfaceCCServer:
		required = []struct{ name, v string }{{"user", req.User}, {"tool", req.Tool}}
		optional = []struct{ name, v string }{{"workspace", req.Workspace}, {"mode", req.Mode}, {"ticket", req.Ticket}}
		foreign = []struct{ name, v string }{{"task", req.Task}, {"profile", req.Profile}}
		need = "the user (the credential's sub) and the tool of the call"
		if k := gateway.PrincipalKind(req.Kind); k != "" && k != gateway.PrincipalUser && k != gateway.PrincipalAgent {
			return invalid("kind %q is not a cc_server principal; use user (a person's client, the default) or agent (a server-started agent)", clip(req.Kind))
		}
	default:
		return invalid("surface %q is not one the gateway serves; use %s (the default) or %s", clip(req.Surface), gateway.SurfaceSupaCloud, gateway.SurfaceCCServer)
	}
	for _, f := range required {
		if f.v == "" {
			return invalid("%s is required: explain needs %s", f.name, need)
		}
		if err := checkID(f.name, f.v); err != nil {
			return err
		}
	}
	for _, f := range optional {
		if f.v != "" {
			if err := checkID(f.name, f.v); err != nil {
				return err
			}
		}
	}
	for _, f := range foreign {
		if f.v != "" {
			return invalid("%s is not a field of a %s session; drop it, or set surface to the surface it belongs to", f.name, cmp.Or(req.Surface, gateway.SurfaceSupaCloud))
		}
	}
	if a := bytes.TrimSpace(req.Args); len(a) > 0 && !bytes.Equal(a, []byte("null")) && a[0] != '{' {
		return invalid("args must be a JSON object of the call's arguments, e.g. {\"slug\": \"nightly-report\"}")
	}
	return nil
}
