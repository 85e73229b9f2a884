package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// downStore is a store whose Ping fails the way PostgreSQL's does when
// the database host does not answer.
type downStore struct{ server.FullStore }

func (downStore) Ping(context.Context) error {
	return gateway.Wrap(gateway.EUnavailable, errors.New("dial tcp 10.20.30.40:5432: connect: connection refused"), "postgres: ping")
}

// /readyz answers "not ready" with a generic reason: the database's host
// and port, and whatever else the driver says, go to the log only (issue
// 8, point 5d).
func TestReadyzHidesTheStoreError(t *testing.T) {
	s := serve(t, nil)
	core, logs := observer.New(zap.WarnLevel)
	srv, err := server.New(server.Deps{
		Store: downStore{s.app.Store}, Pipeline: s.app.Pipeline, Auth: s.app.JWT,
		Logger: zap.New(core), Registry: prometheus.NewRegistry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503", rec.Code)
	}
	for _, secret := range []string{"10.20.30.40", "5432", "dial", "postgres"} {
		if strings.Contains(string(body), secret) {
			t.Errorf("/readyz tells %q: %s", secret, body)
		}
	}
	if !strings.Contains(string(body), `"status":"unavailable"`) {
		t.Errorf("body %s, want status unavailable", body)
	}
	if logs.FilterMessageSnippet("readyz").Len() != 1 || !strings.Contains(logs.All()[0].ContextMap()["error"].(string), "10.20.30.40:5432") {
		t.Errorf("log %v, want one entry with the store's error", logs.All())
	}
}

// TestProbesAndMetricsCheckHost: /healthz, /readyz and /metrics (on the
// main handler and on the metrics listener's, pprof included) refuse a
// Host that is no name of the gateway, as the MCP endpoints do (DNS
// rebinding: a page of a rebound name must not read the metrics), and
// still answer the configured hosts, the loopback names and IP addresses,
// which is what Prometheus and kubelet probes send (issue 22, item 17c).
func TestProbesAndMetricsCheckHost(t *testing.T) {
	s := serve(t, nil)
	srv, err := server.New(server.Deps{
		Store: s.app.Store, Pipeline: s.app.Pipeline, Auth: s.app.JWT,
		Logger: zap.NewNop(), Registry: prometheus.NewRegistry(), Pprof: true,
		HTTP: config.HTTP{AllowedHosts: []string{"gw.example.com", "mcp.example.com:8443"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	handlers := map[string]http.Handler{"main": srv, "probes": srv.Probes()}
	for name, h := range handlers {
		for _, path := range []string{"/healthz", "/readyz", "/metrics", "/debug/pprof/cmdline"} {
			if name == "main" && path == "/debug/pprof/cmdline" {
				continue // pprof is served on the metrics listener only
			}
			for host, allowed := range map[string]bool{
				"evil.example": false, "evil.example:8080": false, "gw.example.com.evil.example": false,
				"mcp.example.com": false, "mcp.example.com:80": false,
				"gw.example.com": true, "GW.example.com:9090": true, "mcp.example.com:8443": true,
				"localhost:9090": true, "127.0.0.1:8080": true, "[::1]:9090": true, "10.1.2.3:9090": true, "[fd00::7]:9090": true,
			} {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Host = host
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if refused := rec.Code == http.StatusForbidden; refused == allowed {
					t.Errorf("%s %s Host %q: status %d, want allowed=%v", name, path, host, rec.Code, allowed)
				}
				if !allowed && !strings.Contains(rec.Body.String(), "MCPGATE_ALLOWED_HOSTS") {
					t.Errorf("%s %s Host %q: body %s does not say what to do", name, path, host, rec.Body)
				}
			}
		}
	}
}
