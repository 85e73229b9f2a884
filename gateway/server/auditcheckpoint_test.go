package server_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// The App's sealing loop writes a checkpoint of the head signed with
// MCPGATE_AUDIT_SIGNING_KEY_FILE's key; without the variable it says once
// at start that checkpoints are unsigned.
func TestAppSignsCheckpoints(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "audit-key.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, signed := range []bool{true, false} {
		url := "sqlite:" + filepath.Join(dir, map[bool]string{true: "signed.db", false: "unsigned.db"}[signed])
		// A row before the App starts: its first round seals it and
		// checkpoints the head.
		s, err := server.OpenStore(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.RecordAudit(ctx, &gateway.AuditEvent{Tool: "app.list", Status: gateway.AuditDenied}); err != nil {
			t.Fatal(err)
		}
		_ = s.Close()
		vars := map[string]string{"MCPGATE_DATABASE_URL": url, "MCPGATE_JWT_SECRET": "checkpoint-test-secret-0123456789abcdef"}
		if signed {
			vars["MCPGATE_AUDIT_SIGNING_KEY_FILE"] = keyFile
		}
		cfg, err := config.Load(func(k string) string { return vars[k] })
		if err != nil {
			t.Fatal(err)
		}
		core, logs := observer.New(zap.WarnLevel)
		app, err := server.Open(ctx, cfg, zap.New(core), "checkpoint-test")
		if err != nil {
			t.Fatal(err)
		}
		warned := logs.FilterMessageSnippet("MCPGATE_AUDIT_SIGNING_KEY_FILE is unset").Len()
		if warned != map[bool]int{true: 0, false: 1}[signed] {
			t.Errorf("signed %v: %d warnings of unsigned checkpoints", signed, warned)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			cps, err := app.Store.AuditCheckpoints(ctx, 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(cps) == 1 {
				err := cps[0].CheckSignature(key.Public().(ed25519.PublicKey))
				if signed != (err == nil) {
					t.Errorf("signed %v: checkpoint %+v: %v", signed, cps[0], err)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("signed %v: no checkpoint of the sealed row", signed)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := app.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
