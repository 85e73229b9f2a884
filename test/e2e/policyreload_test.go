package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// policyBundles are the reload tests' bundles: "allow" lets every call
// through, "deny" none (gateway/server/testdata/policy).
var policyBundles = filepath.Join("..", "..", "gateway", "server", "testdata", "policy")

// putBundle makes dir hold bundle name, under revision rev.
func putBundle(t *testing.T, dir, name, rev string) {
	t.Helper()
	for _, n := range []string{"supacloud", ".manifest"} {
		must(t, os.RemoveAll(filepath.Join(dir, n)))
	}
	must(t, os.CopyFS(dir, os.DirFS(filepath.Join(policyBundles, name))))
	must(t, os.WriteFile(filepath.Join(dir, ".manifest"), []byte(`{"revision":"`+rev+`"}`), 0o644))
}

// reload asks the admin API to reload the policy folder.
func reload(t *testing.T, url string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/admin/v1/policy/reload", nil)
	req.Header.Set("Authorization", "Bearer e2e-admin-token")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /admin/v1/policy/reload: %d", resp.StatusCode)
	}
}

// TestToolListChangedOnPolicySwap: a new policy revision that changes
// what a session may see reaches its open stream as
// notifications/tools/list_changed, through the same mechanism as an
// admin change; a new revision that changes nothing visible sends none.
func TestToolListChangedOnPolicySwap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	putBundle(t, dir, "allow", "rev-1")
	g := startGateway(t, "sqlite:"+t.TempDir()+"/swap.db", map[string]string{"MCPGATE_POLICY_DIR": dir})
	sw := &streamWatch{next: g.app.Server, opened: make(chan struct{}, 8)}
	srv := httptest.NewServer(sw)
	t.Cleanup(srv.Close)
	s, ctx := g.app.Store, context.Background()
	must(t, s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-p", Name: "ws-p", Slug: "ws-p"}))
	n := connectStreaming(t, srv.URL, sw.opened, g.token(t, "ws-p", "alice", "task-1", ""))
	if !listed(t, n.cs)["workspace.info"] {
		t.Fatal("workspace.info not listed under the allowing bundle")
	}

	putBundle(t, dir, "allow", "rev-2") // another revision, the same tools
	reload(t, srv.URL)
	if n.wait(500 * time.Millisecond) {
		t.Fatal("notified although the new revision shows the same tools")
	}

	putBundle(t, dir, "deny", "rev-3")
	reload(t, srv.URL)
	if !n.wait(5 * time.Second) {
		t.Fatal("the session was not notified of the revision that hides its tools")
	}
	if got := listed(t, n.cs); len(got) != 0 {
		t.Fatalf("tools/list after the swap: %v, want none", got)
	}
}
