package main

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// openDevApp opens, in a fresh current folder, the gateway serve --dev
// would run, without its listeners, and returns it with its defaults.
func openDevApp(t *testing.T) (*devDefaults, *server.App) {
	t.Helper()
	t.Chdir(t.TempDir())
	d := newDevDefaults(func(string) string { return "" })
	cfg, err := config.Load(d.getenv)
	if err != nil {
		t.Fatal(err)
	}
	app, err := server.Open(context.Background(), cfg, zap.NewNop(), "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	return d, app
}

// Issue 30, point 4: the dev demo tells one story. workspace.info on the
// seeded workspace says what the store (and so the console) says of it:
// its name, slug, plan and member count.
func TestDevSeedTellsOneStory(t *testing.T) {
	ctx := context.Background()
	d, app := openDevApp(t)
	if err := d.seed(ctx, app, io.Discard, "http://127.0.0.1:8080"); err != nil {
		t.Fatal(err)
	}
	ws, err := app.Store.Workspace(ctx, devWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	members, err := app.Store.ListMembers(ctx, devWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	res, err := app.Pipeline.Adapter.CallTool(ctx, gateway.ToolCall{WorkspaceID: devWorkspace, Tool: "workspace.info"})
	if err != nil {
		t.Fatal(err)
	}
	info := res.StructuredContent
	if info["name"] != ws.Name || info["slug"] != ws.Slug || info["plan_tier"] != ws.OrgPlan || info["member_count"] != float64(len(members)) {
		t.Errorf("workspace.info of %s = name %v, slug %v, plan %v, %v members; the store says %q, %q, %q, %d members",
			devWorkspace, info["name"], info["slug"], info["plan_tier"], info["member_count"], ws.Name, ws.Slug, ws.OrgPlan, len(members))
	}
}

// Issue 30, point 4: the reader token's example is ready to paste: run as
// printed, it opens a session and makes a tools/call that the policy
// refuses (a call, as an Inspector would show it, not a listing).
func TestDevReaderExampleShowsADeniedCall(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	ctx := context.Background()
	d, app := openDevApp(t)
	srv := httptest.NewServer(app.Server)
	defer srv.Close()
	var out bytes.Buffer
	if err := d.seed(ctx, app, &out, srv.URL); err != nil {
		t.Fatal(err)
	}
	banner := out.String()
	start := strings.Index(banner, "export MCPGATE_READER_TOKEN=")
	if start < 0 {
		t.Fatalf("the banner has no reader token example:\n%s", banner)
	}
	end := strings.Index(banner[start:], "; echo\n")
	if end < 0 {
		t.Fatalf("the reader example has no tools/call line:\n%s", banner[start:])
	}
	example := banner[start : start+end+len("; echo\n")]
	if !strings.Contains(example, `"method":"tools/call"`) {
		t.Errorf("the reader example makes no tools/call:\n%s", example)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got, err := exec.CommandContext(cctx, "bash", "-c", example).CombinedOutput()
	if err != nil {
		t.Fatalf("the reader example, pasted into bash: %v\n%s", err, got)
	}
	if !strings.Contains(string(got), `"id":2`) || !strings.Contains(string(got), "io.mcpgate/denial") {
		t.Errorf("the reader example's call is not refused by the policy:\n%s", got)
	}
}
