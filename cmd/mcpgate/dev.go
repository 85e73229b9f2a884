package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mcpgate/mcpgate/adapters/demo"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
	"github.com/mcpgate/mcpgate/tools"
)

// devDefaults fills the variables `serve --dev` needs when the environment
// leaves them unset: generated keys, console logs, the embedded store.
type devDefaults struct {
	base       func(string) string
	generated  map[string]string
	adminToken string
}

// devSecretsFile keeps the keys `serve --dev` generated, so that tokens it
// printed keep working after a restart (and the dev database and its keys
// stay together). It is created with mode 0600 and ignored by git.
const devSecretsFile = ".mcpgate-dev-secrets.json"

func newDevDefaults(base func(string) string) *devDefaults {
	secrets := loadDevSecrets(devSecretsFile)
	return &devDefaults{base: base, generated: map[string]string{
		"MCPGATE_JWT_SECRET":                secrets["MCPGATE_JWT_SECRET"],
		"MCPGATE_ADMIN_TOKEN":               secrets["MCPGATE_ADMIN_TOKEN"],
		"SUPACLOUD_MCP_CONFIRMATION_SECRET": secrets["SUPACLOUD_MCP_CONFIRMATION_SECRET"],
		"MCPGATE_SESSION_SECRET":            secrets["MCPGATE_SESSION_SECRET"],
		"MCPGATE_LOG_FORMAT":                "console",
		"MCPGATE_DATABASE_URL":              "sqlite:mcpgate-dev.db",
		"MCPGATE_CCSERVER_LISTEN":           config.DevCCServerListen,
	}}
}

// loadDevSecrets reads the dev keys from path, generating and saving any
// that are missing. A file that cannot be read or written only costs the
// persistence: fresh keys are used for this run.
func loadDevSecrets(path string) map[string]string {
	secrets := map[string]string{}
	if raw, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(raw, &secrets)
	}
	fresh := map[string]func() string{
		"MCPGATE_JWT_SECRET":                func() string { return randomHex(32) },
		"MCPGATE_ADMIN_TOKEN":               func() string { return "dev-admin-" + randomHex(12) },
		"SUPACLOUD_MCP_CONFIRMATION_SECRET": func() string { return randomHex(32) },
		"MCPGATE_SESSION_SECRET":            func() string { return randomHex(32) },
	}
	changed := false
	for k, gen := range fresh {
		if secrets[k] == "" {
			secrets[k], changed = gen(), true
		}
	}
	if changed {
		if raw, err := json.MarshalIndent(secrets, "", "  "); err == nil {
			_ = os.WriteFile(path, raw, 0o600)
		}
	}
	return secrets
}

func (d *devDefaults) getenv(name string) string {
	if v := d.base(name); v != "" {
		return v
	}
	if name == "MCPGATE_JWT_SECRET" && d.base("MCPGATE_JWT_PUBLIC_KEY_FILE") != "" {
		return ""
	}
	return d.generated[name]
}

// The demo workspace `serve --dev` creates (or refreshes) at start.
const (
	devWorkspace = "ws-demo"
	devUser      = "alice"
	devTask      = "task-1"
	devProfile   = "ops-bot"
	// devUpstreamProfile grants exactly the tools an upstream added to the
	// catalog, by name, so its tools/list is short: the upstream's tools
	// plus the always-on baseline.
	devUpstreamProfile = "upstream"
)

// seed creates the demo workspace, members, profiles and task, then prints
// the URL, a dev agent token and a copy-paste example.
func (d *devDefaults) seed(ctx context.Context, app *server.App, out io.Writer, url string) error {
	s := app.Store
	steps := []func() error{
		func() error {
			return s.PutOrgPlan(ctx, &gateway.OrgPlan{Name: "team", Permissions: gateway.Permissions{"workspace.budget.view": true}})
		},
		func() error {
			return s.PutSeatType(ctx, &gateway.SeatType{Name: "developer", Permissions: gateway.Permissions{"workspace.plan.view": true}})
		},
		func() error {
			return s.PutWorkspace(ctx, &gateway.Workspace{ID: devWorkspace, Name: "Acme Robotics", Slug: "acme", OrgPlan: "team"})
		},
		func() error {
			return s.PutMember(ctx, &gateway.Member{WorkspaceID: devWorkspace, UserID: devUser, Role: gateway.RoleOwner, SeatType: "developer"})
		},
		func() error {
			return s.PutMember(ctx, &gateway.Member{WorkspaceID: devWorkspace, UserID: "bob", Role: gateway.RoleMember, SeatType: "developer"})
		},
		func() error {
			return s.PutProfile(ctx, &gateway.Profile{WorkspaceID: devWorkspace, ID: devProfile, Name: "Ops bot",
				Allowlist: []string{"supacloud.read.*", "supacloud.ops.*", "supacloud.scaffold.*", "supacloud.deploy.*", "supacloud.script.run"}})
		},
		func() error {
			return s.PutProfile(ctx, &gateway.Profile{WorkspaceID: devWorkspace, ID: "reader", Name: "Reader", Allowlist: []string{"supacloud.read.*"}})
		},
		func() error {
			return s.PutTask(ctx, &gateway.Task{WorkspaceID: devWorkspace, ID: devTask, Status: gateway.TaskRunning})
		},
	}
	if app.Config.UpstreamURL != "" {
		steps = append(steps, func() error { return seedUpstreamProfile(ctx, app) })
	}
	steps = append(steps, func() error { return describeDemoWorkspace(ctx, app, devWorkspace) })
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("seed demo workspace: %w", err)
		}
	}
	reader, err := app.JWT.Issue(auth.AgentClaims{Subject: devUser, WorkspaceID: devWorkspace, TaskID: devTask, ProfileID: "reader"}, 24*time.Hour)
	if err != nil {
		return fmt.Errorf("issue dev token: %w", err)
	}
	defer fmt.Fprintf(out, `A second token, for the read-only profile "reader": a call outside supacloud.read.* is refused.
Copy-paste example (a session of its own, then a call to schedule.pause, which the policy denies).
The MCP Inspector lists only what a token may call, so it shows this token without schedule.pause and will
not call it ("not found on server"): make inspect TOKEN=$MCPGATE_READER_TOKEN INSPECT_URL=%s/mcp lists what it keeps.

export MCPGATE_READER_TOKEN=%s
%s
Tokens stay valid across restarts: the dev keys are kept in %s (delete it, or run make clean, for new ones).

`, url, reader, curlExample(url, "MCPGATE_READER_TOKEN", "R", `{"name":"schedule.pause","arguments":{"schedule_id":"sch-1"}}`), devSecretsFile)
	tok, err := app.JWT.Issue(auth.AgentClaims{Subject: devUser, WorkspaceID: devWorkspace, TaskID: devTask, ProfileID: devProfile}, 24*time.Hour)
	if err != nil {
		return fmt.Errorf("issue dev token: %w", err)
	}
	printDevBanner(out, url, tok, d.getenv("MCPGATE_ADMIN_TOKEN"))
	if err := printCCServerBanner(ctx, app, out); err != nil {
		return err
	}
	if app.Config.UpstreamURL != "" {
		fmt.Fprintf(out, "Upstream %s: tools it adds to the catalog have tier %s; profile %s grants exactly those.\n\n",
			gateway.DisplayURL(app.Config.UpstreamURL), app.Config.UpstreamTier, devUpstreamProfile)
	}
	return nil
}

// describeDemoWorkspace makes the demo backend's workspace.info of id say
// what the store holds of it (name, slug, plan, members), read back from
// the store the seed has just written: one story, told by the console and
// the tools alike. An upstream adapter tells its own.
func describeDemoWorkspace(ctx context.Context, app *server.App, id string) error {
	b, ok := app.Pipeline.Adapter.(*demo.Backend)
	if !ok {
		return nil
	}
	ws, err := app.Store.Workspace(ctx, id)
	if err != nil {
		return err
	}
	members, err := app.Store.ListMembers(ctx, id)
	if err != nil {
		return err
	}
	b.Describe(id, demo.WorkspaceFacts{Name: ws.Name, Slug: ws.Slug, PlanTier: ws.OrgPlan, MemberCount: len(members)})
	return nil
}

// curlExample is the bash lines that open an MCP session on url/mcp with
// the token in $tokenVar (headers in the array named headers) and make
// one tools/call with params, a JSON object.
func curlExample(url, tokenVar, headers, params string) string {
	sid := headers + "SID"
	if headers == "H" {
		sid = "SID"
	}
	return fmt.Sprintf(`%[2]s=(-H "Authorization: Bearer $%[3]s" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
%[4]s=$(curl -s -o /dev/null -D - "${%[2]s[@]}" %[1]s/mcp -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}' | awk 'tolower($1)=="mcp-session-id:"{print $2}' | tr -d '\r')
curl -s "${%[2]s[@]}" -H "Mcp-Session-Id: $%[4]s" -H 'MCP-Protocol-Version: 2025-06-18' %[1]s/mcp -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":%[5]s}'; echo
`, url, headers, tokenVar, sid, params)
}

func printDevBanner(out io.Writer, url, token, adminToken string) {
	fmt.Fprintf(out, `
mcpgate (dev) is listening on %[1]s
  MCP endpoint : %[1]s/mcp   (agent %[3]s, workspace %[4]s, task %[5]s, profile %[6]s; valid 24h)
  admin API    : %[1]s/admin/v1   (Authorization: Bearer %[7]s)
  console      : %[1]s/console   (sign in with the admin token)

Copy-paste example (initialize, then call workspace.info):

export MCPGATE_TOKEN=%[2]s
%[8]s
`, url, token, devUser, devWorkspace, devTask, devProfile, adminToken, curlExample(url, "MCPGATE_TOKEN", "H", `{"name":"workspace.info","arguments":{}}`))
}

// seedUpstreamProfile creates the devUpstreamProfile profile: an allowlist of
// the exact names of the tools the upstream (MCPGATE_UPSTREAM_URL) added to
// the SupaCloud catalog. The ops-bot profile grants them too when their tier
// (MCPGATE_UPSTREAM_TIER) is read, ops or deploy, together with every
// SupaCloud tool of those tiers.
func seedUpstreamProfile(ctx context.Context, app *server.App) error {
	base, err := tools.Load()
	if err != nil {
		return err
	}
	var names []string
	for _, t := range app.Catalog.Tools() {
		if _, supacloud := base.Lookup(t.Name); !supacloud {
			names = append(names, t.Name)
		}
	}
	return app.Store.PutProfile(ctx, &gateway.Profile{WorkspaceID: devWorkspace, ID: devUpstreamProfile,
		Name: "Upstream tools", Allowlist: names})
}

// printCCServerBanner makes the dev user a member of the cc_server demo's
// workspace ws-acme and prints a cc_server token (mode chat) with a curl
// example, when the cc_server surface is on.
func printCCServerBanner(ctx context.Context, app *server.App, out io.Writer) error {
	if app.CC == nil {
		return nil
	}
	const ccWorkspace = "ws-acme"
	if err := app.Store.PutWorkspace(ctx, &gateway.Workspace{ID: ccWorkspace, Name: "Acme Web", Slug: "acme-web", OrgPlan: "team"}); err != nil {
		return err
	}
	if err := app.Store.PutMember(ctx, &gateway.Member{WorkspaceID: ccWorkspace, UserID: devUser, Role: gateway.RoleMember, SeatType: "developer"}); err != nil {
		return err
	}
	tok, err := app.CC.JWT.IssueCCServer(auth.CCClaims{Subject: devUser, Mode: "chat"}, 24*time.Hour)
	if err != nil {
		return fmt.Errorf("issue dev cc_server token: %w", err)
	}
	url := "http://" + app.Config.CCServer.Listen
	fmt.Fprintf(out, `cc_server surface on %[1]s  (POST /mcp, GET /sse; user %[3]s, member of %[4]s, mode chat; valid 24h)

export CC_TOKEN=%[2]s
H=(-H "Authorization: Bearer $CC_TOKEN" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
SID=$(curl -s -o /dev/null -D - "${H[@]}" %[1]s/mcp -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}' | awk 'tolower($1)=="mcp-session-id:"{print $2}' | tr -d '\r')
curl -s "${H[@]}" -H "Mcp-Session-Id: $SID" -H 'MCP-Protocol-Version: 2025-06-18' %[1]s/mcp -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_my_tools","arguments":{"workspace_id":"%[4]s"}}}'; echo

`, url, tok, devUser, ccWorkspace)
	return nil
}
