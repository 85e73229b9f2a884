package main

import (
	"os"
	"strings"
	"testing"
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
