package interop

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/auth"
)

// statelessGateway is a gateway in front of a second fixture upstream run
// statelessly (-stateless=true): an upstream that serves MCP 2026-07-28,
// whose tools ask for input with input-required results (MRTR). The
// scenarios of that pattern run against it (scenario.statelessUpstream);
// the main fixture is stateful, as its session-based scenarios need.
type statelessGateway struct {
	once sync.Once
	base string // http://127.0.0.1:PORT
	err  error
}

// statelessURL starts the stateless fixture and its gateway once and
// returns the gateway's /mcp URL.
func (s *stack) statelessURL(t *testing.T) string {
	t.Helper()
	g := &s.stateless
	g.once.Do(func() {
		addr, err := freeAddr()
		if err != nil {
			g.err = err
			return
		}
		p, err := startProcess(filepath.Join(s.dir, "stateless-upstream.log"), nil, nil, os.Getenv("MCPGATE_FIXTURE_BIN"), "-http", addr, "-stateless=true")
		if err != nil {
			g.err = fmt.Errorf("stateless fixture upstream: %w", err)
			return
		}
		s.mu.Lock()
		s.procs = append(s.procs, p)
		s.mu.Unlock()
		if g.err = waitTCP(addr, 15*time.Second); g.err != nil {
			return
		}
		g.base, g.err = s.launchGateway(filepath.Join(s.dir, "stateless-gateway.log"),
			append(s.gatewayEnv("stateless.db"), "MCPGATE_UPSTREAM_URL=http://"+addr+"/"))
	})
	if g.err != nil {
		t.Fatalf("the gateway in front of the stateless fixture did not start: %v\n%s", g.err, s.logs())
	}
	return g.base + "/mcp"
}

// statelessToken is taskToken for the stateless fixture's gateway: a task
// of its own there, an agent token of profile for it.
func (s *stack) statelessToken(t *testing.T, profile string) string {
	t.Helper()
	base := strings.TrimSuffix(s.statelessURL(t), "/mcp")
	task := fmt.Sprintf("interop-stateless-%d", s.tasks.Add(1))
	adminCall(t, base, http.MethodPut, "/workspaces/"+devWorkspace+"/tasks/"+task, `{"status":"running"}`)
	tok, err := s.jwt.Issue(auth.AgentClaims{Subject: devUser, WorkspaceID: devWorkspace, TaskID: task, ProfileID: profile}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
