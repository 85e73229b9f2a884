package server_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// TestCCServerCallsPerMinuteFollowsThePolicy: the cc_server surface's
// per-principal cap is data.ccserver.limits.calls_per_minute of the live
// bundle, read again after each reload, not only at start; with
// MCPGATE_CCSERVER_CALLS_PER_MINUTE set, the variable wins throughout.
func TestCCServerCallsPerMinuteFollowsThePolicy(t *testing.T) {
	for _, fixed := range []string{"", "7"} {
		t.Run("env="+fixed, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "policy", "surfaces"))); err != nil {
				t.Fatal(err)
			}
			limits := filepath.Join(dir, "ccserver", "limits.rego")
			setLimit := func(n string) {
				if err := os.WriteFile(limits, []byte("package ccserver\n\nlimits := {\"calls_per_minute\": "+n+"}\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			setLimit("2")
			vars := map[string]string{
				"MCPGATE_DATABASE_URL":              "sqlite:" + filepath.Join(t.TempDir(), "cclimits.db"),
				"MCPGATE_JWT_SECRET":                "policy-test-secret-0123456789abcdef0123",
				"MCPGATE_ADMIN_TOKEN":               "policy-admin-token",
				"MCPGATE_POLICY_DIR":                dir,
				"MCPGATE_CCSERVER_LISTEN":           "127.0.0.1:0",
				"MCPGATE_CCSERVER_CALLS_PER_MINUTE": fixed,
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
			capOf := func() int64 {
				t.Helper()
				plan, err := app.CC.Pipeline.RateLimits.Plan(ratelimit.Subject{Surface: gateway.SurfaceCCServer, Actor: "u1", WorkspaceID: "ws-a"}, time.Now())
				if err != nil || len(plan.Slots) != 1 {
					t.Fatalf("plan %+v %v", plan, err)
				}
				return plan.Slots[0].Bucket.Rate.Limit
			}
			want := func(policy int64) int64 {
				if fixed != "" {
					return 7
				}
				return policy
			}
			if got := capOf(); got != want(2) {
				t.Errorf("at start: %d calls per minute, want %d", got, want(2))
			}
			setLimit("3")
			if err := os.WriteFile(filepath.Join(dir, ".manifest"), []byte(`{"revision": "rev-2"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			if code, body := request(t, app, http.MethodPost, "/admin/v1/policy/reload"); code != http.StatusOK || !strings.Contains(body, `"outcome":"live"`) {
				t.Fatalf("reload: %d %s", code, body)
			}
			if got := capOf(); got != want(3) {
				t.Errorf("after a reload to calls_per_minute 3: %d, want %d", got, want(3))
			}
		})
	}
}
