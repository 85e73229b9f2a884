package main

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
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
	open := openPolicyGateway
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

// Issue 30, point 9: the reload's test figure and `mcpgate policy test` on
// the same folder count the same thing: every test of every package in
// the folder that passed, each case of a test with a name argument
// (test_each[n]) as one, and the reload says so.
func TestReloadCountsWhatPolicyTestCounts(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "gateway", "server", "testdata", "policy", "allow"))); err != nil {
		t.Fatal(err)
	}
	// test_each[n] is one rule and three tests: OPA counts each case.
	extra := "package other_test\n\ntest_one if true\n\ntest_two if 1 < 2\n\ntest_each[n] if {\n\tsome n in [\"a\", \"b\", \"c\"]\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "other_test.rego"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := stdoutOf(t, func() error { _, err := runCmd(t, nil, "policy", "test", dir); return err })
	if err != nil {
		t.Fatalf("policy test: %v\n%q", err, out)
	}
	m := regexp.MustCompile(`PASS: (\d+)/\d+`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("policy test printed no PASS line:\n%s", out)
	}
	got, err := runCmd(t, map[string]string{"MCPGATE_ADMIN_TOKEN": "reload-admin"}, "policy", "reload", "--url", openPolicyGateway(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	want := "(" + m[1] + " tests passed: every test in the folder, as `mcpgate policy test` counts them"
	if !strings.Contains(got, want) {
		t.Errorf("policy reload printed %q; want it to say %q (policy test printed PASS: %s)", got, want, m[1])
	}
}

// stdoutOf runs f and returns what it wrote to os.Stdout: OPA's test
// command prints its report there, not to the command's writer.
func stdoutOf(t *testing.T, f func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	ferr := f()
	os.Stdout = saved
	_ = w.Close()
	return <-done, ferr
}

// openPolicyGateway serves a gateway on policyDir ("": the embedded
// bundle) with the admin token reload-admin, and returns its URL.
func openPolicyGateway(t *testing.T, policyDir string) string {
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
