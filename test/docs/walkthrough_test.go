package docs

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// startFunc is the start() of the policy walkthrough's first step, as the
// page prints it.
var startFunc = regexp.MustCompile(`(?ms)^start\(\) \{.*?^\}$`)

// runStart runs the walkthrough's start() in bash against gw, with a stub
// mcpgate on PATH (stub is its script body), and returns start's status
// and output, and whether the stub ran.
func runStart(t *testing.T, gw, stub string) (ok bool, out string, ran bool) {
	t.Helper()
	fn := startFunc.FindString(read(t, "docs/policy.md"))
	if fn == "" {
		t.Fatal("docs/policy.md: the walkthrough has no start() { … } function")
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	script := "#!/bin/sh\ntouch " + marker + "\n" + stub + "\n"
	if err := os.WriteFile(filepath.Join(dir, "mcpgate"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", fn+"\nstart")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GW="+gw, "PATH="+dir+":"+os.Getenv("PATH"))
	cmd.WaitDelay = 5 * time.Second // a child of bash (curl) still holding the output ends the wait too
	b, err := cmd.CombinedOutput()
	_, statErr := os.Stat(marker)
	return err == nil, string(b), statErr == nil
}

// Issue 30, point 7: the walkthrough's start step checks that the gateway
// answering is its own: with another one already on the address (make run
// left running) it stops at once and says so, instead of going on against
// the wrong gateway.
func TestWalkthroughStartRefusesAnotherGateway(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"status":"ready"}`)) }))
	defer other.Close()
	ok, out, ran := runStart(t, other.URL, "sleep 2")
	if ok || ran || !strings.Contains(out, "already answers on "+other.URL) {
		t.Fatalf("start with another gateway on %s: ok=%v, mcpgate ran=%v, output:\n%s\nwant a refusal before starting one", other.URL, ok, ran, out)
	}
}

// A gateway that stops (its address in use, say) ends start with the end
// of its log: on a free address, and on one where a program takes the
// connections but never answers, which does not hold start up (each check
// gives up after a few seconds).
func TestWalkthroughStartReportsAGatewayThatStops(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	for _, silent := range []bool{false, true} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		gw := "http://" + ln.Addr().String()
		if !silent {
			_ = ln.Close()
		} else {
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					defer c.Close() // held open, never answered, until the test ends
				}
			}()
		}
		ok, out, ran := runStart(t, gw, "echo 'mcpgate: MCPGATE_LISTEN=x: another process already listens on x'; exit 1")
		if ok || !ran || !strings.Contains(out, "another process already listens") {
			t.Errorf("start with a gateway that stops (a silent listener on the address: %v): ok=%v, ran=%v, output:\n%s\nwant its log's end", silent, ok, ran, out)
		}
	}
}
