package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestMakeRunCtrlC runs the run target of the repository's Makefile in a
// pseudo-terminal, as a shell runs a job: make leads its own process group,
// the terminal's foreground. It waits for the start-up line, types Ctrl-C
// and expects make itself to exit with status 0 after the gateway's clean
// shutdown. Without serve taking the terminal's foreground (takeTerminal),
// GNU make receives the SIGINT too and dies of it (the shell's 130).
//
// make runs in a temporary folder with the binary built once by the test
// at bin/mcpgate and its build prerequisite treated as done (-o build), so
// the dev database and keys land there, not in the repository.
func TestMakeRunCtrlC(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make on PATH")
	}
	makefile, err := filepath.Abs("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(makefile); err != nil {
		t.Skipf("no Makefile at %s: %v", makefile, err)
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(dir, "bin", "mcpgate")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(makeBin, "--no-print-directory", "-f", makefile, "-o", "build", "run")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MCPGATE_LISTEN=127.0.0.1:0", "NO_COLOR=1")
	tty, err := pty.Start(cmd) // make becomes a session leader on the terminal, in the foreground
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	// Closing the terminal hangs up its foreground group: a gateway left
	// running by a failed run gets SIGHUP and ends with it.
	defer func() { _ = tty.Close() }()
	defer func() { _ = cmd.Process.Kill() }()

	var mu sync.Mutex
	var out bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	waitOutput := func(s string, d time.Duration) bool {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			ok := strings.Contains(out.String(), s)
			mu.Unlock()
			if ok {
				return true
			}
		}
		return false
	}
	output := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }

	if !waitOutput("mcpgate listening", 60*time.Second) {
		t.Fatalf("no start-up line within 60 s:\n%s", output())
	}
	if _, err := tty.Write([]byte{0x03}); err != nil { // Ctrl-C, as typed
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("make still running 30 s after Ctrl-C:\n%s", output())
	}
	waitOutput("mcpgate stopped cleanly", 2*time.Second) // the last bytes may trail the exit
	text := output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("make run after Ctrl-C: %v (a shell reports 130 for \"signal: interrupt\"), want exit status 0:\n%s", err, text)
	} else if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"shutting down", "mcpgate stopped cleanly"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in the output of make run:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Interrupt") || strings.Contains(text, "***") {
		t.Errorf("make reported an interrupt or an error:\n%s", text)
	}
}
