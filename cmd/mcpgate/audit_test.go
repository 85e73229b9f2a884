package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auditchain"
	"github.com/mcpgate/mcpgate/gateway/server"
	"github.com/mcpgate/mcpgate/gateway/sqlite"
)

// audit verify on the gateway's own store: exit 0 and a one-line summary
// on a sealed chain, exit 3 naming the seq of a row changed by SQL run
// directly on the database, exit 1 (an error, no verdict) without one.
func TestAuditVerify(t *testing.T) {
	ctx := context.Background()
	url := "sqlite:" + filepath.Join(t.TempDir(), "mcpgate.db")
	env := map[string]string{"MCPGATE_DATABASE_URL": url}
	s, err := server.OpenStore(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		ev := &gateway.AuditEvent{WorkspaceID: "ws-a", Tool: "app.list", Status: gateway.AuditDenied, Actor: "u1", LatencyMicros: int64(i)}
		if err := s.RecordAudit(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.SealAudit(ctx); err != nil || n != 5 {
		t.Fatalf("SealAudit = %d, %v", n, err)
	}
	// One more, not sealed: counted, not verified.
	if err := s.RecordAudit(ctx, &gateway.AuditEvent{Tool: "app.list", Status: gateway.AuditDenied}); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(t, env, "audit", "verify")
	if err != nil || !strings.HasPrefix(out, "audit chain verified: 5 rows, seq 1 to 5, head ") || !strings.HasSuffix(out, "; 1 rows not sealed yet\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("verify of a whole chain: %q, %v", out, err)
	}
	if _, err := s.(*sqlite.Store).DB().ExecContext(ctx, `UPDATE audit_events SET actor = 'someone-else' WHERE id = (SELECT id FROM audit_seals WHERE seq = 2)`); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	_, err = runCmd(t, env, "audit", "verify")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitBroken || !strings.Contains(err.Error(), "seq 2: changed") || !strings.Contains(err.Error(), "1 rows before it verified") {
		t.Fatalf("verify after a row was changed: %v; want exit %d naming seq 2 changed", err, exitBroken)
	}
	_, err = runCmd(t, map[string]string{"MCPGATE_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "none.db")}, "audit", "verify")
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "no database at") {
		t.Fatalf("verify without a database: %v; want exit 1 naming the missing file", err)
	}
}

// audit export and audit verify --export: an export of a store with a
// signed checkpoint verifies offline with the public key (exit 0, one
// line), is refused with another key, and a row changed in the file is
// named by its seq (exit 3); usage errors exit 2.
func TestAuditExportVerify(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	url := "sqlite:" + filepath.Join(dir, "mcpgate.db")
	env := map[string]string{"MCPGATE_DATABASE_URL": url}
	s, err := server.OpenStore(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := func(name string, k ed25519.PrivateKey) string {
		der, err := x509.MarshalPKIXPublicKey(k.Public())
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for i := range 6 {
		ev := &gateway.AuditEvent{WorkspaceID: "ws-a", Tool: "app.list", Status: gateway.AuditAllowed, Actor: "u1", LatencyMicros: int64(i)}
		if err := s.RecordAudit(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			if n, err := s.SealAudit(ctx); err != nil || n != 4 {
				t.Fatalf("SealAudit = %d, %v", n, err)
			}
			cp := &auditchain.Checkpointer{Store: s, Key: key}
			if ok, err := cp.Round(ctx, time.Now().Add(-time.Hour)); err != nil || !ok {
				t.Fatalf("checkpoint: %v %v", ok, err)
			}
		}
	}
	if n, err := s.SealAudit(ctx); err != nil || n != 2 {
		t.Fatalf("SealAudit = %d, %v", n, err)
	}
	_ = s.Close()

	out, err := runCmd(t, env, "audit", "export", "--format", "jsonl")
	if err != nil || strings.Count(out, "\n") != 9 || !strings.HasPrefix(out, `{"type":"start","format":"mcpgate-audit-export/1"`) {
		t.Fatalf("export: %v\n%s; want start, 6 rows, a checkpoint, end", err, out)
	}
	file := filepath.Join(dir, "audit.jsonl")
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	pub := pubPEM("pub.pem", key)
	got, err := runCmd(t, nil, "audit", "verify", "--export", file, "--public-key", pub)
	if err != nil || !strings.HasPrefix(got, "audit export verified: 6 rows, seq 1 to 6, head ") || !strings.Contains(got, "1 checkpoints, 1 signatures verified; rows after seq 4") {
		t.Fatalf("verify of the export: %q, %v", got, err)
	}
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	_, err = runCmd(t, nil, "audit", "verify", "--export", file, "--public-key", pubPEM("other.pem", other))
	if exitCode(err) != exitBroken || !strings.Contains(err.Error(), "seq 4: checkpoint refused") || !strings.Contains(err.Error(), "not by the given public key") {
		t.Fatalf("verify with another key: %v; want exit %d, the checkpoint refused", err, exitBroken)
	}
	lines := strings.Split(out, "\n")
	lines[2] = strings.Replace(lines[2], `"actor":"u1"`, `"actor":"u2"`, 1) // the row of seq 2
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = runCmd(t, nil, "audit", "verify", "--export", file, "--public-key", pub)
	if exitCode(err) != exitBroken || !strings.Contains(err.Error(), "seq 2: changed") {
		t.Fatalf("verify of a changed export: %v; want exit %d naming seq 2 changed", err, exitBroken)
	}
	// The database's own checkpoints, with the public key.
	got, err = runCmd(t, env, "audit", "verify", "--public-key", pub)
	if err != nil || !strings.Contains(got, "; 1 checkpoint signatures verified; 0 rows not sealed yet") {
		t.Fatalf("verify of the database with the key: %q, %v", got, err)
	}
	_, err = runCmd(t, env, "audit", "verify", "--public-key", pubPEM("other.pem", other))
	if exitCode(err) != exitBroken || !strings.Contains(err.Error(), "seq 4: checkpoint refused") || !strings.Contains(err.Error(), "not by the given public key") {
		t.Fatalf("verify of the database with another key: %v; want exit %d, the checkpoint refused", err, exitBroken)
	}
	// A checkpoint's time moved by SQL: the hashes still hold, only its
	// signature tells.
	s, err = server.OpenStore(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.(*sqlite.Store).DB().ExecContext(ctx, `UPDATE audit_checkpoints SET time = '2020-01-01T00:00:00.000000Z' WHERE seq = 4`); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if _, err := runCmd(t, env, "audit", "verify"); err != nil {
		t.Fatalf("verify without the key of a checkpoint re-timed: %v; want the chain verified", err)
	}
	_, err = runCmd(t, env, "audit", "verify", "--public-key", pub)
	if exitCode(err) != exitBroken || !strings.Contains(err.Error(), "seq 4: checkpoint refused") || !strings.Contains(err.Error(), "the checkpoint was changed") {
		t.Fatalf("verify of a re-timed checkpoint with the key: %v; want exit %d, the checkpoint refused", err, exitBroken)
	}
	since, err := runCmd(t, env, "audit", "export", "--since", "30m")
	if err != nil || !strings.HasPrefix(since, `{"type":"start","format":"mcpgate-audit-export/1","seq":4,`) {
		t.Fatalf("export --since 30m: %v\n%s; want it anchored at the checkpoint of seq 4", err, since)
	}
	for _, args := range [][]string{
		{"audit", "export", "--since", "yesterday"},
		{"audit", "export", "--format", "csv"},
	} {
		if _, err := runCmd(t, env, args...); exitCode(err) != exitUsage {
			t.Errorf("%v: %v; want a usage error (exit %d)", args, err, exitUsage)
		}
	}
}
