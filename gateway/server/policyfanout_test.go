package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
	"github.com/mcpgate/mcpgate/gateway/postgres"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// policyFolders lays out policy bundles under one temporary root, and the
// folders replicas read as symbolic links to them. A link is swapped
// atomically (a new link renamed over the old), as a deploy that
// switches release folders does: no replica's folder watcher sees it, so
// only a reload asked for (admin API) or announced (another replica)
// reloads.
type policyFolders struct {
	t    *testing.T
	root string
}

// bundle copies testdata/policy/<from> to a new folder name; failing adds
// a test of its own that fails, so the bundle is refused at reload.
func (f policyFolders) bundle(name, from string, failing bool) string {
	f.t.Helper()
	dir := filepath.Join(f.root, name)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "policy", from))); err != nil {
		f.t.Fatal(err)
	}
	if failing {
		if err := os.WriteFile(filepath.Join(dir, "supacloud", "broken_test.rego"),
			[]byte("package supacloud_test\n\ntest_broken if false\n"), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
	return dir
}

// link points the folder name at target and returns its path.
func (f policyFolders) link(name, target string) string {
	f.t.Helper()
	l := filepath.Join(f.root, name)
	if err := os.Symlink(target, l+".next"); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Rename(l+".next", l); err != nil {
		f.t.Fatal(err)
	}
	return l
}

// policyStatus is GET /admin/v1/policy of r.
func (r *replica) policyStatus(t *testing.T) policystatus.Status {
	t.Helper()
	var st policystatus.Status
	if err := json.Unmarshal(r.admin(t, http.MethodGet, "/policy", ""), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// waitPolicy polls r's policy status until ok holds, for up to within.
func (r *replica) waitPolicy(t *testing.T, within time.Duration, ok func(policystatus.Status) bool) (policystatus.Status, bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st := r.policyStatus(t)
		if ok(st) || time.Now().After(deadline) {
			return st, ok(st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPolicyReloadReachesEveryReplica: three replicas on one PostgreSQL,
// each reading its own policy folder. A reload through A's admin API
// makes B reload its folder within 1 s: its folder holds the bytes A
// tested, so B takes them on A's tests, and then decides (and audits)
// with the new revision; C, with MCPGATE_POLICY_RETEST_ON_REPLICAS=true,
// runs its own. When B's folder holds other bytes whose test fails, B
// runs its tests, keeps its live revision and says so (GET
// /admin/v1/policy, /readyz, the failure counter) while A goes live.
// When B's listener was cut, B checks its folder once it listens again.
func TestPolicyReloadReachesEveryReplica(t *testing.T) {
	f := policyFolders{t: t, root: t.TempDir()}
	allow, deny := f.bundle("allow", "allow", false), f.bundle("deny", "deny", false)
	broken := f.bundle("broken", "allow", true)
	dirs := []string{f.link("a", allow), f.link("b", allow), f.link("c", allow)}
	rs := openReplicas(t, 3, func(i int, vars map[string]string) {
		vars["MCPGATE_POLICY_DIR"] = dirs[i]
		vars["AGENT_MCP_TOOL_RATE_LIMIT"] = "1000000"
		if i == 2 {
			vars["MCPGATE_POLICY_RETEST_ON_REPLICAS"] = "true"
		}
	})
	a, b, c := rs[0], rs[1], rs[2]
	if got := b.policyStatus(t).Revision; got != "rev-allow" {
		t.Fatalf("B starts on %q, want rev-allow", got)
	}

	f.link("a", deny)
	f.link("b", deny)
	f.link("c", deny)
	start := time.Now()
	if body := a.admin(t, http.MethodPost, "/policy/reload", ""); !strings.Contains(string(body), `"outcome":"live"`) {
		t.Fatalf("reload through A: %s", body)
	}
	st, ok := b.waitPolicy(t, time.Second, func(st policystatus.Status) bool { return st.Revision == "rev-deny" })
	if !ok {
		t.Fatalf("B still serves %q 1 s after a reload through A (last attempt %+v), want rev-deny", st.Revision, st.LastAttempt)
	}
	t.Logf("B serves rev-deny %v after the reload through A", time.Since(start))
	if at := st.LastAttempt; at == nil || at.Trigger != "replica" || at.TestsFrom != policystatus.TestsReplica || at.Tests != 1 {
		t.Errorf("B's last attempt %+v: want trigger replica, the bytes A tested taken on A's tests (1 passed)", at)
	}
	st, ok = c.waitPolicy(t, time.Second, func(st policystatus.Status) bool { return st.Revision == "rev-deny" })
	if at := st.LastAttempt; !ok || at.TestsFrom != policystatus.TestsRun || at.Tests != 1 {
		t.Errorf("C (MCPGATE_POLICY_RETEST_ON_REPLICAS=true): %q, last attempt %+v; want rev-deny with its own tests run", st.Revision, at)
	}
	p := &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "u1", WorkspaceID: "ws-a", TaskID: "t-fanout"}
	_, _ = b.app.Pipeline.CallTool(context.Background(), p, &gateway.CallRequest{Name: "workspace.info", Arguments: map[string]any{}}) // denied: the audit row tells
	evs, err := b.app.Store.ListAuditEvents(context.Background(), gateway.AuditFilter{WorkspaceID: "ws-a", Limit: 1})
	if err != nil || len(evs) != 1 {
		t.Fatalf("audit rows: %v %v", evs, err)
	}
	if evs[0].PolicyRevision != "rev-deny" || evs[0].Status != gateway.AuditDenied {
		t.Errorf("B's call: audit row revision %q status %q, want rev-deny, denied", evs[0].PolicyRevision, evs[0].Status)
	}

	// B's folder now holds a bundle whose own test fails.
	f.link("a", allow)
	f.link("b", broken)
	if body := a.admin(t, http.MethodPost, "/policy/reload", ""); !strings.Contains(string(body), `"outcome":"live"`) {
		t.Fatalf("reload through A: %s", body)
	}
	st, ok = b.waitPolicy(t, time.Second, func(st policystatus.Status) bool { return st.LastFailure != nil })
	if !ok || st.Revision != "rev-deny" || !strings.Contains(st.LastFailure.Error, "test_broken") || st.LastFailure.Trigger != "replica" {
		t.Fatalf("B's status %+v (last failure %+v): want rev-deny kept and the failing test shown", st, st.LastFailure)
	}
	ready := fetchBody(t, b.url+"/readyz")
	if !strings.Contains(ready, `"supacloud":{"refused_revision":"rev-allow","revision":"rev-deny"}`) {
		t.Errorf("B's /readyz %s: want the live revision and the refused one", ready)
	}
	if n, ok := metricValue(fetchBody(t, b.url+"/metrics"), `mcpgate_policy_reload_failures_total{surface="supacloud"}`); !ok || n != 1 {
		t.Errorf("B's reload failures %d (found %v), want 1", n, ok)
	}
	if got := a.policyStatus(t).Revision; got != "rev-allow" {
		t.Errorf("A serves %q, want rev-allow", got)
	}

	// B's folder is fixed while B does not listen: the reload asked for
	// meanwhile is lost, so B checks its folder once it listens again.
	f.link("b", allow)
	pg := a.app.Store.(*postgres.Store)
	var schema string
	if err := pg.DB().GetContext(context.Background(), &schema, `SELECT current_schema()`); err != nil {
		t.Fatal(err)
	}
	if _, err := pg.DB().ExecContext(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE application_name = $1`, postgres.ListenerName(schema)); err != nil {
		t.Fatal(err)
	}
	st, ok = b.waitPolicy(t, 5*time.Second, func(st policystatus.Status) bool { return st.Revision == "rev-allow" })
	if !ok || st.LastAttempt.Trigger != "resync" {
		t.Fatalf("B's status %+v (last attempt %+v) 5 s after its listener was cut: want rev-allow, by the resync check", st, st.LastAttempt)
	}
}

// fetchBody fetches url and returns the body.
func fetchBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestReloadReachesEverySurfaceAndExplain: one reload through the admin
// API reloads the cc_server surface's bundle as well as SupaCloud's (both
// from MCPGATE_POLICY_DIR), and POST /admin/v1/explain decides with the
// live engine: its decision names the live revision, before and after,
// the revision the audit row of the same call names.
func TestReloadReachesEverySurfaceAndExplain(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "policy", "surfaces"))); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"MCPGATE_DATABASE_URL":    "sqlite:" + filepath.Join(t.TempDir(), "surfaces.db"),
		"MCPGATE_JWT_SECRET":      "policy-test-secret-0123456789abcdef0123",
		"MCPGATE_ADMIN_TOKEN":     "policy-admin-token",
		"MCPGATE_POLICY_DIR":      dir,
		"MCPGATE_CCSERVER_LISTEN": "127.0.0.1:0",
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
	ctx, s := context.Background(), app.Store
	for _, err := range []error{
		s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-a", Name: "A"}),
		s.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: gateway.RoleMember}),
		s.PutProfile(ctx, &gateway.Profile{WorkspaceID: "ws-a", ID: "p-1", Name: "reader", Allowlist: []string{"supacloud.read.*"}}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	explained := func() string {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, "/admin/v1/explain",
			strings.NewReader(`{"workspace":"ws-a","task":"t-1","profile":"p-1","user":"u1","tool":"workspace.info"}`))
		req.Header.Set("Authorization", "Bearer policy-admin-token")
		rec := httptest.NewRecorder()
		app.Server.ServeHTTP(rec, req)
		var out struct{ Decision gateway.Decision }
		if err := json.Unmarshal(rec.Body.Bytes(), &out); rec.Code != http.StatusOK || err != nil {
			t.Fatalf("explain: %d %s", rec.Code, rec.Body)
		}
		// The same call, made: its audit row names the revision that
		// decided it, which the explanation must name too.
		p := &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "u1", WorkspaceID: "ws-a", TaskID: "t-1", ProfileID: "p-1"}
		_, _ = app.Pipeline.CallTool(ctx, p, &gateway.CallRequest{Name: "workspace.info", Arguments: map[string]any{}})
		evs, err := s.ListAuditEvents(ctx, gateway.AuditFilter{WorkspaceID: "ws-a", TaskID: "t-1", Limit: 1})
		if err != nil || len(evs) != 1 {
			t.Fatalf("audit rows of the call: %v %v", evs, err)
		}
		if evs[0].PolicyRevision != out.Decision.Revision {
			t.Errorf("explained revision %q, the audit row of the same call names %q", out.Decision.Revision, evs[0].PolicyRevision)
		}
		return out.Decision.Revision
	}
	if app.CC == nil || app.CC.Policy.Status().Revision != "rev-1" {
		t.Fatalf("cc_server surface %+v: want it on, at rev-1", app.CC)
	}
	if got := explained(); got != "rev-1" {
		t.Errorf("explained decision names revision %q, want the live rev-1", got)
	}
	if err := os.WriteFile(filepath.Join(dir, ".manifest"), []byte(`{"revision": "rev-2"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, body := request(t, app, http.MethodPost, "/admin/v1/policy/reload"); code != http.StatusOK || !strings.Contains(body, `"outcome":"live"`) {
		t.Fatalf("reload: %d %s", code, body)
	}
	if st := app.CC.Policy.Status(); st.Revision != "rev-2" || app.CC.Policy.Engine().Revision() != "rev-2" {
		t.Errorf("cc_server surface after the reload: %+v, want rev-2 live", st)
	}
	if got := explained(); got != "rev-2" {
		t.Errorf("explained decision after the reload names revision %q, want the live rev-2", got)
	}
	if _, ready := request(t, app, http.MethodGet, "/readyz"); !strings.Contains(ready, `"ccserver":{"revision":"rev-2"}`) || !strings.Contains(ready, `"supacloud":{"revision":"rev-2"}`) {
		t.Errorf("/readyz %s: want both surfaces at rev-2", ready)
	}
}

// TestForgedVouchRunsTheTests: anyone who may connect to the database can
// send on mcpgate_policy. An announcement naming the content hash of the
// bytes in B's folder, as a replica announces bytes whose tests passed
// there, but not sealed with the replicas' shared key, is no vouch: B
// runs the folder's tests, refuses its failing bundle and keeps its live
// revision.
func TestForgedVouchRunsTheTests(t *testing.T) {
	f := policyFolders{t: t, root: t.TempDir()}
	allow, broken := f.bundle("allow", "allow", false), f.bundle("deny-broken", "deny", true)
	dir := f.link("b", allow)
	rs := openReplicas(t, 1, func(_ int, vars map[string]string) { vars["MCPGATE_POLICY_DIR"] = dir })
	b := rs[0]
	f.link("b", broken) // no watcher sees a swapped link
	content, err := policy.ContentHash(os.DirFS(broken))
	if err != nil {
		t.Fatal(err)
	}
	db := b.app.Store.(*postgres.Store).DB()
	if _, err := db.ExecContext(context.Background(), `SELECT pg_notify('mcpgate_policy', json_build_object('s', current_schema(), 'u', 'supacloud',
 'r', 'rev-deny', 'o', 'forged', 't', $1::text, 'n', 1, 'm', 'forged')::text)`, content); err != nil {
		t.Fatal(err)
	}
	st, ok := b.waitPolicy(t, 5*time.Second, func(st policystatus.Status) bool {
		return st.LastAttempt != nil && st.LastAttempt.Trigger == policy.TriggerReplica
	})
	if !ok {
		t.Fatalf("B never acted on the announcement: %+v", st.LastAttempt)
	}
	if st.Revision != "rev-allow" || st.LastAttempt.Outcome != policystatus.Refused || st.LastAttempt.TestsFrom == policystatus.TestsReplica {
		t.Fatalf("B after a forged vouch for its failing folder: live %q, attempt %+v; want rev-allow kept, the candidate tested here and refused",
			st.Revision, st.LastAttempt)
	}
}
