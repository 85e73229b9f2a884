package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/auditchain"
	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
	"github.com/mcpgate/mcpgate/gateway/server"
	"github.com/mcpgate/mcpgate/gateway/storetest"
	"github.com/mcpgate/mcpgate/test/testbin"
)

// TestAuditVerifyTime times the mcpgate binary's `audit verify
// --public-key` over a sealed chain of MCPGATE_BENCH_AUDIT_ROWS rows with
// a signed checkpoint at its head, on each store (PostgreSQL with
// MCPGATE_TEST_DATABASE_URL): the whole command, from the process's start
// to its exit. It runs only when MCPGATE_BENCH_AUDIT_ROWS is set
// (docs/benchmarks.md, "Audit chain verify", gives the command).
func TestAuditVerifyTime(t *testing.T) {
	n := storetest.BenchAuditRows(0)
	if n == 0 {
		t.Skip("set " + storetest.EnvBenchAuditRows + "=1000000 to time mcpgate audit verify over that many rows")
	}
	stores := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "mcpgate.db") },
		"postgres": func(t *testing.T) string { return pgtest.SchemaURL(t) },
	}
	for name, dbURL := range stores {
		t.Run(name, func(t *testing.T) {
			url := dbURL(t)
			ctx := context.Background()
			s, err := server.OpenStore(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			storetest.SeedSealedChain(t, s, n)
			pub, key, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := (&auditchain.Checkpointer{Store: s, Key: key}).Round(ctx, time.Now()); err != nil || !ok {
				t.Fatalf("checkpoint: %v %v", ok, err)
			}
			_ = s.Close()
			der, err := x509.MarshalPKIXPublicKey(pub)
			if err != nil {
				t.Fatal(err)
			}
			pubFile := filepath.Join(t.TempDir(), "pub.pem")
			if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(testbin.Mcpgate(t), "audit", "verify", "--public-key", pubFile)
			cmd.Env = append(os.Environ(), "MCPGATE_DATABASE_URL="+url)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			took := time.Since(start)
			if err != nil || !strings.Contains(string(out), "1 checkpoint signatures verified") {
				t.Fatalf("mcpgate audit verify: %v\n%s", err, out)
			}
			t.Logf("mcpgate audit verify --public-key of %d rows on %s: %v (%.0f rows/s)", n, name, took.Round(10*time.Millisecond), float64(n)/took.Seconds())
			if took > time.Minute {
				t.Errorf("mcpgate audit verify of %d rows took %v; the bound is a minute", n, took)
			}
		})
	}
}
