package admin

import (
	"context"
	"net/http"

	"github.com/gorilla/mux"
	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
)

// Upstreams serves the bridged upstreams' routes (docs/http.md, "Bridged
// upstreams"; docs/requirements.md#pinned-tools): the upstreams with their
// states, each one's tools with their pinned and current definitions, and
// a person's decision on a quarantined tool.
type Upstreams interface {
	// List returns every bridged upstream: name, surface, state and its
	// tools' counts by review state.
	List(ctx context.Context) (any, error)
	// Tools returns the tools of upstream name: each one's registry name,
	// state, what changed, pinned and current definitions. ENotFound for
	// an upstream the file does not declare.
	Tools(ctx context.Context, name string) (any, error)
	// Decide approves or rejects the quarantined tool (the upstream's
	// own name) of upstream name, recording decidedBy; the decision
	// applies on every replica. ENotFound for an unknown upstream or
	// tool, EConflict for a tool that is not quarantined.
	Decide(ctx context.Context, name, tool string, approve bool, decidedBy string) (any, error)
}

// UpstreamDecision is the body of POST
// /admin/v1/upstreams/{name}/tools/{tool}/approve and /reject.
type UpstreamDecision struct {
	DecidedBy string `json:"decided_by"`
}

// upstreamRoutes registers the bridged upstreams' routes (admin token
// only; 404 when the gateway bridges none).
func (h *handler) upstreamRoutes(r *mux.Router) {
	base := Prefix + "/upstreams"
	h.route(r, base, methods{http.MethodGet: h.listUpstreams})
	h.route(r, base+"/{name}/tools", methods{http.MethodGet: h.upstreamTools})
	h.route(r, base+"/{name}/tools/{tool}/approve", methods{http.MethodPost: h.decideUpstreamTool(true)})
	h.route(r, base+"/{name}/tools/{tool}/reject", methods{http.MethodPost: h.decideUpstreamTool(false)})
}

func (h *handler) upstreams() (Upstreams, error) {
	if h.opts.Upstreams == nil {
		return nil, notFound("this gateway bridges no upstreams; set MCPGATE_UPSTREAMS_FILE")
	}
	return h.opts.Upstreams, nil
}

// listUpstreams is GET /admin/v1/upstreams.
func (h *handler) listUpstreams(w http.ResponseWriter, r *http.Request) error {
	u, err := h.upstreams()
	if err != nil {
		return err
	}
	out, err := u.List(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// upstreamTools is GET /admin/v1/upstreams/{name}/tools.
func (h *handler) upstreamTools(w http.ResponseWriter, r *http.Request) error {
	u, err := h.upstreams()
	if err != nil {
		return err
	}
	out, err := u.Tools(r.Context(), mux.Vars(r)["name"])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// decideUpstreamTool is POST .../tools/{tool}/approve or /reject: 200 with
// the tool as decided; 400 without decided_by, 404 for an unknown
// upstream or tool, 409 for a tool that is not quarantined.
func (h *handler) decideUpstreamTool(approve bool) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		u, err := h.upstreams()
		if err != nil {
			return err
		}
		var in UpstreamDecision
		if err := h.decode(w, r, &in); err != nil {
			return err
		}
		if err := checkText("decided_by", in.DecidedBy); err != nil {
			return invalid("%s: name the person who reviewed the tool", gateway.ErrorMessageOf(err))
		}
		vars := mux.Vars(r)
		out, err := u.Decide(r.Context(), vars["name"], vars["tool"], approve, in.DecidedBy)
		if err != nil {
			return err
		}
		h.log.Info("bridged tool decided", append(logChange(r), zap.String("upstream", vars["name"]), zap.String("tool", vars["tool"]),
			zap.Bool("approved", approve), zap.String("decided_by", in.DecidedBy))...)
		writeJSON(w, http.StatusOK, out)
		return nil
	}
}
