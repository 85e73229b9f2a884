package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/test/testbin"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// buildBinary returns this command's binary for the tests that need the
// real process (testbin: $MCPGATE_BIN, else built once per test run).
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	return testbin.Mcpgate(t)
}

// TestServeStopsCleanlyOnSignal starts the built binary, reads its start-up
// line, sends SIGINT (what Ctrl-C in make run delivers) or SIGTERM, and
// expects a graceful shutdown with exit status 0.
func TestServeStopsCleanlyOnSignal(t *testing.T) {
	bin := buildBinary(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(bin, "serve")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(),
				"MCPGATE_LISTEN=127.0.0.1:0",
				"MCPGATE_DATABASE_URL=sqlite:gw.db",
				"MCPGATE_JWT_SECRET="+testSecret,
				"MCPGATE_ADMIN_TOKEN=admin-token-for-the-test",
				"MCPGATE_LOG_FORMAT=json",
			)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill() }()
			lines := make(chan map[string]any, 64)
			go func() {
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					var m map[string]any
					if json.Unmarshal(sc.Bytes(), &m) == nil {
						lines <- m
					}
				}
				close(lines)
			}()
			startup := waitFor(t, lines, "mcpgate listening")
			for k, want := range map[string]string{
				"store": "sqlite", "sqlite_file": filepath.Join(dir, "gw.db"), "edition": "community",
				"surface": "supacloud", "policy": "embedded",
			} {
				if got, _ := startup[k].(string); got != want && !(k == "sqlite_file" && sameFile(got, want)) {
					t.Errorf("start-up %s = %q, want %q", k, got, want)
				}
			}
			for k, prefix := range map[string]string{"mcp": "http://127.0.0.1:", "admin_api": "http://127.0.0.1:", "policy_revision": "sha256:"} {
				if got, _ := startup[k].(string); !strings.HasPrefix(got, prefix) {
					t.Errorf("start-up %s = %q, want %s…", k, got, prefix)
				}
			}
			if s, _ := json.Marshal(startup); strings.Contains(string(s), "admin-token-for-the-test") || strings.Contains(string(s), testSecret) {
				t.Errorf("the start-up line holds a secret: %s", s)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			waitFor(t, lines, "shutting down")
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("after %s: %v, want exit status 0", sig, err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("still running 20 s after %s", sig)
			}
		})
	}
}

func sameFile(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// waitFor returns the first log line whose msg is msg.
func waitFor(t *testing.T, lines <-chan map[string]any, msg string) map[string]any {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatalf("the gateway ended before logging %q", msg)
			}
			if m["msg"] == msg {
				return m
			}
		case <-timeout:
			t.Fatalf("no %q log line within 30 s", msg)
		}
	}
}
