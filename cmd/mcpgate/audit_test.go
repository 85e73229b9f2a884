package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
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
