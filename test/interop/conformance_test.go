package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// conformanceCLI is the suite's entry point inside node_modules.
const conformanceCLI = "node_modules/@modelcontextprotocol/conformance/dist/index.js"

// scenario is one server scenario of the conformance suite and what the
// gateway does with it: run at the listed protocol versions and pass, or be
// skipped for the reason given. README.md in this folder shows the same
// table; TestConformanceReadme keeps the two in step.
type scenario struct {
	name     string
	versions []string // spec versions to run it at; empty when skipped
	skip     string   // why the scenario cannot apply to the gateway
	// notApplicable names checks of a scenario that runs whose FAILURE or
	// WARNING is expected, with why they cannot apply to the gateway; every
	// other check must pass. README.md names them too.
	notApplicable map[string]string
	// statelessUpstream runs the scenario against the gateway in front of
	// the stateless fixture (stateless_test.go), whose tools ask for input
	// with input-required results.
	statelessUpstream bool
}

// Reasons shared by several skipped scenarios.
const (
	skipToolsOnly = "the gateway serves tools only (initialize, ping, tools/list, tools/call; at 2026-07-28 server/discover, tools/list, tools/call, subscriptions/listen); it offers no resources, prompts or completions"
	naToolsOnly   = "the gateway serves tools only: prompts/list and resources/* answer -32601 (HTTP 404), so they carry no caching hints"
	skipTasks     = "tasks extension; the gateway does not offer tasks"
	skipSkills    = "skills extension (SEP-2640); the gateway serves tools only"
	// On /api/mcp (apiResults).
	skipFixtureTools = "calls the fixture's tools (test_simple_text, json_schema_2020_12_tool, ...), which no API token scope reaches: /api/mcp answers -32601 for them as for an unknown name, and the coordinator gateway runs the demo backend; the clients' coordinator tests make allowed calls of the read level instead"
	skipNoHeaderTool = "needs a tool whose inputSchema has an x-mcp-header annotation: no tool of the coordinator catalog has one, so the suite finds nothing to test; the check is the same code as on /mcp (gateway/mcp TestModernParamHeaders)"
	naFixtureDiag    = "needs a diagnostic tool of the fixture (test_missing_capability, test_streaming_elicitation, test_logging_tool, test_trigger_tool_change), which no API token scope reaches (-32601 on /api/mcp), so the suite reports it not testable"
)

var (
	dated2    = []string{"2025-06-18", "2025-11-25"}
	dated3    = []string{"2025-03-26", "2025-06-18", "2025-11-25"}
	current   = []string{"2025-11-25"}
	dated2Now = []string{"2025-06-18", "2025-11-25", "2026-07-28"}
	both      = []string{"2025-11-25", "2026-07-28"}
	stateless = []string{"2026-07-28"}
)

// scenarios lists every server scenario of the pinned suite
// (@modelcontextprotocol/conformance in package.json), in its order.
var scenarios = []scenario{
	{name: "server-initialize", versions: dated2},
	{name: "server-session-lifecycle", versions: dated3},
	{name: "server-stateless", versions: stateless, notApplicable: map[string]string{
		"sep-2575-server-sends-tools-list-changed-on-subscription": "SHOULD: the suite changes the upstream's tool list with test_trigger_tool_change; the gateway's catalog is the upstream's list at start, so the gateway's tools/list does not change and nothing is announced (its own changes, through the admin API, are: gateway/mcp TestModernListen, TestInteropGoSDK)",
	}},
	{name: "logging-set-level", versions: dated2},
	{name: "ping", versions: dated2},
	{name: "completion-complete", skip: skipToolsOnly},
	{name: "tools-list", versions: dated2Now},
	{name: "tools-call-simple-text", versions: dated2Now},
	{name: "tools-call-image", versions: dated2Now},
	{name: "tools-call-audio", versions: dated2Now},
	{name: "tools-call-embedded-resource", versions: dated2Now},
	{name: "tools-call-mixed-content", versions: dated2Now},
	{name: "tools-call-with-logging", versions: dated2},
	{name: "tools-call-error", versions: dated2Now},
	{name: "tools-call-with-progress", versions: dated2},
	{name: "tools-call-sampling", versions: dated2},
	{name: "tools-call-elicitation", versions: dated2},
	{name: "json-schema-2020-12", versions: both},
	{name: "elicitation-sep1034-defaults", versions: current},
	{name: "server-sse-polling", skip: "tests SSE polling and resumption (server closes the stream, client reconnects with Last-Event-ID); the gateway answers POSTs with JSON when the client accepts it and its streams carry no event ids, so none of its checks apply (the suite records 0 checks)"},
	{name: "server-sse-multiple-streams", versions: both},
	{name: "elicitation-sep1330-enums", versions: current},
	{name: "resources-list", skip: skipToolsOnly},
	{name: "resources-read-text", skip: skipToolsOnly},
	{name: "resources-read-binary", skip: skipToolsOnly},
	{name: "resources-templates-read", skip: skipToolsOnly},
	{name: "resources-subscribe", skip: skipToolsOnly},
	{name: "resources-unsubscribe", skip: skipToolsOnly},
	{name: "sep-2164-resource-not-found", skip: skipToolsOnly},
	{name: "sep-2640-skills-directory", skip: skipSkills},
	{name: "sep-2640-skills-enumeration", skip: skipSkills},
	{name: "sep-2640-skills-manifest", skip: skipSkills},
	{name: "prompts-list", skip: skipToolsOnly},
	{name: "prompts-get-simple", skip: skipToolsOnly},
	{name: "prompts-get-with-args", skip: skipToolsOnly},
	{name: "prompts-get-embedded-resource", skip: skipToolsOnly},
	{name: "prompts-get-with-image", skip: skipToolsOnly},
	{name: "dns-rebinding-protection", versions: both},
	{name: "caching", versions: stateless, notApplicable: map[string]string{
		"sep-2549-prompts-list-caching-hints":             naToolsOnly,
		"sep-2549-resources-list-caching-hints":           naToolsOnly,
		"sep-2549-resources-templates-list-caching-hints": naToolsOnly,
	}},
	{name: "http-header-validation", versions: stateless},
	{name: "http-custom-header-server-validation", versions: stateless},
	{name: "tasks-lifecycle", skip: skipTasks},
	{name: "tasks-capability-negotiation", skip: skipTasks},
	{name: "tasks-wire-fields", skip: skipTasks},
	{name: "tasks-request-state-removal", skip: skipTasks},
	{name: "tasks-mrtr-input", skip: skipTasks},
	{name: "tasks-request-headers", skip: skipTasks},
	{name: "tasks-dispatch-and-envelope", skip: skipTasks},
	{name: "tasks-status-notifications", skip: skipTasks},
	{name: "tasks-required-task-error", skip: skipTasks},
	{name: "tasks-mrtr-composition", skip: skipTasks},
	{name: "input-required-result-basic-elicitation", versions: stateless, statelessUpstream: true},
	{name: "input-required-result-basic-sampling", versions: stateless, statelessUpstream: true},
	{name: "input-required-result-basic-list-roots", versions: stateless, statelessUpstream: true},
	{name: "input-required-result-request-state", versions: stateless, statelessUpstream: true},
	{name: "input-required-result-multiple-input-requests", versions: stateless, statelessUpstream: true},
	{name: "input-required-result-multi-round", versions: stateless, statelessUpstream: true},
	{name: "input-required-result-missing-input-response", versions: stateless, statelessUpstream: true},
	{name: "input-required-result-non-tool-request", skip: "asks for input on prompts/get; " + skipToolsOnly},
	{name: "input-required-result-result-type", versions: stateless, statelessUpstream: true},
	{name: "input-required-result-unsupported-methods", versions: stateless},
	{name: "input-required-result-tampered-state", versions: stateless, statelessUpstream: true},
	{name: "input-required-result-capability-check", versions: stateless, statelessUpstream: true},
	{name: "input-required-result-ignore-extra-params", versions: stateless, statelessUpstream: true},
	{name: "input-required-result-validate-input", versions: stateless, statelessUpstream: true},
}

// TestConformance runs every applicable scenario at each of its protocol
// versions against the gateway and requires the suite's verdict: exit 0,
// at least one SUCCESS check and no FAILURE or WARNING.
//
// The suite sends no credentials, so it talks to the gateway through
// credentialProxy, which adds an agent token of the "upstream" profile (a
// task of its own per run) and passes everything else (Host, Origin,
// headers, bodies, streams) through unchanged.
func TestConformance(t *testing.T) {
	s := setup(t)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			if sc.skip != "" {
				t.Skip("not applicable to the gateway: " + sc.skip)
			}
			for _, v := range sc.versions {
				t.Run(v, func(t *testing.T) {
					t.Parallel()
					endpoint, token := s.gatewayURL, ""
					if sc.statelessUpstream {
						endpoint, token = s.statelessURL(t), s.statelessToken(t, upstreamProfile)
					} else {
						token = s.taskToken(t, upstreamProfile)
					}
					runScenario(t, s, s.proxy.url(t, endpoint, token), "conformance", sc, v)
				})
			}
		})
	}
}

// apiResults is what every scenario that runs on /mcp does on /api/mcp,
// the coordinators' endpoint (docs/requirements.md#external-gateway; same transport code, same
// protocol versions): run at the listed versions and pass, or be skipped
// for the reason given. A scenario skipped on /mcp is skipped on /api/mcp
// for the same reason (apiScenarios). README.md shows this table too.
var apiResults = map[string]scenario{
	"server-initialize":        {versions: dated2},
	"server-session-lifecycle": {versions: dated3},
	"server-stateless": {versions: stateless, notApplicable: map[string]string{
		"sep-2575-server-rejects-undeclared-capability":            naFixtureDiag,
		"sep-2575-missing-capability-http-400":                     naFixtureDiag,
		"sep-2575-http-server-no-independent-requests-on-stream":   naFixtureDiag,
		"sep-2575-server-no-log-without-loglevel":                  naFixtureDiag,
		"sep-2575-server-sends-tools-list-changed-on-subscription": naFixtureDiag,
	}},
	"ping":                         {versions: dated2},
	"logging-set-level":            {versions: dated2},
	"tools-call-with-logging":      {skip: skipFixtureTools},
	"tools-call-with-progress":     {skip: skipFixtureTools},
	"tools-call-sampling":          {skip: skipFixtureTools},
	"tools-call-elicitation":       {skip: skipFixtureTools},
	"elicitation-sep1034-defaults": {skip: skipFixtureTools},
	"elicitation-sep1330-enums":    {skip: skipFixtureTools},
	"tools-list":                   {versions: dated2Now},
	"tools-call-simple-text":       {skip: skipFixtureTools},
	"tools-call-image":             {skip: skipFixtureTools},
	"tools-call-audio":             {skip: skipFixtureTools},
	"tools-call-embedded-resource": {skip: skipFixtureTools},
	"tools-call-mixed-content":     {skip: skipFixtureTools},
	"tools-call-error":             {skip: skipFixtureTools},
	"json-schema-2020-12":          {skip: skipFixtureTools},
	"server-sse-multiple-streams":  {versions: both},
	"dns-rebinding-protection":     {versions: both},
	"caching": {versions: stateless, notApplicable: map[string]string{
		"sep-2549-prompts-list-caching-hints":             naToolsOnly,
		"sep-2549-resources-list-caching-hints":           naToolsOnly,
		"sep-2549-resources-templates-list-caching-hints": naToolsOnly,
	}},
	"http-header-validation":                        {versions: stateless},
	"http-custom-header-server-validation":          {skip: skipNoHeaderTool},
	"input-required-result-unsupported-methods":     {versions: stateless},
	"input-required-result-basic-elicitation":       {skip: skipFixtureTools},
	"input-required-result-basic-sampling":          {skip: skipFixtureTools},
	"input-required-result-basic-list-roots":        {skip: skipFixtureTools},
	"input-required-result-request-state":           {skip: skipFixtureTools},
	"input-required-result-multiple-input-requests": {skip: skipFixtureTools},
	"input-required-result-multi-round":             {skip: skipFixtureTools},
	"input-required-result-missing-input-response":  {skip: skipFixtureTools},
	"input-required-result-result-type":             {skip: skipFixtureTools},
	"input-required-result-tampered-state":          {skip: skipFixtureTools},
	"input-required-result-capability-check":        {skip: skipFixtureTools},
	"input-required-result-ignore-extra-params":     {skip: skipFixtureTools},
	"input-required-result-validate-input":          {skip: skipFixtureTools},
}

// apiScenarios is the scenarios table as it applies to /api/mcp: the
// scenarios skipped on /mcp with their reasons, the others as apiResults
// says.
func apiScenarios() []scenario {
	out := make([]scenario, 0, len(scenarios))
	for _, sc := range scenarios {
		api := scenario{name: sc.name, skip: sc.skip}
		if sc.skip == "" {
			r := apiResults[sc.name]
			api.versions, api.skip, api.notApplicable = r.versions, r.skip, r.notApplicable
		}
		out = append(out, api)
	}
	return out
}

// TestConformanceAPI runs the suite against /api/mcp of the coordinator
// gateway (the demo backend, coordinator_test.go) through credentialProxy,
// which adds an scmt_ token with mcp:read and mcp:ops created through the
// admin API (one per run), with the same verdict as TestConformance.
func TestConformanceAPI(t *testing.T) {
	s := setup(t)
	endpoint := s.coordinatorURL(t)
	for _, sc := range apiScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			if sc.skip != "" {
				t.Skip("not applicable to /api/mcp: " + sc.skip)
			}
			for _, v := range sc.versions {
				t.Run(v, func(t *testing.T) {
					t.Parallel()
					runScenario(t, s, s.proxy.url(t, endpoint, s.apiToken(t, "mcp:read", "mcp:ops")), "conformance-api", sc, v)
				})
			}
		})
	}
}

// check is one entry of the suite's checks.json.
type check struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"`
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

// clientTeardown is the error text of a check that failed because the
// suite's own HTTP client (Node's fetch) saw its connection torn down
// mid-response ("terminated"). On this 2-core machine it happens in about
// one run in ten, at the end of a scenario, with nothing in the gateway's
// log; the scenario then runs once more, and the retry is logged.
const clientTeardown = "terminated"

// scenarioTimeout is the check the suite reports when a scenario did not
// finish within its 30 s. Seen once in a clean-clone CI run under load
// (http-header-validation@2026-07-28, with the loopback proxy reporting a
// closed connection) and never when run again; like a teardown, the
// scenario then runs once more and the retry is logged, so a gateway that
// really hangs still fails.
const scenarioTimeout = "scenario-timeout"

// runScenario runs sc at version against serverURL and judges its checks;
// the suite's results go to the folder results in s.dir.
func runScenario(t *testing.T, s *stack, serverURL, results string, sc scenario, version string) {
	name := sc.name
	checks, console, runErr := suiteRun(t, s, serverURL, results, name, version, "")
	if tornDown(checks) {
		t.Logf("%s@%s: a check failed with %q (the suite's client lost its connection) or is %s; running the scenario once more", name, version, clientTeardown, scenarioTimeout)
		checks, console, runErr = suiteRun(t, s, serverURL, results, name, version, "-retry")
	}
	counts := map[string]int{}
	expected := 0
	for _, c := range checks {
		counts[c.Status]++
		if c.Status != "FAILURE" && c.Status != "WARNING" {
			continue
		}
		if why, ok := sc.notApplicable[c.ID]; ok {
			expected++
			t.Logf("not applicable: %s %s: %s (%s)", c.Status, c.ID, c.ErrorMessage, why)
			continue
		}
		t.Errorf("%s %s: %s\n  details: %s", c.Status, c.ID, c.ErrorMessage, c.Details)
	}
	t.Logf("%s@%s: %d SUCCESS, %d FAILURE, %d WARNING, %d SKIPPED, %d INFO",
		name, version, counts["SUCCESS"], counts["FAILURE"], counts["WARNING"], counts["SKIPPED"], counts["INFO"])
	if counts["SUCCESS"] == 0 {
		t.Errorf("no check succeeded; the scenario did not really run:\n%s", console)
	}
	if runErr != nil && !t.Failed() && expected == 0 {
		t.Errorf("the suite exited with %v although no check failed:\n%s", runErr, console)
	}
}

// suiteRun runs the suite's scenario once and returns its checks, console
// output and exit error; suffix keeps a retry's results apart.
func suiteRun(t *testing.T, s *stack, serverURL, results, name, version, suffix string) ([]check, []byte, error) {
	out := filepath.Join(s.dir, results, name+"@"+version+suffix)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.node, conformanceCLI, "server", "--url", serverURL,
		"--scenario", name, "--spec-version", version, "--timeout", "30000", "-o", out)
	console, runErr := cmd.CombinedOutput()
	checks, err := readChecks(out)
	if err != nil {
		t.Fatalf("no results from the suite (%v); its output:\n%s", err, console)
	}
	return checks, console, runErr
}

// notObserved starts the message of a check a scenario declares but never
// ran because its setup failed first (http-custom-header-server-validation
// fails every such check after a teardown of its setup request).
const notObserved = "Check was not observed"

// tornDown reports whether some check failed with clientTeardown or
// is the scenarioTimeout check. Other failed checks do not prevent the
// retry: a check that reads what the torn-down request would have
// returned fails too (caching's ttl-non-negative after its tools/list was
// torn down, the checks a setup's teardown left notObserved). The retry
// is judged on its own, so a gateway that really fails still fails.
func tornDown(checks []check) bool {
	for _, c := range checks {
		if (c.Status == "FAILURE" || c.Status == "WARNING") && (strings.Contains(c.ErrorMessage, clientTeardown) || c.ID == scenarioTimeout) {
			return true
		}
	}
	return false
}

// TestTornDown: a scenario whose client lost a connection is run once more
// even when a check that depended on that request failed as well; one
// without a teardown is not.
func TestTornDown(t *testing.T) {
	caching := []check{
		{ID: "sep-2549-tools-list-caching-hints", Status: "FAILURE", ErrorMessage: "tools/list request failed: terminated"},
		{ID: "sep-2549-ttl-non-negative", Status: "FAILURE", ErrorMessage: "no endpoints returned ttlMs"},
		{ID: "sep-2549-other", Status: "SUCCESS"},
	}
	if !tornDown(caching) {
		t.Error("a teardown with a dependent failure is not retried")
	}
	if tornDown(caching[1:]) {
		t.Error("a failure without a teardown is retried")
	}
	if !tornDown([]check{{ID: scenarioTimeout, Status: "FAILURE"}}) {
		t.Error("a scenario timeout is not retried")
	}
}

// readChecks reads every checks.json the suite wrote under dir.
func readChecks(dir string) ([]check, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no checks.json under %s", dir)
	}
	var all []check
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var cs []check
		if err := json.Unmarshal(data, &cs); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		all = append(all, cs...)
	}
	return all, nil
}

// listedScenario matches a line of `conformance list --server`: "  - name [versions]".
var listedScenario = regexp.MustCompile(`^\s*- (\S+) \[`)

// TestConformanceScenarioList makes a suite upgrade visible: every server
// scenario the pinned suite lists must be in the table above, run or
// skipped with a reason, and the table must name nothing else.
func TestConformanceScenarioList(t *testing.T) {
	s := setup(t)
	out, err := exec.Command(s.node, conformanceCLI, "list", "--server").CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list: %v\n%s", err, out)
	}
	var listed []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if m := listedScenario.FindStringSubmatch(sc.Text()); m != nil {
			listed = append(listed, m[1])
		}
	}
	var ours []string
	for _, s := range scenarios {
		ours = append(ours, s.name)
		if (s.skip == "") == (len(s.versions) == 0) {
			t.Errorf("scenario %s must either run at some versions or be skipped with a reason", s.name)
		}
	}
	for _, n := range listed {
		if !slices.Contains(ours, n) {
			t.Errorf("the suite lists scenario %s, which the table in conformance_test.go does not: decide whether it applies", n)
		}
	}
	for _, n := range ours {
		if !slices.Contains(listed, n) {
			t.Errorf("the table names scenario %s, which the pinned suite does not list", n)
		}
	}
	// /api/mcp: every scenario that runs on /mcp has a decision of its own.
	for _, sc := range scenarios {
		r, ok := apiResults[sc.name]
		switch {
		case sc.skip != "" && ok:
			t.Errorf("apiResults names %s, which is skipped on /mcp (and so on /api/mcp, for the same reason)", sc.name)
		case sc.skip == "" && !ok:
			t.Errorf("scenario %s runs on /mcp but apiResults does not say what it does on /api/mcp", sc.name)
		case ok && (r.skip == "") == (len(r.versions) == 0):
			t.Errorf("apiResults for %s must either run at some versions or be skipped with a reason", sc.name)
		}
	}
	for n := range apiResults {
		if !slices.Contains(ours, n) {
			t.Errorf("apiResults names scenario %s, which the scenarios table does not", n)
		}
	}
}

// readmeRow matches a scenario row of README.md: | `name` | versions or skip | reason |.
var readmeRow = regexp.MustCompile("^\\| `([a-z0-9-]+)` \\| ([^|]+) \\|")

// apiSection is the heading of README.md's table for /api/mcp.
const apiSection = "## Conformance scenarios on `/api/mcp`"

// TestConformanceReadme keeps README.md's scenario tables in step with the
// scenarios table (/mcp) and apiResults (/api/mcp): same names, same
// versions, skips marked "skip".
func TestConformanceReadme(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	mcpPart, apiPart, found := strings.Cut(string(data), apiSection)
	if !found {
		t.Fatalf("README.md has no section %q", apiSection)
	}
	var api []scenario
	for _, sc := range scenarios {
		if r, ok := apiResults[sc.name]; ok {
			r.name = sc.name
			api = append(api, r)
		}
	}
	compareReadme(t, "/mcp", mcpPart, scenarios)
	compareReadme(t, "/api/mcp", apiPart, api)
}

// compareReadme checks the scenario rows of one part of README.md against
// table.
func compareReadme(t *testing.T, endpoint, part string, table []scenario) {
	t.Helper()
	rows := map[string]string{}
	for _, line := range strings.Split(part, "\n") {
		if m := readmeRow.FindStringSubmatch(line); m != nil {
			rows[m[1]] = strings.TrimSpace(m[2])
		}
	}
	for _, s := range table {
		want := "skip"
		if s.skip == "" {
			want = "pass: " + strings.Join(s.versions, ", ")
		}
		if got, ok := rows[s.name]; !ok || got != want {
			t.Errorf("README.md row for %s on %s = %q, want %q", s.name, endpoint, got, want)
		}
		delete(rows, s.name)
	}
	for n := range rows {
		t.Errorf("README.md lists %s for %s, which the table does not", n, endpoint)
	}
}

// credentialProxy is a reverse proxy on 127.0.0.1 in front of the
// gateways, for the conformance suite, which cannot send credentials. A
// request to /t/<id>/<path> goes to the gateway registered as id (its
// /mcp or /api/mcp) with "Authorization: Bearer <token registered as id>"
// added; Host, Origin and everything else pass unchanged (the
// DNS-rebinding checks must see the client's), and streamed responses are
// flushed at once.
type credentialProxy struct {
	ln     net.Listener
	srv    *http.Server
	mu     sync.Mutex
	routes map[string]route
}

// route is where one registered id goes, with which token.
type route struct {
	target *url.URL // scheme and host of the gateway
	token  string
}

func newCredentialProxy() (*credentialProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &credentialProxy{ln: ln, routes: map[string]route{}}, nil
}

// origin is the Origin a browser-like client of the proxy sends.
func (p *credentialProxy) origin() string { return "http://" + p.ln.Addr().String() }

// serve forwards to the registered gateways until close.
func (p *credentialProxy) serve() error {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			id, rest := splitRun(pr.In.URL.Path)
			p.mu.Lock()
			r, ok := p.routes[id]
			p.mu.Unlock()
			if !ok {
				r.target = &url.URL{Scheme: "http", Host: "127.0.0.1:1"} // nothing listens: 502
			}
			pr.SetURL(r.target)
			pr.Out.URL.Path, pr.Out.URL.RawPath = rest, ""
			pr.Out.Host = pr.In.Host
			if r.token != "" {
				pr.Out.Header.Set("Authorization", "Bearer "+r.token)
			}
		},
		FlushInterval: -1,
	}
	p.srv = &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(p.ln) }()
	return nil
}

// splitRun splits "/t/<id>/rest" into id and "/rest".
func splitRun(path string) (id, rest string) {
	trimmed, ok := strings.CutPrefix(path, "/t/")
	if !ok {
		return "", path
	}
	id, rest, _ = strings.Cut(trimmed, "/")
	return id, "/" + rest
}

// url registers endpoint (a gateway's …/mcp or …/api/mcp) with token and
// returns the proxy's URL that reaches it with that token.
func (p *credentialProxy) url(t *testing.T, endpoint, token string) string {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	id := fmt.Sprintf("%d", len(p.routes)+1)
	p.routes[id] = route{target: &url.URL{Scheme: u.Scheme, Host: u.Host}, token: token}
	return p.origin() + "/t/" + id + u.Path
}

func (p *credentialProxy) close() {
	if p.srv != nil {
		_ = p.srv.Close()
		return
	}
	_ = p.ln.Close()
}
