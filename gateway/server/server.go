// Package server composes mcpgate: it opens the audit store, compiles the
// policy bundle, picks the tool adapter, and serves the MCP endpoint, the
// admin API and the probes on one HTTP handler. It is the only package
// besides cmd/mcpgate that sees every other package.
package server

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/mcp"
)

// FullStore is a store that serves both the request path and the admin API;
// the PostgreSQL and embedded stores implement it.
type FullStore interface {
	Store
	admin.Store
	Close() error
}

// Server is a running gateway's HTTP side.
type Server struct {
	handler   http.Handler
	transport *mcp.Transport
	store     Store
}

// Deps are the parts New wires together.
type Deps struct {
	Store          FullStore
	Pipeline       *Pipeline
	Auth           mcp.Authenticator
	AdminToken     string
	ValidateGrant  func(string) error
	Logger         *zap.Logger
	Registry       *prometheus.Registry
	MaxBodyBytes   int64
	AllowedOrigins []string
	Version        string
}

// New builds the HTTP handler: /mcp (agent sessions), /admin/v1 (operators),
// /healthz, /readyz and /metrics (DESIGN.md §4).
func New(d Deps) (*Server, error) {
	t, err := mcp.NewHandler(mcp.Options{
		Authenticator:  d.Auth,
		Handler:        d.Pipeline,
		Logger:         d.Logger,
		MaxBodyBytes:   d.MaxBodyBytes,
		ServerName:     "mcpgate",
		ServerVersion:  d.Version,
		Instructions:   "SupaCloud tools, authorized by mcpgate. tools/list shows exactly the tools your agent profile may call.",
		AllowedOrigins: d.AllowedOrigins,
	})
	if err != nil {
		return nil, err
	}
	s := &Server{transport: t, store: d.Store}
	r := mux.NewRouter()
	r.Handle("/mcp", t).Methods(http.MethodPost, http.MethodGet, http.MethodDelete, http.MethodOptions)
	r.PathPrefix("/admin/v1").Handler(admin.NewHandler(d.Store, admin.Options{
		Token:         d.AdminToken,
		ValidateGrant: d.ValidateGrant,
		Logger:        d.Logger,
		OnChange:      s.workspaceChanged,
	}))
	r.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.HandleFunc("/readyz", s.ready)
	reg := d.Registry
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	s.handler = r
	return s, nil
}

// ServeHTTP serves every route of the gateway.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Close ends all MCP sessions and streams.
func (s *Server) Close() { s.transport.Close() }

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "audit store: " + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// workspaceChanged is called by the admin API after a change that can alter
// a workspace's visible tools ("" for every workspace).
func (s *Server) workspaceChanged(_ string) {}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
