package interop

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/tools"
)

// ccGateway is the gateway of the cc_server tests: `serve --dev` with the
// cc_server surface on a port of its own and the demo backend (ccdemo).
// The dev seed makes alice a member of ws-acme; the tests add ws-globex,
// of which she is not a member.
type ccGateway struct {
	once      sync.Once
	base, cc  string // http://127.0.0.1:PORT of the main and the cc_server listener
	log       string
	err       error
	tokenEnvs []string
}

// ccServer returns the cc_server gateway, starting it on first use.
func (s *stack) ccServer(t *testing.T) *ccGateway {
	t.Helper()
	c := &s.cc
	c.once.Do(func() {
		addr, err := freeAddr()
		if err != nil {
			c.err = err
			return
		}
		c.log, c.cc = filepath.Join(s.dir, "ccserver-gateway.log"), "http://"+addr
		// Every mode calls all 110 tools: the per-principal minute cap
		// far above that.
		env := append(s.gatewayEnv("ccserver.db"), "MCPGATE_CCSERVER_LISTEN="+addr,
			"MCPGATE_CCSERVER_CALLS_PER_MINUTE=100000", "MCPGATE_REFUSED_CALLS_PER_SECOND=100000")
		if c.base, c.err = s.launchGateway(c.log, env); c.err == nil {
			c.err = waitTCP(addr, 15*time.Second)
		}
	})
	if c.err != nil {
		t.Fatalf("cc_server gateway did not start: %v\n%s", c.err, s.logs())
	}
	adminCall(t, c.base, http.MethodPut, "/workspaces/ws-globex", `{"name":"Globex","slug":"globex","org_plan":"team"}`)
	return c
}

// ccToken mints a cc_server token with `mcpgate jwt mint --cc` (the
// gateway's secret, the default cc_server audience).
func ccToken(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Getenv("MCPGATE_BIN"), append([]string{"jwt", "mint", "--cc", "--ttl", "10m"}, args...)...)
	cmd.Env = append(os.Environ(), "MCPGATE_JWT_SECRET="+jwtSecret)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jwt mint --cc %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

type ccPlanCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

type ccPlanSession struct {
	Name      string       `json:"name"`
	Token     string       `json:"token"`
	Transport string       `json:"transport"`
	Calls     []ccPlanCall `json:"calls"`
}

type ccOutcome struct {
	Name       string          `json:"name"`
	IsError    bool            `json:"isError"`
	Text       string          `json:"text"`
	Codes      []string        `json:"codes"`
	Structured json.RawMessage `json:"structured"`
	Error      *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type ccSessionReport struct {
	ProtocolVersion string      `json:"protocolVersion"`
	Tools           []string    `json:"tools"`
	Calls           []ccOutcome `json:"calls"`
}

// runCCPlan runs ts/ccserver.mjs with the plan and returns its report.
func (s *stack) runCCPlan(t *testing.T, c *ccGateway, sessions []ccPlanSession) map[string]ccSessionReport {
	t.Helper()
	plan, _ := json.Marshal(map[string]any{"url": c.cc, "sessions": sessions})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.node, "ts/ccserver.mjs")
	cmd.Stdin = strings.NewReader(string(plan))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		log, _ := os.ReadFile(c.log)
		t.Fatalf("ts/ccserver.mjs: %v\n%s\n%s", err, stderr.String(), log)
	}
	var r struct {
		Sessions map[string]ccSessionReport `json:"sessions"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("ts/ccserver.mjs printed no report (%v): %s", err, out)
	}
	return r.Sessions
}

// ccPolicyRefusal: a refusal of the cc_server policy, as the denial's
// reason codes name it (not an approval step or the backend's own answer);
// the same prefixes as test/e2e's.
func ccPolicyRefusal(codes []string) bool {
	for _, c := range codes {
		for _, p := range []string{"mode.", "action.", "workspace.", "workspace_id.", "principal.", "input."} {
			if strings.HasPrefix(c, p) {
				return true
			}
		}
	}
	return false
}

// TestTypeScriptSDKCCServerModes: the TypeScript SDK client, for every mode
// and over both transports (Streamable HTTP and the legacy SSE transport),
// sees the full registry in tools/list, and the tools list_my_tools says
// are callable are exactly those tools/call accepts with the catalog's
// example arguments in alice's workspace.
func TestTypeScriptSDKCCServerModes(t *testing.T) {
	s := setup(t)
	c := s.ccServer(t)
	cat, err := tools.LoadCCServer()
	if err != nil {
		t.Fatal(err)
	}
	calls := []ccPlanCall{{"list_my_tools", map[string]any{"workspace_id": "ws-acme"}}}
	for _, tool := range cat.Tools() {
		args, _ := cat.ExampleArguments(tool.Name)
		if _, ok := args["workspace_id"]; ok || tool.Name == "list_my_tools" || tool.Name == "search_tool_bm25" {
			args["workspace_id"] = "ws-acme"
		}
		calls = append(calls, ccPlanCall{tool.Name, args})
	}
	var plan []ccPlanSession
	for _, mode := range []string{"chat", "plan", "review", "orchestrate"} {
		tok := ccToken(t, "--user", devUser, "--mode", mode, "--ticket", "x")
		for _, tr := range []string{"http", "sse"} {
			plan = append(plan, ccPlanSession{Name: mode + "/" + tr, Token: tok, Transport: tr, Calls: calls})
		}
	}
	report := s.runCCPlan(t, c, plan)
	for _, p := range plan {
		r, ok := report[p.Name]
		if !ok {
			t.Fatalf("%s: no report", p.Name)
		}
		if len(r.Tools) != cat.Len() {
			t.Errorf("%s: tools/list offers %d tools, want the full registry of %d", p.Name, len(r.Tools), cat.Len())
		}
		var listed struct {
			Tools []struct {
				Name     string `json:"name"`
				Callable bool   `json:"callable"`
			} `json:"tools"`
		}
		if r.Calls[0].IsError || json.Unmarshal(r.Calls[0].Structured, &listed) != nil || len(listed.Tools) == 0 {
			t.Fatalf("%s: list_my_tools answered %+v", p.Name, r.Calls[0])
		}
		callable := map[string]bool{}
		for _, tl := range listed.Tools {
			callable[tl.Name] = tl.Callable
		}
		n := 0
		for _, o := range r.Calls[1:] {
			if o.Error != nil {
				t.Errorf("%s %s threw %+v; want a result", p.Name, o.Name, o.Error)
				continue
			}
			accepted := !ccPolicyRefusal(o.Codes)
			if accepted != callable[o.Name] {
				t.Errorf("%s: %s accepted=%v (codes %v, %q) but list_my_tools says callable=%v", p.Name, o.Name, accepted, o.Codes, o.Text, callable[o.Name])
			}
			if accepted {
				n++
			}
		}
		t.Logf("%s (protocol %s): %d of %d tools callable", p.Name, r.ProtocolVersion, n, cat.Len())
	}
}

// TestTypeScriptSDKCCServerWorkspaceAndUnknownTools: the TypeScript SDK
// client over both transports: workspace_id missing, invalid and foreign
// (alice is no member of ws-globex) refused with their codes; the global
// tools without one; a pinned agent refused outside its workspace and
// served in it; the names docs/requirements.md#cc-unknown-tools says have no tool answer "unknown tool".
func TestTypeScriptSDKCCServerWorkspaceAndUnknownTools(t *testing.T) {
	s := setup(t)
	c := s.ccServer(t)
	unknown := []string{"hire_agent", "fire_agent", "update_agent", "doctor", "workspace.upsert", "ask_user"}
	userCalls := []ccPlanCall{
		{"list_tickets", map[string]any{}},
		{"list_tickets", map[string]any{"workspace_id": "-bad id-"}},
		{"list_tickets", map[string]any{"workspace_id": "ws-globex"}},
		{"list_tickets", map[string]any{"workspace_id": "ws-acme"}},
		{"list_workspaces", map[string]any{}},
		{"list_feeds", map[string]any{}},
	}
	for _, name := range unknown {
		userCalls = append(userCalls, ccPlanCall{name, map[string]any{}})
	}
	agentCalls := []ccPlanCall{
		{"list_tickets", map[string]any{"workspace_id": "ws-acme"}},
		{"list_tickets", map[string]any{"workspace_id": "ws-globex"}},
	}
	user := ccToken(t, "--user", devUser)
	agent := ccToken(t, "--user", "bot", "--workspace", "ws-globex")
	var plan []ccPlanSession
	for _, tr := range []string{"http", "sse"} {
		plan = append(plan, ccPlanSession{"user/" + tr, user, tr, userCalls}, ccPlanSession{"agent/" + tr, agent, tr, agentCalls})
	}
	report := s.runCCPlan(t, c, plan)
	refused := func(who string, o ccOutcome, code string) {
		t.Helper()
		if !o.IsError || !containsString(o.Codes, code) {
			t.Errorf("%s %s: isError %v codes %v %q; want refused with %s", who, o.Name, o.IsError, o.Codes, o.Text, code)
		}
	}
	allowed := func(who string, o ccOutcome) {
		t.Helper()
		if o.IsError || o.Error != nil {
			t.Errorf("%s %s: %q %+v, want it to run", who, o.Name, o.Text, o.Error)
		}
	}
	for _, tr := range []string{"http", "sse"} {
		u, a := report["user/"+tr].Calls, report["agent/"+tr].Calls
		if len(u) != len(userCalls) || len(a) != len(agentCalls) {
			t.Fatalf("%s: report has %d and %d calls", tr, len(u), len(a))
		}
		who := "user/" + tr
		refused(who, u[0], "workspace_id.missing")
		refused(who, u[1], "workspace_id.invalid")
		refused(who, u[2], "workspace.not_member")
		allowed(who, u[3])
		allowed(who, u[4])
		allowed(who, u[5])
		for i, name := range unknown {
			o := u[6+i]
			msg := o.Text
			if o.Error != nil {
				msg = o.Error.Message
			}
			if !strings.Contains(msg, "unknown tool") {
				t.Errorf("%s %s: answered %q, want \"unknown tool\"", who, name, msg)
			}
		}
		who = "agent/" + tr
		refused(who, a[0], "workspace.foreign")
		allowed(who, a[1])
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
