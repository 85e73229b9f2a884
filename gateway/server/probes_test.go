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
