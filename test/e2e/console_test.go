package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
	"github.com/mcpgate/mcpgate/gateway/auth"
)

// The admin console (/console) over the whole gateway: the real App on
// SQLite, headless Chromium (Debian's chromium package) doing what an
// operator does, and MCP clients on /api/mcp, /mcp and cc_server seeing
// the effect.

// browser starts headless Chromium ($MCPGATE_CHROMIUM, else chromium on
// PATH) and returns its context; the test is skipped without one.
func browser(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("the console test starts Chromium; skipped with -short")
	}
	bin := os.Getenv("MCPGATE_CHROMIUM")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("chromium"); err != nil {
			t.Skip("no Chromium found: install Debian's chromium package (apt-get install -y chromium) or set MCPGATE_CHROMIUM to its path")
		}
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// consoleShots is the folder the test writes page images to:
// $MCPGATE_SCREENSHOTS/e2e-console, else a temporary folder of the test.
func consoleShots(t *testing.T) string {
	dir := t.TempDir()
	if d := os.Getenv("MCPGATE_SCREENSHOTS"); d != "" {
		dir = filepath.Join(d, "e2e-console")
	}
	must(t, os.MkdirAll(dir, 0o755))
	t.Logf("screenshots of each console page over the whole gateway: %s", dir)
	return dir
}

// submits runs a, which submits a form, and returns once the browser shows
// the page that answered (a WaitVisible right after could otherwise find
// its element on the page being left).
func submits(a chromedp.Action[chromedp.Void]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		if _, err := chromedp.Evaluate[bool](`window.mcpgateLeaving = true`)(ctx, tg); err != nil {
			return chromedp.Void{}, err
		}
		if _, err := a(ctx, tg); err != nil {
			return chromedp.Void{}, err
		}
		for {
			if done, err := chromedp.Evaluate[bool](`window.mcpgateLeaving !== true && document.readyState === "complete"`)(ctx, tg); err == nil && done {
				return chromedp.Void{}, nil
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// TestConsoleOverWholeGateway: revoke an API token in the console and an
// open /api/mcp session gets 401; set a workspace default profile and a
// profile-less agent session's tools change; approve a pending cc_server
// approval and the waiting call runs, with the console naming who decided.
// Along the way it shows the permission chains, audit events, the
// playground and the policy status of the real App, with a screenshot of
// each page.
func TestConsoleOverWholeGateway(t *testing.T) {
	// Not parallel: Chromium's own processes and the steps' deadlines
	// want the machine to themselves; run alone, before the parallel
	// tests resume.
	ctx := browser(t)
	g := startCCGateway(t, "sqlite:"+filepath.Join(t.TempDir(), "console.db"))
	s, bg := g.app.Store, context.Background()
	must(t, s.PutMember(bg, &gateway.Member{WorkspaceID: "ws-acme", UserID: "alice", Role: gateway.RoleOwner, SeatType: "developer"}))
	must(t, s.PutTask(bg, &gateway.Task{WorkspaceID: "ws-acme", ID: "task-1", Status: gateway.TaskRunning}))
	adminPUT(t, g.srv.URL, "/workspaces/ws-acme/profiles/ops", `{"name":"Ops","allowlist":["supacloud.read.*","supacloud.ops.*"]}`)
	adminPUT(t, g.srv.URL, "/workspaces/ws-acme/permission-overrides", `{"workspace.budget.view":false}`)
	dir := consoleShots(t)
	base := g.srv.URL + "/console"

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

	run("sign in",
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("operator"), "grace"),
		chromedp.SendKeys(chromedp.ID("token"), "e2e-admin-token"),
		submits(chromedp.Submit(chromedp.ID("token"))),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/console/workspaces/ws-acme"]`)),
		shot("01-workspaces"),
		chromedp.Navigate(base+"/workspaces/ws-acme"),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/console/workspaces/ws-acme/tokens"]`)),
		shot("02-workspace"),
	)

	// 1. Revoke an API token while a /api/mcp session is open on it.
	tok, fp := createToken(t, g.gatewayUnderTest, "ws-acme", "nightly", "mcp:read")
	open := g.rawAt(t, apiPath, tok)
	if r := open.post(callBody("run.list", `{}`)); r.status != http.StatusOK || r.Error != nil {
		t.Fatalf("/api/mcp before revoking: %d %+v", r.status, r.Error)
	}
	run("revoke in the console",
		chromedp.Navigate(base+"/workspaces/ws-acme/tokens"),
		chromedp.WaitVisible(chromedp.ID("token-"+fp)),
		shot("03-tokens"),
		submits(chromedp.Click(chromedp.CSS(`#token-`+fp+` button`))),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
		shot("04-token-revoked"),
	)
	if r := open.post(callBody("run.list", `{}`)); r.status != http.StatusUnauthorized || r.Error == nil || !contains(r.Error.Message, "revoked") {
		t.Fatalf("/api/mcp after revoking in the console: %d %+v; want 401 saying revoked", r.status, r.Error)
	}

	// 2. A profile-less agent session: the read-only fallback, then the
	// workspace default the console sets.
	agent := g.connect(t, g.token(t, "ws-acme", "alice", "task-1", ""))
	const opsTool = "schedule.resume"
	if tools := listed(t, agent); tools[opsTool] || !tools["projects.list"] {
		t.Fatalf("profile-less session before a default: %s listed %v, projects.list %v; want the read-only fallback", opsTool, tools[opsTool], tools["projects.list"])
	}
	run("set the default profile",
		chromedp.Navigate(base+"/workspaces/ws-acme/profiles"),
		chromedp.WaitVisible(chromedp.ID("default-profile")),
		shot("05-profiles"),
		submits(chromedp.Click(chromedp.CSS(`button[aria-label="Set ops as workspace default"]`))),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
		shot("06-default-profile-set"),
	)
	if tools := listed(t, agent); !tools[opsTool] {
		t.Fatalf("profile-less session after the console set ops as default: %s not listed", opsTool)
	}

	// 3. A cc_server call waiting for approval, approved in the console.
	// No approvals stream is open: the operator counts as an approver
	// because the console's approvals page is open (it reloads itself
	// every 5 s and renews the presence each time).
	run("open the approvals inbox",
		chromedp.Navigate(base+"/approvals"),
		chromedp.WaitVisible(chromedp.ID("no-pending")),
	)
	ada := g.ccConnect(t, g.ccToken(t, auth.CCClaims{Subject: "ada"}), false)
	waiting := callAsync(ada, "create_ticket", map[string]any{"workspace_id": "ws-acme", "title": "From the console"})
	var ap approvals.Approval
	for deadline := time.Now().Add(10 * time.Second); ap.ID == ""; time.Sleep(50 * time.Millisecond) {
		select {
		case r := <-waiting:
			t.Fatalf("the call needing approval returned before anyone approved it (refused with only the console page open?): %v %q", r.err, text(r.res))
		default:
		}
		for _, a := range g.approvals(t, approvals.StatusPending) {
			if a.Tool == "create_ticket" {
				ap = a
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no pending create_ticket approval within 10 s")
		}
	}
	run("approve in the console",
		// The page shows the new approval after its own refresh, no navigation.
		chromedp.WaitVisible(chromedp.ID("approval-"+ap.ID)),
		shot("07-approvals-pending"),
		submits(chromedp.Click(chromedp.CSS(`#approval-`+ap.ID+` button[value="approve"]`))),
		chromedp.WaitVisible(chromedp.ID("decided-"+ap.ID)),
		shot("08-approval-decided"),
	)
	select {
	case r := <-waiting:
		if r.err != nil || r.res.IsError {
			t.Fatalf("the approved call: %v %q; want it to run", r.err, text(r.res))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the waiting call did not return after the console approved it")
	}
	if n := ticketsTitled(t, ada, "From the console"); n != 1 {
		t.Errorf("the approved call created %d tickets; want 1", n)
	}
	if by := read("read who decided", chromedp.Text(chromedp.CSS(`#decided-`+ap.ID+` td.decided-by`))); by != "grace" {
		t.Errorf("decided by %q in the console; want grace, the name given at sign-in", by)
	}
	if got := g.approval(t, ap.ID); got.DecidedBy != "grace" {
		t.Errorf("the store records the approval decided by %q; want grace", got.DecidedBy)
	}

	// 4. A human gate of the demo backend: a tool gate no machine may
	// decide pauses a task; the agent is refused, the operator approves it
	// in the console, and the paused task runs again.
	toolGate := gates(t, g.gatewayUnderTest, "ws-acme")["tool"]
	var pausedTask string
	for _, gt := range demoGates(t, g.gatewayUnderTest, "ws-acme") {
		if gt.ID == toolGate {
			pausedTask = gt.TaskID
		}
	}
	if toolGate == "" || pausedTask == "" {
		t.Fatalf("the demo backend of ws-acme has no waiting tool gate on a task (gate %q, task %q)", toolGate, pausedTask)
	}
	if st := demoTaskStatus(t, agent, pausedTask); st != "waiting" {
		t.Fatalf("task %s paused at gate %s is %q; want waiting", pausedTask, toolGate, st)
	}
	res, err := agent.CallTool(bg, &mcp.CallToolParams{Name: "approval.decide", Arguments: map[string]any{"approval_id": toolGate, "decision": "approve"}})
	if msg, refused := refusal(res, err); !refused || !contains(msg, "a person must decide") {
		t.Fatalf("the agent deciding tool gate %s: %v %+v; want refused, a person must decide", toolGate, err, res)
	}
	// The approvals tab counts the workspace's waiting gates; they are
	// decided on the Human gates tab, which never reloads itself.
	run("count the waiting human gates",
		chromedp.Navigate(base+"/approvals"),
		chromedp.WaitVisible(chromedp.ID("gates-waiting-ws-acme")),
	)
	if n := read("read the waiting gates", chromedp.Text(chromedp.CSS(`#gates-waiting-ws-acme .count`))); n == "" || n == "0" {
		t.Errorf("waiting human gates of ws-acme on the approvals tab = %q; want the demo's", n)
	}
	run("approve a human gate in the console",
		submits(chromedp.Click(chromedp.CSS(`nav.tabs a[href="/console/approvals/gates"]`))),
		chromedp.WaitVisible(chromedp.ID("gate-"+toolGate)),
		shot("08a-human-gates-tab"),
		submits(chromedp.Click(chromedp.CSS(`#gate-`+toolGate+` button[value="approve"]`))),
		chromedp.WaitVisible(chromedp.ID("decided-gate-"+toolGate)),
		shot("08b-human-gate-approved"),
	)
	if by := read("read who decided the gate", chromedp.Text(chromedp.CSS(`#decided-gate-`+toolGate+` td.decided-by`))); by != "grace" {
		t.Errorf("gate %s decided by %q in the console; want grace, the name given at sign-in", toolGate, by)
	}
	if st := demoTaskStatus(t, agent, pausedTask); st != "running" {
		t.Errorf("task %s after the console approved its gate: %q; want running again", pausedTask, st)
	}

	// The other pages over the real App.
	run("permissions",
		chromedp.Navigate(base+"/workspaces/ws-acme/permissions"),
		chromedp.WaitVisible(chromedp.ID("member-alice")),
		shot("09-permissions"),
	)
	if by := read("read alice's chain", chromedp.Text(chromedp.CSS(`#member-alice tr[data-key="workspace.budget.view"] td.decided-by`))); by != "workspace_override" {
		t.Errorf("alice's workspace.budget.view decided by %q; want workspace_override (the bundle's explanation)", by)
	}
	// Every key, not only those workspace.info reads: an enterprise-only key
	// is capped by the community edition.
	if by := read("read alice's sso.configure", chromedp.Text(chromedp.CSS(`#member-alice tr[data-key="sso.configure"] td.decided-by`))); by != "edition (capped by the edition)" {
		t.Errorf("alice's sso.configure decided by %q; want the edition cap", by)
	}
	run("audit",
		chromedp.Navigate(base+"/audit?tool=create_ticket"),
		chromedp.WaitVisible(chromedp.ID("audit-events")),
		shot("10-audit"),
	)
	// The table shows approval ids and revisions shortened (it fits a
	// 1280 px window) with the full value on hover (the title).
	if rows := read("read the audit rows", chromedp.OuterHTML(chromedp.CSS(`#audit-events tbody`))); !strings.Contains(rows, `title="`+ap.ID+`"`) || !strings.Contains(rows, `title="`+ap.PolicyRevision+`"`) {
		t.Errorf("audit rows of create_ticket lack the approval %s or revision %s (in full, on hover): %q", ap.ID, ap.PolicyRevision, rows)
	}
	run("playground",
		chromedp.Navigate(base+"/playground"),
		chromedp.WaitVisible(chromedp.ID("p-workspace")),
		chromedp.SendKeys(chromedp.ID("p-workspace"), "ws-acme"),
		chromedp.SendKeys(chromedp.ID("p-task"), "task-1"),
		chromedp.SendKeys(chromedp.ID("p-user"), "alice"),
		chromedp.SendKeys(chromedp.ID("p-tool"), "projects.list"),
		submits(chromedp.Submit(chromedp.ID("p-tool"))),
		chromedp.WaitVisible(chromedp.ID("verdict")),
		shot("11-playground"),
	)
	if v := read("read the verdict", chromedp.Text(chromedp.ID("verdict"))); v != "allowed" {
		t.Errorf("playground verdict for projects.list = %q; want allowed", v)
	}
	run("policy",
		chromedp.Navigate(base+"/policy"),
		chromedp.WaitVisible(chromedp.ID("live-revision")),
		shot("12-policy"),
	)
	if rev := read("read the live revision", chromedp.Text(chromedp.ID("live-revision"))); rev == "" || rev != g.app.Policy.Status().Revision {
		t.Errorf("policy page shows revision %q; the gateway runs %q", rev, g.app.Policy.Status().Revision)
	}
}

// approvals lists the approvals of status through GET /admin/v1/approvals.
func (g *ccGateway) approvals(t *testing.T, status string) []approvals.Approval {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.srv.URL+"/admin/v1/approvals?status="+status, nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer e2e-admin-token")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var out struct {
		Approvals []approvals.Approval `json:"approvals"`
	}
	must(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Approvals
}

// demoGates lists the demo backend's human gates of ws, as the console
// reads them (approvals.HumanGates).
func demoGates(t *testing.T, g *gatewayUnderTest, ws string) []approvals.Gate {
	t.Helper()
	hg, ok := g.app.Pipeline.Adapter.(approvals.HumanGates)
	if !ok {
		t.Fatal("the demo backend keeps no human gates the gateway can show")
	}
	list, err := hg.ListGates(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// demoTaskStatus is the status tasks.get reports for task through cs.
func demoTaskStatus(t *testing.T, cs *mcp.ClientSession, task string) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tasks.get", Arguments: map[string]any{"task_id": task}})
	if err != nil || res.IsError {
		t.Fatalf("tasks.get %s: %v %+v", task, err, res)
	}
	m, _ := res.StructuredContent.(map[string]any)
	st, _ := m["task"].(map[string]any)["status"].(string)
	return st
}
