package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// TestPolicyReload runs `mcpgate policy reload` against a real gateway on
// a policy folder: a passing bundle goes live and is printed, one whose
// test fails is an error with OPA's message, and the embedded bundle
// cannot be reloaded.
func TestPolicyReload(t *testing.T) {
	bundles := filepath.Join("..", "..", "gateway", "server", "testdata", "policy")
	put := func(t *testing.T, dir, name string) {
		t.Helper()
		for _, n := range []string{"supacloud", ".manifest"} {
			if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.CopyFS(dir, os.DirFS(filepath.Join(bundles, name))); err != nil {
			t.Fatal(err)
		}
	}
	open := func(t *testing.T, policyDir string) string {
		t.Helper()
		vars := map[string]string{"MCPGATE_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "r.db"),
			"MCPGATE_JWT_SECRET": strings.Repeat("k", 32), "MCPGATE_ADMIN_TOKEN": "reload-admin", "MCPGATE_POLICY_DIR": policyDir}
		cfg, err := config.Load(func(k string) string { return vars[k] })
		if err != nil {
			t.Fatal(err)
		}
		app, err := server.Open(context.Background(), cfg, zap.NewNop(), "test")
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(app.Server)
		t.Cleanup(func() { srv.Close(); _ = app.Close() })
		return srv.URL
	}
	env := map[string]string{"MCPGATE_ADMIN_TOKEN": "reload-admin"}

	dir := t.TempDir()
	put(t, dir, "allow")
	url := open(t, dir)
	put(t, dir, "deny")
	out, err := runCmd(t, env, "policy", "reload", "--url", url)
	if err != nil || !strings.Contains(out, "policy revision rev-deny is live (1 tests passed") {
		t.Fatalf("reload to rev-deny: %q %v", out, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "supacloud", "decision_test.rego"),
		[]byte("package supacloud_test\n\nimport data.supacloud\n\ntest_allow if supacloud.allow\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = runCmd(t, env, "policy", "reload", "--url", url)
	if err == nil || !strings.Contains(err.Error(), "test_allow: FAIL") || !strings.Contains(err.Error(), "revision rev-deny stays live") {
		t.Fatalf("reload of a failing bundle: %v, want OPA's failing test and the running revision", err)
	}
	if _, err := runCmd(t, map[string]string{}, "policy", "reload", "--url", url); err == nil || !strings.Contains(err.Error(), "MCPGATE_ADMIN_TOKEN") || !strings.Contains(err.Error(), devSecretsFile) {
		t.Errorf("reload without a token: %v, want it to name MCPGATE_ADMIN_TOKEN and where serve --dev keeps it (%s)", err, devSecretsFile)
	}
	if _, err := runCmd(t, env, "policy", "reload", "--url", open(t, "")); err == nil || !strings.Contains(err.Error(), "never reloads") {
		t.Errorf("reload of the embedded bundle: %v, want it refused", err)
	}
}
