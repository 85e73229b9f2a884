// Package server wires mcpgate together and serves it over HTTP: it opens
// the audit store, compiles the policy bundle, picks the tool adapter,
// builds the tools/call pipeline (gateway/pipeline) over them, and serves
// the MCP endpoint, the admin API and the probes on one HTTP handler. It is
// the only package besides cmd/mcpgate that sees every other package.
package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/pprof"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/approvals"
	"github.com/mcpgate/mcpgate/gateway/auditlog"
	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/console"
	"github.com/mcpgate/mcpgate/gateway/mcp"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
	"github.com/mcpgate/mcpgate/gateway/replica"
	"github.com/mcpgate/mcpgate/gateway/store"
)

// FullStore is the whole store contract (gateway/store.Store); the
// PostgreSQL and embedded stores implement it.
type FullStore = store.Store

// Server is a running gateway's HTTP side.
type Server struct {
	handler http.Handler
	// surface is the SupaCloud surface this handler serves (/mcp, and
	// /api/mcp when Deps.APIAuth is set); surfaces are every surface New
	// opened, closed with the Server.
	surface  *Surface
	surfaces []*Surface
	store    pipeline.Store
	log      *zap.Logger
	probes   http.Handler // /healthz, /readyz, /metrics
	callers  CallerInvalidator
	// changes handles announced changes (Changes), and counts those of
	// this process's admin API.
	changes *replica.Coordinator
	policy  admin.Policy
	bridges map[string]Bridged // /readyz
	keys    *auth.JWKS         // /readyz
}

// CallerInvalidator drops cached callers; *callercache.Cache implements
// it. Calls that start after a method returns read the store.
type CallerInvalidator interface {
	// InvalidateWorkspace drops the cached callers of one workspace.
	InvalidateWorkspace(workspaceID string)
	// InvalidateAll drops every cached caller.
	InvalidateAll()
}

// Deps are the parts New wires together.
type Deps struct {
	Store FullStore
	// Audit records the audit events besides tool calls (refused
	// credentials on every endpoint and the admin API, admin writes);
	// nil records none.
	Audit *auditlog.Log
	// Surfaces are the surfaces New opens, each with its Pipeline built
	// (App: the SupaCloud surface, on the main handler, and cc_server, on
	// its own listener when it is on; see openSurfaces); nil serves
	// Pipeline on the endpoints of Auth and APIAuth.
	Surfaces []*Surface
	Pipeline *pipeline.Pipeline
	Auth     mcp.Authenticator
	// APIAuth authenticates the scmt_ API tokens of external coordinators
	// on /api/mcp (auth.APITokens); nil leaves /api/mcp unmounted.
	APIAuth    mcp.Authenticator
	AdminToken string
	// ConsoleUsers verifies console sign-in JWTs of workspace members
	// (auth.JWT.ConsoleUsers) for the admin API and the console; nil: no
	// workspace owner/admin sign-in.
	ConsoleUsers   func(r *http.Request) (workspaceID, userID string, ok bool)
	ValidateGrant  func(string) error
	Logger         *zap.Logger
	Registry       *prometheus.Registry
	MaxBodyBytes   int64
	AllowedOrigins []string
	// HTTP is the public URL, the OAuth authorization servers and the
	// allowed Host names (config.HTTP). A zero value turns the Host check
	// and the resource metadata off.
	HTTP    config.HTTP
	Version string

	// MaxBatchMessages and MaxBatchReplyBytes bound one JSON-RPC batch:
	// its members and the bytes of its responses (mcp.Options); 0 takes
	// the transport's defaults.
	MaxBatchMessages   int
	MaxBatchReplyBytes int64
	// MaxHeldBodyBytes bounds the request bodies held at once
	// (mcp.Options); 0 takes the transport's default.
	MaxHeldBodyBytes int64
	// WriteTimeout bounds each SSE event and each MCP POST reply, counted
	// from when the reply is ready (config.Conn.WriteTimeout); 0: no bound.
	WriteTimeout time.Duration
	// SessionSecret signs MCP session ids (config.Config.SessionSecret);
	// empty: a key of this process only (mcp.Options.SessionSecret).
	SessionSecret []byte
	// SessionEnds records ended MCP sessions for both endpoints; App
	// passes a SessionEndCache over its store, so a DELETE holds on every
	// replica of one database (the Server's change handler keeps the
	// cache current). nil: an mcp.MemorySessionEnds of this Server only.
	SessionEnds mcp.SessionEnds
	// Answers carries the client's responses to relayed requests between
	// replicas (App passes the PostgreSQL table of migration 00013); nil:
	// a response reaches only the requests of this Server.
	Answers mcp.RelayAnswers
	// ProbesApart leaves /healthz, /readyz and /metrics out of the main
	// handler; they are served only by Server.Probes, on the listener of
	// MCPGATE_METRICS_LISTEN.
	ProbesApart bool
	// Pprof adds Go's runtime profiles (net/http/pprof, /debug/pprof/) to
	// Server.Probes, and only there (config.Config.Pprof).
	Pprof bool

	// Explain answers POST /admin/v1/explain (server.Explain); nil answers
	// it 404.
	Explain admin.Explainer
	// Upstreams serves the admin API's bridged upstreams (GET
	// /admin/v1/upstreams, their tools' pins, approve and reject); nil
	// answers them 404.
	Upstreams admin.Upstreams
	// Approvals serves the admin API's approval routes (gateway/approvals'
	// Service, the one Pipeline.Approvals waits on); nil answers them 404.
	Approvals admin.Approvals
	// Gates is the backend adapter's human gates when it keeps them (the
	// demo backend); nil (an upstream MCP server) answers the admin API's
	// gates routes 501, and the console says they are decided in the
	// backend.
	Gates approvals.HumanGates

	// Callers is the cache Pipeline.Callers reads, if any: the admin API's
	// changes invalidate it (Server.WorkspaceChanged). nil: no cache.
	Callers CallerInvalidator
	// Policy is the live policy (*policy.Live): its status and reload in
	// the admin API, its revision in /readyz. nil: neither.
	Policy admin.Policy
	// Bridges are the bridged upstreams by surface, whose states /readyz
	// shows; nil: none.
	Bridges map[string]Bridged
	// Keys is the identity provider's key set, whose state /readyz shows
	// (App.openKeys); nil: none.
	Keys *auth.JWKS
	// Traced reads each request's trace context (traceparent) and MCP
	// session headers for the pipeline's spans (tracing.Middleware); set
	// when tracing is on.
	Traced bool
}

// apiMCPPath is the external MCP gateway (docs/requirements.md#external-gateway; external
// coordinators with scmt_ API tokens).
const apiMCPPath = "/api/mcp"

// Paths of the HTTP+SSE transport of MCP 2024-11-05: the event stream and
// the endpoint its "endpoint" event names for POSTs.
const (
	legacySSEPath      = "/sse"
	legacyMessagesPath = "/messages"
)

// New builds the HTTP handler: the endpoints of d.Surface (else of
// d.Pipeline: /mcp for agent sessions, and /sse with /messages for
// 2024-11-05 clients; /api/mcp for external coordinators, when d.APIAuth
// is set), the OAuth protected resource metadata under
// /.well-known, /admin/v1 (operators), and, unless d.ProbesApart,
// /healthz, /readyz and /metrics.
func New(d Deps) (*Server, error) {
	if d.SessionEnds == nil {
		d.SessionEnds = mcp.NewMemorySessionEnds()
	}
	// The 401 names the resource metadata only when it names an
	// authorization server (MCP basic/authorization, RFC 9728 §5.1): a
	// client that follows resource_metadata starts an OAuth flow, which
	// cannot work without one; it then sees a plain Bearer challenge.
	metaURL := ""
	if d.HTTP.PublicURL != "" && len(d.HTTP.AuthorizationServers) > 0 {
		u, err := mcp.MetadataURL(d.HTTP.PublicURL)
		if err != nil {
			return nil, fmt.Errorf("MCPGATE_PUBLIC_URL: %w", err)
		}
		metaURL = u
	}
	sfs := d.Surfaces
	if sfs == nil {
		sfs = []*Surface{{Name: gateway.SurfaceSupaCloud, Pipeline: d.Pipeline, Endpoints: supacloudEndpoints(d.Auth, d.APIAuth)}}
	}
	log := d.Logger
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{store: d.Store, log: log, callers: d.Callers, policy: d.Policy, bridges: d.Bridges, keys: d.Keys}
	r := mux.NewRouter()
	if err := s.openSurfaces(d, sfs, r, metaURL, strings.TrimSuffix(publicPath(d.HTTP.PublicURL), "/")); err != nil {
		return nil, err
	}
	ends, _ := d.SessionEnds.(*replica.SessionEndCache) // kept current by the change feed
	s.changes = replica.NewCoordinator(s, ends, log)
	if d.HTTP.PublicURL != "" {
		mountMetadata(r, d.HTTP)
	}
	var tokenReader func(*http.Request) (string, bool)
	var workspaceAdmin func(*http.Request) (string, string, bool)
	if d.AdminToken != "" { // no admin token: the admin API is off altogether
		tokenReader = auth.ManagementReader(d.Store, d.Logger, nil)
		workspaceAdmin = d.ConsoleUsers
	}
	adminAPI := admin.NewHandler(revokeAnnouncer{FullStore: d.Store, s: s}, admin.Options{
		Token:          d.AdminToken,
		TokenReader:    tokenReader,
		WorkspaceAdmin: workspaceAdmin,
		Audit:          adminAuditor(d.Audit),
		ValidateGrant:  d.ValidateGrant,
		Logger:         d.Logger,
		OnChange:       func(ws string) { s.announce(gateway.Change{WorkspaceID: ws}) },
		Explain:        d.Explain,
		Upstreams:      d.Upstreams,
		Policy:         d.Policy,
		Approvals:      d.Approvals,
		Gates:          d.Gates,
		Chain:          d.Store,
	})
	r.PathPrefix(admin.Prefix).Handler(adminAPI)
	if d.AdminToken != "" { // the console works through the admin API, so it is off with it
		// An operator with the console's approvals page open counts as an
		// approver (gateway/approvals' Service records the presence).
		approvers, _ := d.Approvals.(console.Approvers)
		r.PathPrefix(console.Prefix).Handler(console.New(console.Options{Admin: adminAPI, AdminPrefix: admin.Prefix,
			Sessions: consoleSessions{d.Store}, Registerer: d.Registry, Approvers: approvers}))
	}
	reg := d.Registry
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	probes := mux.NewRouter()
	s.mountProbes(probes, metrics)
	if d.Pprof {
		probes.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		probes.HandleFunc("/debug/pprof/profile", pprof.Profile)
		probes.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		probes.HandleFunc("/debug/pprof/trace", pprof.Trace)
		probes.PathPrefix("/debug/pprof/").HandlerFunc(pprof.Index) // the index and the named profiles (heap, goroutine, …)
	}
	// The probes, the metrics and the profiles answer only the gateway's
	// names, as the MCP endpoints do (mcp.ProbeHosts).
	checked := checkHost(probes, mcp.ProbeHosts(d.HTTP.AllowedHosts))
	if !d.ProbesApart {
		for _, path := range probePaths {
			r.Handle(path, checked)
		}
	}
	s.handler, s.probes = traced(r, d.Traced), checked
	return s, nil
}

// newTransport builds one MCP endpoint over pl with the limits of d,
// authenticating with a, telling refused of the methods it does not serve
// and sending instructions at initialize.
func newTransport(d Deps, pl *pipeline.Pipeline, a mcp.Authenticator, refused func(context.Context, *gateway.Principal, string), metaURL, instructions string) (*mcp.Transport, error) {
	return mcp.NewHandler(mcp.Options{
		Authenticator:       a,
		RefusedMethod:       refused,
		Handler:             pl,
		Logger:              d.Logger,
		MaxBodyBytes:        d.MaxBodyBytes,
		MaxBatchMessages:    d.MaxBatchMessages,
		MaxBatchReplyBytes:  d.MaxBatchReplyBytes,
		MaxHeldBodyBytes:    d.MaxHeldBodyBytes,
		ServerName:          "mcpgate",
		ServerVersion:       d.Version,
		Instructions:        instructions,
		AllowedOrigins:      d.AllowedOrigins,
		AllowedHosts:        d.HTTP.AllowedHosts,
		ResourceMetadataURL: metaURL,
		WriteTimeout:        d.WriteTimeout,
		SessionSecret:       d.SessionSecret,
		SessionEnds:         d.SessionEnds,
		Answers:             d.Answers,
	})
}

// ServeHTTP serves every route of the gateway (without the probes when
// Deps.ProbesApart).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Probes serves /healthz, /readyz and /metrics, and nothing else: the
// handler of the metrics listener.
func (s *Server) Probes() http.Handler { return s.probes }

// probePaths are the routes mountProbes serves.
var probePaths = []string{"/healthz", "/readyz", "/metrics"}

// mountProbes serves /healthz, /readyz and /metrics on r.
func (s *Server) mountProbes(r *mux.Router, metrics http.Handler) {
	r.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.HandleFunc("/readyz", s.ready)
	r.Handle("/metrics", metrics)
}

// checkHost answers 403 to a request whose Host hostOK refuses
// (mcp.ProbeHosts: DNS rebinding protection), else serves it with h.
func checkHost(h http.Handler, hostOK func(string) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostOK(r.Host) {
			writeJSON(w, http.StatusForbidden, map[string]string{"status": "forbidden",
				"error": fmt.Sprintf("Host %q is not a name of this gateway (DNS rebinding protection); use an allowed host name, localhost or an IP address, or an operator can add it to MCPGATE_ALLOWED_HOSTS", r.Host)})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Close ends all MCP sessions and streams, of every surface, and the
// degraded refresh of Changes.
func (s *Server) Close() {
	s.changes.Close()
	for _, sf := range s.surfaces {
		sf.Close()
	}
}

// ready answers /readyz: whether the audit store answers, and for
// operators the policy revision live on each surface
// ({"policy":{"supacloud":{"revision":"…"}}}, with "refused_revision"
// while the last candidate was refused and the live one stays: a replica
// whose folder differs from the others' shows it). The reason of a "not
// ready" is generic, since anyone who reaches the probe reads it; the
// store's own error (which names the database host and port) goes to the
// log. For the same reason the policy part holds the revision only, not
// the folder it came from, and the upstreams part ({"upstreams":
// {"supacloud":{"forge":"ok","tracker":"degraded"}}}) each bridged
// upstream's name and state, never its URL.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	body := map[string]any{"status": "ready"}
	if s.policy != nil {
		body["policy"] = readyPolicy(s.policy)
	}
	if len(s.bridges) > 0 {
		// A degraded upstream leaves the replica ready: everything else
		// (and the other upstreams) serve; operators read the states.
		body["upstreams"] = readyUpstreams(s.bridges)
	}
	if s.keys != nil {
		st, ok := readyKeys(s.keys)
		body["jwks"] = st
		if !ok {
			body["status"], body["reason"] = "unavailable", "no key of the identity provider verifies yet; see the gateway's log"
			writeJSON(w, http.StatusServiceUnavailable, body)
			return
		}
	}
	if err := s.store.Ping(ctx); err != nil {
		s.log.Warn("readyz: the audit store does not answer; the gateway refuses tool calls until it does", zap.Error(err))
		body["status"], body["reason"] = "unavailable", "the audit store does not answer; see the gateway's log"
		writeJSON(w, http.StatusServiceUnavailable, body)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// readyPolicy is the policy part of /readyz: per surface the live
// revision and, while the last attempt was refused, the refused one.
func readyPolicy(p admin.Policy) map[string]any {
	sts := []policystatus.Status{p.Status()}
	if all, ok := p.(interface{ Statuses() []policystatus.Status }); ok {
		sts = all.Statuses()
	}
	out := make(map[string]any, len(sts))
	for _, st := range sts {
		v := map[string]string{"revision": st.Revision}
		if at := st.LastAttempt; at != nil && at.Outcome == policystatus.Refused {
			v["refused_revision"] = at.Revision
		}
		out[st.Surface] = v
	}
	return out
}

// WorkspaceChanged is called after a change that can alter what a
// workspace's callers may see or do (workspaceID "" for every workspace:
// seat types, org plans). First, before it returns, it drops the cached
// callers of that workspace (of all workspaces for ""), so that every
// call that starts afterwards reads the store and sees the change. Then
// open MCP streams of that workspace whose tools/list now differs get
// notifications/tools/list_changed; that check runs in the background.
//
// The admin API of this process calls it after each successful change,
// and the change feed (Changes) for changes made through other replicas,
// so this replica behaves as if the change had been made here.
func (s *Server) WorkspaceChanged(workspaceID string) {
	s.DropCallers(workspaceID)
	s.RefreshTools(func(p *gateway.Principal) bool { return workspaceID == "" || p.WorkspaceID == workspaceID })
}

// DropCallers drops the cached callers of workspace workspaceID (of
// every workspace for ""); calls that start after it returns read the
// store (replica.Replica).
func (s *Server) DropCallers(workspaceID string) {
	switch {
	case s.callers == nil:
	case workspaceID == "":
		s.callers.InvalidateAll()
	default:
		s.callers.InvalidateWorkspace(workspaceID)
	}
}

// PolicyChanged is called after a new policy revision went live: every
// open MCP stream whose tools/list the new revision changes gets
// notifications/tools/list_changed, through the same check as
// WorkspaceChanged (the callers stay cached: the caller did not change).
func (s *Server) PolicyChanged() {
	s.RefreshTools(func(*gateway.Principal) bool { return true })
}

// RefreshTools has both MCP endpoints recompute the tools/list of their
// open streams whose principal matches, and notify those that changed
// (replica.Replica).
func (s *Server) RefreshTools(match func(p *gateway.Principal) bool) { s.surface.RefreshTools(match) }

// mountMetadata serves the OAuth protected resource metadata (RFC 9728) at
// the well-known root, for the gateway as a whole, and path-inserted for
// each MCP endpoint (§3.1), so a client may ask either way.
func mountMetadata(r *mux.Router, h config.HTTP) {
	for _, path := range []string{"", "/mcp", apiMCPPath, legacySSEPath} {
		r.Handle(mcp.WellKnownResourceMetadata+path, mcp.MetadataHandler(mcp.ResourceMetadata{
			Resource:             h.PublicURL + path,
			AuthorizationServers: h.AuthorizationServers,
			ResourceName:         "mcpgate",
		}))
	}
}

// publicPath is the path of the public URL ("" for none): a gateway behind
// a path-prefix proxy names its messages endpoint under that prefix.
func publicPath(publicURL string) string {
	u, err := url.Parse(publicURL)
	if err != nil {
		return ""
	}
	return u.Path
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// adminAuditor is l as the admin API's Auditor: nil (no interface value
// holding a nil *Log) when there is no log.
func adminAuditor(l *auditlog.Log) admin.Auditor {
	if l == nil {
		return nil
	}
	return l
}
