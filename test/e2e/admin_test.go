package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

func adminPut(t *testing.T, g *gatewayUnderTest, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, g.srv.URL+"/admin/v1"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer e2e-admin-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// TestAdminRefusesGrantsThatGrantNothing: through the real wiring, an
// allowlist entry the bundle does not define is a 400 that names it and the
// profile stays as it was; real entries (from the bundle's data and the
// catalog) are accepted.
func TestAdminRefusesGrantsThatGrantNothing(t *testing.T) {
	g := startGateway(t, "sqlite:"+t.TempDir()+"/adm.db", nil)
	seedFixtures(t, g)
	status, body := adminPut(t, g, "/workspaces/ws-a/profiles/reader", `{"name":"reader","allowlist":["supacloud.raed.*"]}`)
	if status != http.StatusBadRequest || !strings.Contains(body, "supacloud.raed.*") {
		t.Fatalf("typo entry: %d %s, want 400 naming it", status, body)
	}
	c, err := g.app.Store.LoadCaller(context.Background(), &gateway.Principal{Kind: gateway.PrincipalAgent, WorkspaceID: "ws-a", Subject: "mia", TaskID: "task-ws-a", ProfileID: "reader"})
	if err != nil || c.Profile == nil || len(c.Profile.Allowlist) != 1 || c.Profile.Allowlist[0] != "supacloud.read.*" {
		t.Fatalf("profile changed by a refused PUT: %+v %v", c.Profile, err)
	}
	for _, entry := range []string{"supacloud.ops.*", "supacloud.full", "supacloud.conversation.*", "project.get", "supacloud.script.run"} {
		if status, body := adminPut(t, g, "/workspaces/ws-a/profiles/p2", `{"name":"p2","allowlist":["`+entry+`"]}`); status != http.StatusOK {
			t.Errorf("entry %s refused: %d %s", entry, status, body)
		}
	}
}
