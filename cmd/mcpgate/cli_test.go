package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway/config"
)

// TestHelp: every command answers --help and `help X` with its flags and
// the environment variables it reads, succeeds, and leaves no file behind
// (migrate --help used to create ./mcpgate.db).
func TestHelp(t *testing.T) {
	tests := []struct {
		cmd  []string
		want []string
	}{
		{nil, []string{"serve", "migrate", "token", "audit", "jwt", "policy", "version", "--version"}},
		{[]string{"audit"}, []string{"verify", "MCPGATE_DATABASE_URL"}},
		{[]string{"audit", "verify"}, []string{"changed, deleted, inserted or reordered", "exits 3", "MCPGATE_DATABASE_URL"}},
		{[]string{"serve"}, []string{"--dev", "MCPGATE_LISTEN", "MCPGATE_DATABASE_URL", "MCPGATE_JWT_SECRET", "SUPACLOUD_EDITION", "MCPGATE_ADMIN_TOKEN", "AGENT_MCP_TOOL_RATE_LIMIT", "MCPGATE_METRICS_LISTEN"}},
		{[]string{"migrate"}, []string{"MCPGATE_DATABASE_URL"}},
		{[]string{"token"}, []string{"create", "list", "revoke", "MCPGATE_DATABASE_URL"}},
		{[]string{"token", "create"}, []string{"--workspace", "--label", "--scope", "mcp:read", "MCPGATE_DATABASE_URL"}},
		{[]string{"token", "list"}, []string{"--workspace", "MCPGATE_DATABASE_URL"}},
		{[]string{"token", "revoke"}, []string{"FINGERPRINT", "MCPGATE_DATABASE_URL"}},
		{[]string{"jwt"}, []string{"mint", "cc_server", "console sign-in"}},
		{[]string{"jwt", "mint"}, []string{"mint --console --workspace W --user U", "--workspace", "--task", "--user", "--profile", "--ttl", "--key-file", "--secret-file", "--dev", "MCPGATE_JWT_SECRET", "MCPGATE_JWT_AUDIENCE", "MCPGATE_JWT_ISSUER", "MCPGATE_JWT_PUBLIC_KEY_FILE"}},
		{[]string{"policy"}, []string{"test", "eval", "check", "fmt", "bench", "replay", "explain", "suggest", "reload"}},
		{[]string{"policy", "replay"}, []string{"--bundle", "--log", "--since", "--until", "--workspace", "--examples", "--fail-on-flips", "--protected", "exit"}},
		{[]string{"policy", "explain"}, []string{"--workspace", "--task", "--profile", "--user", "--tool", "--args", "--json", "MCPGATE_DATABASE_URL", "SUPACLOUD_EDITION", "MCPGATE_POLICY_DIR"}},
		{[]string{"policy", "suggest"}, []string{"--workspace", "--profile", "--since", "MCPGATE_DATABASE_URL", "MCPGATE_POLICY_DIR"}},
		{[]string{"policy", "reload"}, []string{"--url", "MCPGATE_ADMIN_TOKEN", "MCPGATE_LISTEN"}},
		{[]string{"policy", "test"}, []string{"--timeout", "--coverage"}},
		{[]string{"policy", "eval"}, []string{"--data", "--input"}},
		{[]string{"version"}, []string{"version"}},
	}
	dir := t.TempDir()
	t.Chdir(dir)
	// An environment that would make serve and migrate act at once.
	env := map[string]string{"MCPGATE_DATABASE_URL": "sqlite:help.db", "MCPGATE_JWT_SECRET": strings.Repeat("k", 32)}
	for _, tc := range tests {
		for _, form := range [][]string{append(append([]string{}, tc.cmd...), "--help"), append([]string{"help"}, tc.cmd...)} {
			t.Run(strings.Join(form, " "), func(t *testing.T) {
				out, err := runCmd(t, env, form...)
				if err != nil {
					t.Fatalf("%v: %v", form, err)
				}
				for _, w := range tc.want {
					if !strings.Contains(out, w) {
						t.Errorf("help lacks %q:\n%s", w, out)
					}
				}
				if entries, _ := os.ReadDir(dir); len(entries) > 0 {
					t.Fatalf("help created %s", entries[0].Name())
				}
			})
		}
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"token", "frobnicate"}, `unknown command "frobnicate" for "mcpgate token"`},
		{[]string{"token", "create", "--colour", "red"}, "see `mcpgate token create --help`"},
		{[]string{"serve", "extra"}, `unknown command "extra"`},
		{[]string{"token", "revoke"}, "accepts 1 arg"},
		{[]string{"jwt", "mint", "--ttl", "soon"}, "--ttl"},
	}
	t.Chdir(t.TempDir())
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			if _, err := runCmd(t, nil, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, err := runCmd(t, nil, args...)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "mcpgate ") || !strings.HasPrefix(lines[1], "commit ") ||
			!strings.HasPrefix(lines[2], "policy bundle revision sha256:") {
			t.Fatalf("%v: %q, want version, commit and policy bundle revision lines", args, out)
		}
	}
	defer func(v, c string) { version, commit = v, c }(version, commit)
	version, commit = "v1.2.3", "abc123"
	if b := versionInfo(); b.Version != "v1.2.3" || b.Commit != "abc123" {
		t.Fatalf("the -ldflags values were not used: %+v", b)
	}
}

// Issue 30, point 5: serve --help gives each variable of the configuration
// table its meaning and default, from config.Vars.
func TestServeHelpExplainsEveryVariable(t *testing.T) {
	t.Chdir(t.TempDir())
	out, err := runCmd(t, nil, "serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range config.Vars {
		head := "\n  " + v.Name
		if v.Default != "" {
			head += " (default " + v.Default + ")"
		}
		if want := head + "\n      " + v.Meaning + "\n"; !strings.Contains(out, want) {
			t.Errorf("serve --help lacks %q:\n%s", want, out)
		}
	}
}

// Issue 30, point 7: serve binds its addresses before it opens the store
// and runs the policy's tests, so an address in use fails at once with its
// own message, not after the tests (here a bundle that does not even
// compile would have been the error).
func TestServeBindsBeforePolicyTests(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = busy.Close() }()
	dir := t.TempDir()
	t.Chdir(dir)
	broken := filepath.Join(dir, "policies")
	if err := os.Mkdir(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "x.rego"), []byte("package supacloud\nthis is not rego\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = runCmd(t, map[string]string{
		"MCPGATE_LISTEN":       busy.Addr().String(),
		"MCPGATE_DATABASE_URL": "sqlite:gw.db",
		"MCPGATE_JWT_SECRET":   strings.Repeat("k", 32),
		"MCPGATE_POLICY_DIR":   broken,
	}, "serve")
	if err == nil || !strings.Contains(err.Error(), "MCPGATE_LISTEN="+busy.Addr().String()+": another process already listens") {
		t.Fatalf("serve on a busy address: %v; want the address-in-use error first", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gw.db")); err == nil {
		t.Errorf("serve created its store before finding its address busy")
	}
}
