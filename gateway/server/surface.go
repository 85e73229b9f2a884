package server

import (
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/callercache"
	"github.com/mcpgate/mcpgate/gateway/confirm"
	"github.com/mcpgate/mcpgate/gateway/mcp"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/tools"
)

// Surface is one MCP surface of the gateway as a value: the catalog its
// tools come from, the policy that decides them (its Rego package), the
// adapter allowed calls go to, the callers it loads, its rate limits, and
// its endpoints (a route and the credential it takes), and the listener
// it is served on. Each surface is built by a function of its own
// (App.supacloudSurface, App.ccServerSurface); App.surfacePipeline turns
// one into its pipeline.Pipeline, and New opens them all with one loop
// (openSurfaces).
type Surface struct {
	// Name is the surface in audit rows, decision logs and rate-limit
	// rules (gateway.SurfaceSupaCloud, gateway.SurfaceCCServer).
	Name    string
	Catalog *tools.Catalog
	Policy  *policy.Live
	Adapter pipeline.Adapter
	// Registry and ToolSet are the catalog with the bridged tools on top
	// and the tool list its policy ranges over, when MCPGATE_UPSTREAMS_FILE
	// is set (nil otherwise); Bridged dispatches the bridged tools' calls
	// (openBridges, upstreams.go).
	Registry *tools.Registry
	ToolSet  *policy.ToolSet
	Bridged  pipeline.Adapter
	// Callers caches what a call loads about its caller; the admin API's
	// changes drop it.
	Callers *callercache.Cache
	// Limits plans each allowed call's rate-limit slots.
	Limits pipeline.RatePlanner
	// Confirmer signs the deploy confirmation tokens of its tools; nil
	// refuses every call that needs one (fail closed).
	Confirmer *confirm.Signer
	// ListEveryTool and WorkspaceFromPolicy are the pipeline's flags of
	// the same names (cc_server sets both).
	ListEveryTool, WorkspaceFromPolicy bool
	// Endpoints are the routes the surface is served on.
	Endpoints []Endpoint
	// Listen is the address of the listener of its own the surface is
	// served on (cc_server: MCPGATE_CCSERVER_LISTEN); "" serves it on the
	// main handler (the Server), beside the admin API and the probes.
	Listen string
	// Handler serves the endpoints of a surface with a listener of its
	// own (Listen set), once New opened it; nil for the main handler's.
	Handler http.Handler

	// Pipeline is the request path over the fields above
	// (App.surfacePipeline).
	Pipeline   *pipeline.Pipeline
	transports []*mcp.Transport
}

// Endpoint is one MCP route of a surface: its path, the credential it
// takes, and what it tells a client at initialize.
type Endpoint struct {
	Path         string
	Auth         mcp.Authenticator
	Instructions string
	// Legacy also serves the HTTP+SSE transport of MCP 2024-11-05 (GET
	// /sse and POST /messages) through this endpoint's transport.
	Legacy bool
}

// Instructions sent at initialize, per endpoint.
const (
	mcpInstructions = "SupaCloud tools, authorized by mcpgate. tools/list shows exactly the tools your agent profile may call."
	// /api/mcp: the same transport code, protocol versions and pipeline
	// as /mcp; only the credential differs (docs/requirements.md#external-tools-list).
	apiInstructions = "SupaCloud's external MCP gateway, authorized by mcpgate. tools/list shows exactly the tools your API token's scopes reach; every other name is answered as unknown."
	ccInstructions  = "cc_server tools, authorized by mcpgate. tools/list offers the whole registry; list_my_tools and search_tool_bm25 say what is callable now in this conversation's mode."
)

// supacloudEndpoints are the SupaCloud surface's routes: /mcp for agent
// sessions (and /sse with /messages), and /api/mcp for external
// coordinators when apiAuth is set.
func supacloudEndpoints(agents, apiAuth mcp.Authenticator) []Endpoint {
	eps := []Endpoint{{Path: "/mcp", Auth: agents, Instructions: mcpInstructions, Legacy: true}}
	if apiAuth != nil {
		eps = append(eps, Endpoint{Path: apiMCPPath, Auth: apiAuth, Instructions: apiInstructions})
	}
	return eps
}

// openSurfaces opens every surface of sfs, in order, each the same way
// (open): on r, the main handler, with the resource metadata a 401 names
// (metaURL) and the public path prefix; or, for a surface with a listener
// of its own (Surface.Listen), on a handler of its own (Surface.Handler),
// which serves neither. Exactly one surface is on the main handler: the
// Server's change handling (admin changes, token revocations, other
// replicas' announcements) reaches its sessions, as a surface with a
// listener of its own is refreshed by its own policy's swaps.
func (s *Server) openSurfaces(d Deps, sfs []*Surface, r *mux.Router, metaURL, prefix string) error {
	for _, sf := range sfs {
		var err error
		switch {
		case sf.Listen != "":
			h := mux.NewRouter()
			if err = sf.open(d, h, "", ""); err == nil {
				sf.Handler = traced(h, d.Traced)
			}
		case s.surface != nil:
			err = fmt.Errorf("surfaces %s and %s are both on the main listener; give one a listener of its own", s.surface.Name, sf.Name)
		default:
			if err = sf.open(d, r, metaURL, prefix); err == nil {
				s.surface = sf
			}
		}
		if err != nil {
			for _, opened := range s.surfaces {
				opened.Close()
			}
			return err
		}
		s.surfaces = append(s.surfaces, sf)
	}
	if s.surface == nil {
		return fmt.Errorf("no surface on the main listener; the gateway serves the SupaCloud surface there")
	}
	return nil
}

// open serves sf on r: one transport per endpoint over sf.Pipeline, with
// the limits of d; metaURL is the resource metadata a 401 names ("" for
// none) and prefix the public path prefix the legacy "endpoint" event
// names /messages under. Every surface is opened here (openSurfaces).
func (sf *Surface) open(d Deps, r *mux.Router, metaURL, prefix string) error {
	for _, ep := range sf.Endpoints {
		t, err := newTransport(d, sf.Pipeline, d.Audit.Guard(sf.Name, ep.Auth), d.Audit.RefusedMethod(sf.Name), metaURL, ep.Instructions)
		if err != nil {
			sf.Close()
			return err
		}
		sf.transports = append(sf.transports, t)
		r.Handle(ep.Path, t) // every method: the transport answers 405 itself, with a JSON-RPC body
		if ep.Legacy {
			legacy := t.LegacyHandler(prefix + legacyMessagesPath)
			r.Handle(legacySSEPath, legacy)
			r.Handle(legacyMessagesPath, legacy)
		}
	}
	return nil
}

// RefreshTools has every endpoint recompute the tools/list of its open
// streams whose principal matches, and notify those that changed.
func (sf *Surface) RefreshTools(match func(p *gateway.Principal) bool) {
	for _, t := range sf.transports {
		t.RefreshTools(match)
	}
}

// DropSessions ends the sessions and streams whose principal matches on
// every endpoint.
func (sf *Surface) DropSessions(match func(p *gateway.Principal) bool) {
	for _, t := range sf.transports {
		t.DropSessions(match)
	}
}

// Close ends every session and stream of the surface.
func (sf *Surface) Close() {
	for _, t := range sf.transports {
		t.Close()
	}
}
