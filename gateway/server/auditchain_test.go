package server_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// The App seals the audit trail in the background: a row written through
// its store gets its seq and hash without anyone asking, the chain
// verifies, and Close stops the sealer before the store closes.
func TestAppSealsTheAuditTrail(t *testing.T) {
	vars := map[string]string{
		"MCPGATE_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "chain.db"),
		"MCPGATE_JWT_SECRET":   "chain-test-secret-0123456789abcdef012345",
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
	rep, err := app.Store.VerifyAuditChain(ctx)
	if err != nil || rep.Problem != nil || rep.Verified != 1 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	if err := app.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
