package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
	"github.com/mcpgate/mcpgate/policies"
)

// logCollector is an OPA-style decision log service: it keeps the
// decompressed body of every upload to /logs.
type logCollector struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (c *logCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	zr, err := gzip.NewReader(r.Body)
	if err != nil || r.URL.Path != "/logs" || r.Header.Get("Content-Encoding") != "gzip" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	raw, _ := io.ReadAll(zr)
	c.mu.Lock()
	c.bodies = append(c.bodies, raw)
	c.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// bundleReadingAllArguments copies the embedded bundle into a folder, adds
// a rule that reads the whole arguments object (so every argument of a
// call enters the policy input, the worst case for the log), and opts
// arguments in: script.run's slug and inputs, and confirmation_token for
// every tool (a secret by its name, so still never logged). The shipped
// mask tests pin the shipped opt-in (no argument but script.run's slug),
// so they are left out: a policy folder goes live only when its own tests
// pass, and these would fail on purpose (they run on the shipped bundle).
func bundleReadingAllArguments(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.CopyFS(dir, policies.FS))
	must(t, os.Remove(filepath.Join(dir, "system", "log", "mask_test.rego")))
	must(t, os.WriteFile(filepath.Join(dir, "supacloud", "argument_count.rego"),
		[]byte("package supacloud\n\nargument_count := count(input.arguments)\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "system", "log", "arguments.rego"),
		[]byte("package system.log\n\narguments := {\"script.run\": [\"slug\", \"inputs\"], \"*\": [\"confirmation_token\"]}\n"), 0o644))
	return dir
}

// TestDecisionLogHoldsNoSecret drives calls whose arguments carry an
// agent session JWT, an scmt_ API token and a deploy confirmation token
// through the real wiring, with the file and the HTTP sink on, and checks
// that none of them reaches either sink, while the events themselves (and
// an argument opted in) do.
func TestDecisionLogHoldsNoSecret(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			collector := &logCollector{}
			sink := httptest.NewServer(collector)
			defer sink.Close()
			file := filepath.Join(t.TempDir(), "decisions.jsonl")
			g := startGateway(t, dbURL(t), map[string]string{
				"SUPACLOUD_MCP_CONFIRMATION_SECRET": confirmationSecret,
				"MCPGATE_POLICY_DIR":                bundleReadingAllArguments(t),
				"MCPGATE_DECISION_LOG_FILE":         file,
				"MCPGATE_DECISION_LOG_URL":          sink.URL,
				"MCPGATE_DECISION_LOG_INTERVAL":     "50ms",
			})
			ids := seedFixtures(t, g)
			script := ids["ws-a"]["$script"].(string)
			session := g.token(t, "ws-a", "olivia", "task-ws-a", "full")
			jwt := g.token(t, "ws-a", "mia", "task-other", "reader") // a second, valid session token
			apiToken, _ := createToken(t, g, "ws-a", "ci", "mcp:read")
			cs := g.connect(t, session)

			_, _ = call(cs, "script.run", map[string]any{"slug": script, "inputs": map[string]any{"auth": jwt, "note": "use " + apiToken}})
			_, _ = call(cs, "projects.list", map[string]any{"token": jwt, "filter": apiToken}) // fails the schema after the decision
			scs := g.connect(t, g.token(t, "ws-a", "olivia", "task-ws-a", "scripter"))
			_, _ = call(scs, "script.run", map[string]any{"slug": apiToken}) // denied; the reason quotes the slug
			app := g.undeployedApp(t, "ws-a")
			res, err := call(cs, "app.deploy", map[string]any{"app_id": app})
			if err != nil {
				t.Fatal(err)
			}
			confirmation, _ := res.StructuredContent.(map[string]any)["confirmation_token"].(string)
			if !strings.HasPrefix(confirmation, "mcpc1.") {
				t.Fatalf("no confirmation token: %s", textOf(res))
			}
			_, _ = call(cs, "app.deploy", map[string]any{"app_id": app, "confirmation_token": confirmation, "idempotency_key": "k1"})
			_, _ = call(cs, "app.get", map[string]any{"app_id": app, "note": confirmation})
			lastDecision := g.lastAudit(t, "ws-a", "task-ws-a", "app.get").DecisionID
			must(t, g.app.Close()) // flushes both sinks

			raw, err := os.ReadFile(file)
			must(t, err)
			collector.mu.Lock()
			uploaded := bytes.Join(collector.bodies, []byte("\n"))
			collector.mu.Unlock()
			for sinkName, text := range map[string][]byte{"file": raw, "http": uploaded} {
				for name, secret := range map[string]string{"agent JWT": jwt, "session JWT": session, "scmt_ token": apiToken, "confirmation token": confirmation} {
					if bytes.Contains(text, []byte(secret)) {
						t.Errorf("the %s sink holds the %s", sinkName, name)
					}
				}
				// Fragments too: a JWT's signature, the token body.
				for _, frag := range []string{jwt[strings.LastIndex(jwt, ".")+1:], strings.TrimPrefix(apiToken, "scmt_"), confirmation[strings.LastIndex(confirmation, ".")+1:]} {
					if bytes.Contains(text, []byte(frag)) {
						t.Errorf("the %s sink holds part of a credential (%s…)", sinkName, frag[:8])
					}
				}
			}

			events := decisionEvents(t, raw)
			if len(events) != 6 {
				t.Fatalf("%d events in the file, want one per decided call (6)", len(events))
			}
			var httpEvents int
			for _, b := range collector.bodies {
				var batch []map[string]any
				must(t, json.Unmarshal(b, &batch))
				httpEvents += len(batch)
			}
			if httpEvents != 6 {
				t.Errorf("%d events uploaded, want 6", httpEvents)
			}
			first := events[0]
			if first["path"] != "supacloud/decision" || first["decision_id"] == "" {
				t.Errorf("first event %v", first)
			}
			args := first["input"].(map[string]any)["arguments"].(map[string]any)
			if args["slug"] != script {
				t.Errorf("opted-in slug %v not logged (want %q)", args["slug"], script)
			}
			if events[5]["decision_id"] != lastDecision {
				t.Errorf("last event's decision_id %v, the audit row's %q", events[5]["decision_id"], lastDecision)
			}
		})
	}
}

func decisionEvents(t *testing.T, raw []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line not JSON: %v", err)
		}
		out = append(out, ev)
	}
	return out
}

// TestDecisionLogNeedsAMask: a bundle without data.system.log.mask does
// not start with a decision log configured, since its events could only be
// written unmasked.
func TestDecisionLogNeedsAMask(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	must(t, os.CopyFS(dir, policies.FS))
	must(t, os.RemoveAll(filepath.Join(dir, "system")))
	vars := map[string]string{
		"MCPGATE_DATABASE_URL":      "sqlite:" + filepath.Join(t.TempDir(), "e2e.db"),
		"MCPGATE_JWT_SECRET":        jwtSecret,
		"MCPGATE_POLICY_DIR":        dir,
		"MCPGATE_DECISION_LOG_FILE": filepath.Join(t.TempDir(), "d.jsonl"),
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	must(t, err)
	app, err := server.Open(context.Background(), cfg, zap.NewNop(), "e2e")
	if err == nil {
		_ = app.Close()
		t.Fatal("the gateway started with a decision log and a bundle without a mask")
	}
	if !strings.Contains(err.Error(), "data.system.log.mask") {
		t.Errorf("error %q does not name the missing rule", err)
	}
}
