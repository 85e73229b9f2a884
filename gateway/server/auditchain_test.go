package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// The App seals the audit trail in the background: a row written through
// its store gets its seq and hash without anyone asking, the chain
// verifies, and Close stops the sealer before the store closes. A bad
// token on the MCP endpoint and on the admin API is recorded (kind auth,
// its surface, its fingerprint, never the token) and sealed too.
func TestAppSealsTheAuditTrail(t *testing.T) {
	vars := map[string]string{
		"MCPGATE_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "chain.db"),
		"MCPGATE_JWT_SECRET":   "chain-test-secret-0123456789abcdef012345",
		"MCPGATE_ADMIN_TOKEN":  "chain-test-admin-token-0123456789abcdef",
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	app, err := server.Open(context.Background(), cfg, zap.NewNop(), "chain-test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ev := &gateway.AuditEvent{WorkspaceID: "ws-a", Actor: "u1", Tool: "app.list", Status: gateway.AuditDenied}
	if err := app.Store.RecordAudit(ctx, ev); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		list, err := app.Store.ListAuditEvents(ctx, gateway.AuditFilter{Actor: "u1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 1 && list[0].Seq == 1 && len(list[0].Hash) == 64 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the App did not seal the row: %+v", list)
		}
		time.Sleep(50 * time.Millisecond)
	}
	const bad = "Bearer not-a-token-of-this-gateway"
	for _, path := range []string{"/mcp", "/admin/v1/workspaces"} {
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{}`))
		r.Host = "127.0.0.1"
		r.Header.Set("Authorization", bad)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		rec := httptest.NewRecorder()
		app.Server.ServeHTTP(rec, r)
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("%s with a bad token: %d; want 401", path, rec.Code)
		}
	}
	var refused []gateway.AuditEvent
	for {
		list, err := app.Store.ListAuditEvents(ctx, gateway.AuditFilter{Kind: "auth"})
		if err != nil {
			t.Fatal(err)
		}
		sealed := 0
		for _, ev := range list {
			if ev.Seq > 0 {
				sealed++
			}
		}
		if sealed == 2 {
			refused = list
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refused credentials were not recorded and sealed: %+v", list)
		}
		time.Sleep(50 * time.Millisecond)
	}
	surfaces := map[string]bool{}
	for _, ev := range refused {
		surfaces[ev.Surface] = true
		if ev.Tool != "auth.refused" || len(ev.TokenFP) != 16 || strings.Contains(string(ev.Arguments), "not-a-token") {
			t.Errorf("refused credential recorded as %+v (%s)", ev, ev.Arguments)
		}
	}
	if !surfaces[gateway.SurfaceSupaCloud] || !surfaces["admin"] {
		t.Errorf("refused credentials on surfaces %v; want supacloud and admin", surfaces)
	}
	rep, err := app.Store.VerifyAuditChain(ctx)
	if err != nil || rep.Problem != nil || rep.Verified != 3 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	if err := app.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
