package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// refuseAll is a credential check that refuses every request, so the
// surfaces' pipelines are never reached.
type refuseAll struct{}

func (refuseAll) Authenticate(*http.Request) (*gateway.Principal, error) {
	return nil, gateway.Errorf(gateway.EUnauthenticated, "no credential")
}

// TestSurfacesOpenedByOneLoop: New opens every surface the same way: the
// one without a listener of its own on the main handler, beside the
// admin API; one with a listener of its own on a handler of its own that
// serves its endpoints and nothing else. Two surfaces on the main
// listener are refused, naming both.
func TestSurfacesOpenedByOneLoop(t *testing.T) {
	surfaces := func(apartListen string) []*server.Surface {
		return []*server.Surface{
			{Name: gateway.SurfaceSupaCloud, Pipeline: &pipeline.Pipeline{}, Endpoints: []server.Endpoint{{Path: "/mcp", Auth: refuseAll{}}}},
			{Name: gateway.SurfaceCCServer, Pipeline: &pipeline.Pipeline{}, Listen: apartListen, Endpoints: []server.Endpoint{{Path: "/mcp", Auth: refuseAll{}, Legacy: true}}},
		}
	}
	sfs := surfaces("127.0.0.1:0")
	srv, err := server.New(server.Deps{Surfaces: sfs, AdminToken: "admin-token", Logger: zap.NewNop(), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	if sfs[0].Handler != nil || sfs[1].Handler == nil {
		t.Fatalf("handlers: main %v, apart %v; want only the surface with a listener of its own to get one", sfs[0].Handler, sfs[1].Handler)
	}
	status := func(h http.Handler, method, path string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(`{}`)))
		return rec.Code
	}
	for _, tc := range []struct {
		name         string
		h            http.Handler
		method, path string
		want         int
	}{
		{"main /mcp", srv, http.MethodPost, "/mcp", http.StatusUnauthorized},
		{"main admin API", srv, http.MethodGet, "/admin/v1/workspaces", http.StatusUnauthorized},
		{"apart /mcp", sfs[1].Handler, http.MethodPost, "/mcp", http.StatusUnauthorized},
		{"apart /sse", sfs[1].Handler, http.MethodGet, "/sse", http.StatusUnauthorized},
		{"apart admin API", sfs[1].Handler, http.MethodGet, "/admin/v1/workspaces", http.StatusNotFound},
	} {
		if got := status(tc.h, tc.method, tc.path); got != tc.want {
			t.Errorf("%s: %s %s answered %d, want %d", tc.name, tc.method, tc.path, got, tc.want)
		}
	}

	_, err = server.New(server.Deps{Surfaces: surfaces(""), Logger: zap.NewNop(), Registry: prometheus.NewRegistry()})
	if err == nil || !strings.Contains(err.Error(), gateway.SurfaceSupaCloud) || !strings.Contains(err.Error(), gateway.SurfaceCCServer) {
		t.Errorf("two surfaces on the main listener: %v; want an error naming both", err)
	}
}
