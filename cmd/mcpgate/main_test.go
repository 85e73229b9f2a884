package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func runCmd(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), args, &out, func(k string) string { return env[k] })
	return out.String(), err
}

func TestCommands(t *testing.T) {
	if out, err := runCmd(t, nil, "version"); err != nil || !strings.HasPrefix(out, "mcpgate ") {
		t.Fatalf("version: %q %v", out, err)
	}
	if _, err := runCmd(t, nil, "frobnicate"); err == nil || !strings.Contains(err.Error(), "frobnicate") {
		t.Fatalf("unknown command: %v", err)
	}
	// OPA's commands print to the process's stdout; their exit status is
	// what these checks rely on.
	// OPA's default of 5 s per test is too short for the bundle's matrix
	// tests under -race on a loaded machine.
	if _, err := runCmd(t, nil, "policy", "test", "--timeout", "60s", "../../policies"); err != nil {
		t.Fatalf("policy test of the shipped bundle: %v", err)
	}
	if _, err := runCmd(t, nil, "policy", "test", "testdata/failing"); err == nil {
		t.Fatal("policy test of a failing bundle succeeded")
	}
	eval := func(query string) error {
		_, err := runCmd(t, nil, "policy", "eval", "--fail", "-d", "../../policies", "-i", "../../test/testdata/policy-input.json", query)
		return err
	}
	if err := eval(`data.supacloud.decision.reasons[_].code == "allowlist.missing_grant"`); err != nil {
		t.Fatalf("policy eval of the example input: %v", err)
	}
	if err := eval(`data.supacloud.decision.reasons[_].code == "deploy.role_required"`); err == nil {
		t.Fatal("policy eval --fail accepted an undefined result")
	}
	if _, err := runCmd(t, nil, "policy", "run"); err == nil {
		t.Fatal("policy run (not a passed-through OPA command) succeeded")
	}
}

// TestTokenLifecycle: create shows the value once, list shows only the
// fingerprint, revoke marks it revoked; bad input changes nothing.
func TestTokenLifecycle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tok.db")
	env := map[string]string{"MCPGATE_DATABASE_URL": "sqlite:" + path}
	// No store yet: the token commands must not create an empty one.
	if _, err := runCmd(t, env, "token", "list", "--workspace", "ws-x"); err == nil || !strings.Contains(err.Error(), "no database at") {
		t.Fatalf("token list without a store: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("token list created %s (%v)", path, err)
	}
	if _, err := runCmd(t, env, "migrate"); err != nil {
		t.Fatal(err)
	}
	// The workspace must exist: tokens are workspace-bound.
	if _, err := runCmd(t, env, "token", "create", "--workspace", "ws-x", "--label", "ci", "--scope", "mcp:read"); err == nil {
		t.Fatal("token for an unknown workspace was created")
	}
	if _, err := runCmd(t, env, "token", "create", "--workspace", "ws-x", "--label", "ci", "--scope", "mcp:write"); err == nil || !strings.Contains(err.Error(), "mcp:write") {
		t.Fatalf("unknown scope: %v", err)
	}
	seedWorkspace(t, env["MCPGATE_DATABASE_URL"], "ws-x")
	out, err := runCmd(t, env, "token", "create", "--workspace", "ws-x", "--label", "ci", "--scope", "mcp:read", "--scope", "mcp:ops")
	if err != nil {
		t.Fatal(err)
	}
	value := regexp.MustCompile(`scmt_\S+`).FindString(out)
	fp := regexp.MustCompile(`fingerprint: (\S+)`).FindStringSubmatch(out)
	if value == "" || len(fp) != 2 {
		t.Fatalf("create output %q lacks token or fingerprint", out)
	}
	list, err := runCmd(t, env, "token", "list", "--workspace", "ws-x")
	if err != nil || !strings.Contains(list, fp[1]) || strings.Contains(list, value) || !strings.Contains(list, "active") {
		t.Fatalf("list %q %v: want the fingerprint, active, never the value", list, err)
	}
	if _, err := runCmd(t, env, "token", "revoke", fp[1]); err != nil {
		t.Fatal(err)
	}
	if list, _ := runCmd(t, env, "token", "list", "--workspace", "ws-x"); !strings.Contains(list, "revoked") {
		t.Fatalf("after revoke: %q", list)
	}
	if _, err := runCmd(t, env, "token", "revoke", "0000000000000000"); err == nil {
		t.Fatal("revoking an unknown fingerprint succeeded")
	} else if !strings.Contains(err.Error(), "mcpgate token list --workspace") {
		t.Errorf("revoking an unknown fingerprint: %v; want it to name the command that lists the fingerprints", err)
	}
}

// TestPolicyTestArgs: `policy test` gives OPA the gateway's per-test bound
// (1m) unless the flags set one, and the policies folder unless a path is
// named. OPA's 5 s default failed the shipped bundle with an ERROR on a
// busy machine while a reload of the same bundle passed.
func TestPolicyTestArgs(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{nil, []string{"--timeout", "1m", "policies"}},
		{[]string{"-v", "candidate"}, []string{"--timeout", "1m", "-v", "candidate"}},
		{[]string{"--timeout", "5s", "candidate"}, []string{"--timeout", "5s", "candidate"}},
		{[]string{"--timeout=5s", "candidate"}, []string{"--timeout=5s", "candidate"}},
		{[]string{"-t", "5s", "candidate"}, []string{"-t", "5s", "candidate"}},
	} {
		if got := testArgs(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("testArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestPolicyNetworkBuiltinsRefused: `mcpgate policy test` and `policy
// check` compile with the gateway's capabilities, so a bundle whose rule
// calls http.send fails there as it fails to load in the gateway (#22).
func TestPolicyNetworkBuiltinsRefused(t *testing.T) {
	dir := t.TempDir()
	rego := "package leak\n\nallow if {\n\thttp.send({\"method\": \"GET\", \"url\": \"http://127.0.0.1:1/\"}).status_code == 200\n}\n\ntest_allow if not allow\n"
	if err := os.WriteFile(filepath.Join(dir, "leak.rego"), []byte(rego), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"test", "check"} {
		// OPA prints its "undefined function http.send" to the process's
		// stdout; the exit status is what this checks.
		if out, err := runCmd(t, nil, "policy", sub, dir); err == nil {
			t.Errorf("policy %s of a bundle calling http.send succeeded: %s", sub, out)
		}
	}
	// An explicit --capabilities is the user's choice and is left alone.
	if _, err := runCmd(t, nil, "policy", "check", "--capabilities", "v1.0.0", dir); err != nil {
		t.Errorf("policy check with --capabilities v1.0.0 refused: %v", err)
	}
}
