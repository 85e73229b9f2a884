package console_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpgate/mcpgate/gateway/admin"
)

// chromiumPath finds a Chromium to drive: $MCPGATE_CHROMIUM, else the
// usual binary names on PATH (Debian's chromium package installs
// /usr/bin/chromium).
func chromiumPath() (string, []string) {
	names := []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}
	if p := os.Getenv("MCPGATE_CHROMIUM"); p != "" {
		names = append([]string{p}, names...)
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, names
		}
	}
	return "", names
}

// screenshots is the folder the browser test writes its page images to:
// $MCPGATE_SCREENSHOTS, else a temporary folder of the test.
func screenshots(t *testing.T) string {
	dir := os.Getenv("MCPGATE_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots of each console page: %s", dir)
	return dir
}

// TestBrowser drives a real headless Chromium through the console: sign
// in, create an API token, see its value once, reload and see it gone,
// revoke it, and set (then move) the workspace default profile.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test starts Chromium; skipped with -short")
	}
	bin, tried := chromiumPath()
	if bin == "" {
		t.Skipf("no Chromium found (tried %s): install Debian's chromium package (apt-get install -y chromium) or set MCPGATE_CHROMIUM to its path", strings.Join(tried, ", "))
	}
	g := newGateway(t)
	g.api(t, http.MethodPut, "/workspaces/ws-1/profiles/p-reader", `{"name":"Reader","allowlist":["supacloud.read.*"]}`, http.StatusOK)
	g.api(t, http.MethodPut, "/workspaces/ws-1/profiles/p-ops", `{"name":"Ops","allowlist":["supacloud.read.*","supacloud.ops.*"]}`, http.StatusOK)
	dir := screenshots(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	shot := func(name string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			png, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return chromedp.Void{}, err
			}
			return chromedp.Void{}, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
		}
	}
	run := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	read := func(step string, a chromedp.Action[string]) string {
		t.Helper()
		v, err := chromedp.Run(ctx, a)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return v
	}
	base := g.srv.URL + "/console"

	// Sign in, by keyboard: type the token, Enter submits.
	run("sign in",
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.ID("token")),
		shot("01-sign-in"),
		chromedp.SendKeys(chromedp.ID("token"), adminToken+"\r"),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/console/workspaces/ws-1"]`)),
		shot("02-workspaces"),
		chromedp.Click(chromedp.CSS(`a[href="/console/workspaces/ws-1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/console/workspaces/ws-1/tokens"]`)),
		shot("03-workspace-members"),
	)
	html := read("read the workspace page", chromedp.OuterHTML(chromedp.CSS("html")))
	if strings.Contains(html, adminToken) || !strings.Contains(html, "alice") {
		t.Fatalf("workspace page: token shown or members missing\n%s", html)
	}

	// Create a token: the scope box toggled with the space bar, Enter in the label submits.
	run("create a token",
		chromedp.Click(chromedp.CSS(`a[href="/console/workspaces/ws-1/tokens"]`)),
		chromedp.WaitVisible(chromedp.ID("label")),
		shot("04-api-tokens"),
		chromedp.Focus(chromedp.ID("scope-0")),
		chromedp.KeyEvent(" "),
		chromedp.SendKeys(chromedp.ID("label"), "scheduler\r"),
		chromedp.WaitVisible(chromedp.ID("created-value")),
		shot("05-token-created-once"),
	)
	value := read("read the token value", chromedp.Value(chromedp.ID("created-value")))
	if !strings.HasPrefix(value, admin.TokenPrefix) {
		t.Fatalf("the created token's value is %q; want scmt_…", value)
	}
	fp := admin.Fingerprint(value)
	if list := g.tokens(t, "ws-1"); len(list) != 1 || list[0]["fingerprint"] != fp {
		t.Fatalf("tokens after creating in the browser = %v; want one with fingerprint %s", list, fp)
	}

	// Reload: the value is gone, the fingerprint stays.
	run("reload",
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.ID("token-"+fp)),
		shot("06-after-reload"),
	)
	after := read("read the reloaded page", chromedp.OuterHTML(chromedp.CSS("html")))
	created, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#created-value")).map(e => e.value)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != 0 || strings.Contains(after, value) {
		t.Fatal("the token value is still shown after a reload")
	}
	if !strings.Contains(after, fp) {
		t.Fatalf("the token list lacks fingerprint %s after reload", fp)
	}

	// Revoke it by its fingerprint.
	run("revoke",
		chromedp.Click(chromedp.CSS(`#token-`+fp+` button`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
		shot("07-token-revoked"),
	)
	status := read("read the token status", chromedp.Text(chromedp.CSS(`#token-`+fp+` td.status`)))
	if status != "revoked" {
		t.Errorf("status cell after revoking = %q; want revoked", status)
	}
	if list := g.tokens(t, "ws-1"); list[0]["status"] != "revoked" {
		t.Errorf("the admin API lists the token as %v after revoking in the browser", list[0]["status"])
	}

	// Limits: an empty field keeps the default.
	run("limits",
		chromedp.SendKeys(chromedp.ID("reads"), "75"),
		chromedp.Submit(chromedp.ID("reads")),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
		shot("08-external-limits"),
	)
	if got := g.api(t, http.MethodGet, "/workspaces/ws-1/external-limits", "", http.StatusOK); !strings.Contains(got, `"reads_per_tool_hourly":75,"ops_per_token_hourly":null`) {
		t.Errorf("limits after the browser saved 75 and an empty field: %s", got)
	}

	// Set a default profile, then another: one per workspace.
	run("set default profile",
		chromedp.Navigate(base+"/workspaces/ws-1/profiles"),
		chromedp.WaitVisible(chromedp.ID("default-profile")),
		shot("09-profiles"),
		chromedp.Click(chromedp.CSS(`button[aria-label="Set p-ops as workspace default"]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
		shot("10-default-profile-set"),
	)
	def := read("read the default", chromedp.Text(chromedp.ID("default-profile")))
	if def != "p-ops" {
		t.Errorf("default shown after setting p-ops = %q", def)
	}
	run("move the default",
		chromedp.Navigate(base+"/workspaces/ws-1/profiles/p-reader"),
		chromedp.WaitVisible(chromedp.ID("name")),
		shot("11-profile-edit"),
		chromedp.Click(`//button[text()="Set as workspace default"]`),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	)
	def = read("read the default", chromedp.Text(chromedp.ID("default-profile")))
	if def != "p-reader" {
		t.Errorf("default shown after setting p-reader = %q", def)
	}
	if got := g.api(t, http.MethodGet, "/workspaces/ws-1/profiles/p-ops", "", http.StatusOK); !strings.Contains(got, `"is_workspace_default":false`) {
		t.Errorf("p-ops is still the default after p-reader was set: %s", got)
	}

	// A bad profile: the admin API's message next to the field, nothing stored.
	run("bad profile",
		chromedp.Navigate(base+"/workspaces/ws-1/profiles/new"),
		chromedp.WaitVisible(chromedp.ID("id")),
		chromedp.SendKeys(chromedp.ID("id"), "p-bad"),
		chromedp.SendKeys(chromedp.ID("name"), "Bad"),
		chromedp.SendKeys(chromedp.ID("exact"), "has space"),
		chromedp.Submit(chromedp.ID("name")),
		chromedp.WaitVisible(chromedp.ID("allowlist-error")),
		shot("12-profile-bad-input"),
	)
	msg := read("read the message", chromedp.Text(chromedp.ID("allowlist-error")))
	if !strings.HasPrefix(msg, `field "allowlist" entry 0 ("has space")`) {
		t.Errorf("message next to the allowlist = %q", msg)
	}
	g.api(t, http.MethodGet, "/workspaces/ws-1/profiles/p-bad", "", http.StatusNotFound)

	run("sign out",
		chromedp.Click(`//button[text()="Sign out"]`),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.Navigate(base+"/workspaces"),
		chromedp.WaitVisible(chromedp.ID("token")),
	)
}
