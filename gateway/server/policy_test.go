package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// useBundle replaces the contents of the policy folder dir with
// testdata/policy/<name>.
func useBundle(t *testing.T, dir, name string) {
	t.Helper()
	for _, n := range []string{"supacloud", ".manifest"} {
		if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "policy", name))); err != nil {
		t.Fatal(err)
	}
}

// openPolicyApp opens the real wiring on an embedded store with the policy
// folder dir.
func openPolicyApp(t *testing.T, dir string) *server.App {
	t.Helper()
	return openPolicyAppEnv(t, dir, nil)
}

// openPolicyAppEnv is openPolicyApp with extra environment on top.
func openPolicyAppEnv(t *testing.T, dir string, extra map[string]string) *server.App {
	t.Helper()
	vars := map[string]string{
		"MCPGATE_DATABASE_URL":      "sqlite:" + filepath.Join(t.TempDir(), "policy.db"),
		"MCPGATE_JWT_SECRET":        "policy-test-secret-0123456789abcdef0123",
		"MCPGATE_ADMIN_TOKEN":       "policy-admin-token",
		"MCPGATE_POLICY_DIR":        dir,
		"AGENT_MCP_TOOL_RATE_LIMIT": "1000000",
	}
	for k, v := range extra {
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	app, err := server.Open(context.Background(), cfg, zap.NewNop(), "policy-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	if err := app.Store.PutWorkspace(context.Background(), &gateway.Workspace{ID: "ws-a", Name: "A", Slug: "a"}); err != nil {
		t.Fatal(err)
	}
	return app
}

// get sends one request through the app's handler and returns the status
// and body.
func request(t *testing.T, app *server.App, method, path string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	r.Host = "localhost" // a name of the gateway: the probes check Host (httptest's example.com is not one)
	r.Header.Set("Authorization", "Bearer policy-admin-token")
	w := httptest.NewRecorder()
	app.Server.ServeHTTP(w, r)
	b, _ := io.ReadAll(w.Body)
	return w.Code, string(b)
}

// TestReloadUnderConcurrentCallsAuditsOneRevision: tools/calls run without
// a pause through the real wiring while the policy folder is swapped
// between a bundle that allows everything and one that denies everything,
// and reloaded through the admin API. Every audit row names exactly one of
// the two revisions, and its outcome is that revision's. A bundle whose
// tests fail is refused: the admin API answers 422 with OPA's message, the
// failure counter and GET /admin/v1/policy show it, and rows keep naming
// the running revision. Run with -race.
func TestReloadUnderConcurrentCallsAuditsOneRevision(t *testing.T) {
	dir := t.TempDir()
	useBundle(t, dir, "allow")
	app := openPolicyApp(t, dir)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 4 {
		wg.Go(func() {
			p := &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "u1", WorkspaceID: "ws-a", TaskID: fmt.Sprintf("t-%d", g)}
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = app.Pipeline.CallTool(context.Background(), p, &gateway.CallRequest{Name: "workspace.info", Arguments: map[string]any{}})
			}
		})
	}
	for i, name := range []string{"deny", "allow", "deny", "allow"} {
		useBundle(t, dir, name)
		if code, body := request(t, app, http.MethodPost, "/admin/v1/policy/reload"); code != http.StatusOK || !strings.Contains(body, `"outcome":"live"`) {
			t.Fatalf("reload %d to %s: %d %s", i, name, code, body)
		}
		// A reload of bytes tested before runs no test, so the swaps
		// could follow each other before a call lands: wait for one
		// decided by each revision.
		waitAuditedBy(t, app, "rev-"+name)
	}
	// A candidate whose own test fails never goes live.
	useBundle(t, dir, "deny")
	if err := os.WriteFile(filepath.Join(dir, "supacloud", "decision_test.rego"),
		[]byte("package supacloud_test\n\nimport data.supacloud\n\ntest_allow if supacloud.allow\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, body := request(t, app, http.MethodPost, "/admin/v1/policy/reload")
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "test_allow: FAIL") {
		t.Fatalf("reload of a bundle with a failing test: %d %s, want 422 naming the test", code, body)
	}
	close(stop)
	wg.Wait()

	code, body = request(t, app, http.MethodGet, "/admin/v1/policy")
	var st policystatus.Status
	if err := json.Unmarshal([]byte(body), &st); code != http.StatusOK || err != nil {
		t.Fatalf("GET /admin/v1/policy: %d %s", code, body)
	}
	if st.Revision != "rev-allow" || st.LastFailure == nil || !strings.Contains(st.LastFailure.Error, "test_allow: FAIL") || st.Source != dir {
		t.Errorf("policy status %+v: want rev-allow live and the failing test shown", st)
	}
	_, metrics := request(t, app, http.MethodGet, "/metrics")
	if want := `mcpgate_policy_revision_info{revision="rev-allow",surface="supacloud"} 1`; !strings.Contains(metrics, want) {
		t.Errorf("/metrics lacks %s", want)
	}
	// The watch may have reloaded the folder too, once it was quiet: the
	// counters are at least the admin API's.
	for series, least := range map[string]int{`mcpgate_policy_reload_failures_total{surface="supacloud"}`: 1, `mcpgate_policy_reloads_total{surface="supacloud"}`: 4} {
		if n, ok := metricValue(metrics, series); !ok || n < least {
			t.Errorf("/metrics %s = %d (found %v), want at least %d", series, n, ok, least)
		}
	}
	if strings.Contains(metrics, `revision="rev-deny"`) {
		t.Errorf("/metrics still shows the replaced revision rev-deny")
	}
	if _, ready := request(t, app, http.MethodGet, "/readyz"); !strings.Contains(ready, `"policy":{"supacloud":{"refused_revision":"rev-deny","revision":"rev-allow"}}`) || strings.Contains(ready, dir) {
		t.Errorf("/readyz %s: want the live revision and the refused one, and not the folder", ready)
	}

	seen := map[string]int{}
	before := gateway.AuditFilter{WorkspaceID: "ws-a", Limit: 1000}
	for {
		events, err := app.Store.ListAuditEvents(context.Background(), before)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			denied := ev.Status == gateway.AuditDenied
			switch {
			case ev.PolicyRevision == "rev-allow" && !denied:
			case ev.PolicyRevision == "rev-deny" && denied && len(ev.ReasonCodes) == 1 && ev.ReasonCodes[0] == "test.deny":
			default:
				t.Fatalf("audit row %+v: its outcome is not that of the revision it names", ev)
			}
			seen[ev.PolicyRevision]++
		}
		if len(events) < before.Limit {
			break
		}
		before.Before = gateway.PositionOf(&events[len(events)-1])
	}
	if seen["rev-allow"] == 0 || seen["rev-deny"] == 0 {
		t.Errorf("audit rows by revision %v: want calls decided by both", seen)
	}
}

// waitAuditedBy waits, up to 10 s, for an audit row of workspace ws-a
// naming revision rev.
func waitAuditedBy(t *testing.T, app *server.App, rev string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		events, err := app.Store.ListAuditEvents(context.Background(), gateway.AuditFilter{WorkspaceID: "ws-a", Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			if ev.PolicyRevision == rev {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no call audited under %s 10 s after it went live", rev)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// metricValue reads the value of series (name and labels) from a
// Prometheus text exposition.
func metricValue(exposition, series string) (int, bool) {
	for line := range strings.Lines(exposition) {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var n int
			_, err := fmt.Sscan(v, &n)
			return n, err == nil
		}
	}
	return 0, false
}

// A policy folder the gateway refuses at start says, besides OPA's or the
// engine's own reason, which variable named it and what to point it at:
// a newcomer who sets MCPGATE_POLICY_DIR to one surface's folder
// (policies/supacloud) or to an empty one learns to use a copy of the
// whole policies/ folder, or to unset it.
func TestRefusedPolicyFolderSaysWhatToDo(t *testing.T) {
	for _, tc := range []struct{ name, dir, ccListen string }{
		{"empty folder", t.TempDir(), ""},
		{"one surface's folder with the cc_server surface on", filepath.Join("testdata", "policy", "allow"), "127.0.0.1:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{
				"MCPGATE_DATABASE_URL":    "sqlite:" + filepath.Join(t.TempDir(), "policy.db"),
				"MCPGATE_JWT_SECRET":      "policy-test-secret-0123456789abcdef0123",
				"MCPGATE_POLICY_DIR":      tc.dir,
				"MCPGATE_CCSERVER_LISTEN": tc.ccListen,
			}
			cfg, err := config.Load(func(k string) string { return vars[k] })
			if err != nil {
				t.Fatal(err)
			}
			app, err := server.Open(context.Background(), cfg, zap.NewNop(), "policy-test")
			if err == nil {
				_ = app.Close()
				t.Fatalf("Open with MCPGATE_POLICY_DIR=%s succeeded", tc.dir)
			}
			for _, want := range []string{"MCPGATE_POLICY_DIR=" + tc.dir, "a copy of the repository's policies/ folder", "unset it"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// Every policy reload attempt a replica makes is an audit event of kind
// policy by the gateway, naming its trigger, outcome and revision, and
// for a refused candidate why (status denied); a reload asked for through
// the admin API is recorded once, as the admin write, with its actor.
func TestPolicyReloadAttemptsAreAudited(t *testing.T) {
	dir := t.TempDir()
	useBundle(t, dir, "allow")
	app := openPolicyApp(t, dir)
	ctx := context.Background()
	wantRow := func(actor string, want ...string) string { t.Helper(); return wantPolicyRow(t, app, actor, want...) }
	useBundle(t, dir, "deny")
	if _, err := app.Policy.Reload(ctx, "watch"); err != nil {
		t.Fatal(err)
	}
	wantRow("gateway", `"tool":"policy.reload"`, `"status":"allowed"`, `"trigger":"watch"`, `"outcome":"live"`, `"revision":"rev-deny"`, `"surface":"supacloud"`)
	if err := os.WriteFile(filepath.Join(dir, "supacloud", "decision_test.rego"),
		[]byte("package supacloud_test\n\nimport data.supacloud\n\ntest_allow if supacloud.allow\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Policy.Reload(ctx, "watch"); err == nil {
		t.Fatal("a candidate whose test fails was not refused")
	}
	wantRow("gateway", `"status":"denied"`, `"policy.refused"`, `test_allow: FAIL`)
	if code, body := request(t, app, http.MethodPost, "/admin/v1/policy/reload"); code != http.StatusUnprocessableEntity {
		t.Fatalf("admin reload: %d %s", code, body)
	}
	wantRow("admin-token", `"tool":"POST /admin/v1/policy/reload"`, `"http.422"`)
	evs, err := app.Store.ListAuditEvents(ctx, gateway.AuditFilter{Kind: "policy", Actor: "gateway", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if strings.Contains(string(ev.Arguments), `"trigger":"admin"`) {
			t.Errorf("the admin API's reload was recorded twice: %s", ev.Arguments)
		}
	}
}

// wantPolicyRow waits for one of the newest policy rows of app's trail by
// actor to hold every string of want (in its JSON), and returns it (a
// policy folder's watch may reload too).
func wantPolicyRow(t *testing.T, app *server.App, actor string, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		evs, err := app.Store.ListAuditEvents(context.Background(), gateway.AuditFilter{Kind: "policy", Actor: actor, Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			b, _ := json.Marshal(ev)
			last = string(b)
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(last, w)
			}
			if ok {
				return last
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no policy row by %s holding %q; the newest: %s", actor, want, last)
	return ""
}

// A shadow bundle loaded at the start is an audit event of kind policy
// by the gateway (tool policy.shadow, trigger start, its revision); a
// shadow candidate refused on a later reload is one too, status denied.
func TestShadowStartsAreAudited(t *testing.T) {
	dir, shadow := t.TempDir(), t.TempDir()
	useBundle(t, dir, "allow")
	useBundle(t, shadow, "deny")
	app := openPolicyAppEnv(t, dir, map[string]string{"MCPGATE_SHADOW_POLICY_DIR": shadow})
	wantPolicyRow(t, app, "gateway", `"tool":"policy.shadow"`, `"status":"allowed"`, `"trigger":"start"`, `"revision":"rev-deny"`, `"surface":"supacloud"`)
	if err := os.WriteFile(filepath.Join(shadow, "supacloud", "decision_test.rego"),
		[]byte("package supacloud_test\n\nimport data.supacloud\n\ntest_allow if supacloud.allow\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Policy.Reload(context.Background(), "watch"); err != nil {
		t.Fatal(err)
	}
	wantPolicyRow(t, app, "gateway", `"tool":"policy.shadow"`, `"status":"denied"`, `"policy.refused"`, `test_allow: FAIL`)
}
