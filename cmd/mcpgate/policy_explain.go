package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
	"github.com/mcpgate/mcpgate/tools"
)

var (
	editionEnv   = envVar{"SUPACLOUD_EDITION", "community or enterprise, as the gateway runs (default community)"}
	policyDirEnv = envVar{"MCPGATE_POLICY_DIR", "the bundle the gateway runs, when not the embedded one"}
)

func newPolicyExplainCmd(out io.Writer, getenv func(string) string) *cobra.Command {
	var req admin.ExplainRequest
	var args string
	var asJSON, allPerms bool
	cmd := withEnv(&cobra.Command{
		Use:   "explain --workspace W --task T [--profile P] [--user U] --tool X [--args JSON] | --surface ccserver --user U [--kind K] [--mode M] [--workspace W] [--ticket T] --tool X [--args JSON]",
		Short: "explain the decision of one call, with the live store's data",
		Long: `Decide one tools/call of an agent task session as the gateway would, and say
why: every reason, the gate and rule that decided, the allowlist entry that
grants the tool (or would), and for each permission key the tool reads the
precedence chain as resolved (user override, seat type, workspace override,
org plan, default; capped by the edition); with --all-permissions the chain
of every permission key known, whatever the tool reads (the member's whole
precedence table, as the console's permissions page shows it).

The caller is loaded from the store MCPGATE_DATABASE_URL names, as the
gateway loads it; the bundle is the one the gateway runs (MCPGATE_POLICY_DIR
or the embedded one) and the explanation is the bundle's own
data.supacloud.explain. Nothing is written. Without --user the acting user is
the actor of the task's latest audited call. With --surface ccserver the call
is a cc_server credential's (--user, --kind, --mode, --workspace, --ticket),
decided and explained by data.ccserver (memberships from the store). POST
/admin/v1/explain answers the same on a running gateway.`,
		Example: `  mcpgate policy explain --workspace ws-demo --task t-1 --profile p-ops --user u-olivia --tool script.run --args '{"slug":"nightly-report"}'`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			req.Args = json.RawMessage(args)
			return withStore(c.Context(), getenv, func(store server.FullStore) error {
				ans, err := explainWith(c.Context(), store, getenv, req)
				if err != nil {
					return err
				}
				if asJSON {
					enc := json.NewEncoder(out)
					enc.SetIndent("", "  ")
					return enc.Encode(ans)
				}
				printExplanation(out, ans, allPerms)
				return nil
			})
		},
	}, databaseURLEnv, editionEnv, policyDirEnv)
	f := cmd.Flags()
	f.StringVar(&req.Workspace, "workspace", "", "workspace id (required on supacloud; on ccserver an agent's own workspace)")
	f.StringVar(&req.Task, "task", "", "task id of the session (required on supacloud)")
	f.StringVar(&req.Profile, "profile", "", "agent_profile_id of the session (default: none, so the workspace default profile)")
	f.StringVar(&req.User, "user", "", "acting user, the credential's sub (required on ccserver; on supacloud default: the actor of the task's latest audited call)")
	f.StringVar(&req.Surface, "surface", "", "surface whose policy decides the call: supacloud (default) or ccserver")
	f.StringVar(&req.Kind, "kind", "", "ccserver: principal kind, user (default) or agent")
	f.StringVar(&req.Mode, "mode", "", "ccserver: conversation mode claim (default chat)")
	f.StringVar(&req.Ticket, "ticket", "", "ccserver: the run's own ticket (ticket_id claim)")
	f.StringVar(&req.Tool, "tool", "", "tool to call (required)")
	f.StringVar(&args, "args", "", "the call's arguments as a JSON object")
	f.BoolVar(&asJSON, "json", false, "print the answer of POST /admin/v1/explain instead of text")
	f.BoolVar(&allPerms, "all-permissions", false, "also print the precedence chain of every permission key known, not only those the tool reads")
	return cmd
}

// explainWith explains req on store with the bundle and edition the
// environment names, through the gateway's own explainer (server.Explain).
func explainWith(ctx context.Context, store server.FullStore, getenv func(string) string, req admin.ExplainRequest) (*server.ExplainAnswer, error) {
	cfg, _, err := bundleConfig(getenv)
	if err != nil {
		return nil, err
	}
	surface := cmp.Or(req.Surface, gateway.SurfaceSupaCloud)
	sf, err := server.NewExplainSurface(ctx, cfg, store, surface)
	if err != nil {
		return nil, err
	}
	explain := server.Explain(server.ExplainDeps{Store: store, Surfaces: map[string]server.ExplainSurface{surface: sf}})
	ans, err := explain(ctx, req)
	if err != nil {
		if msg := gateway.ErrorMessageOf(err); msg != "" && gateway.ErrorCodeOf(err) != gateway.EInternal {
			return nil, fmt.Errorf("policy explain: %s", msg)
		}
		return nil, err
	}
	return ans.(*server.ExplainAnswer), nil
}

// bundleConfig is the part of the gateway's configuration the policy
// commands need: the edition and the bundle, and the tool catalog.
func bundleConfig(getenv func(string) string) (*config.Config, *tools.Catalog, error) {
	cfg := &config.Config{Edition: gateway.EditionCommunity, PolicyDir: getenv(policyDirEnv.name)}
	if e := getenv(editionEnv.name); e != "" {
		cfg.Edition = gateway.Edition(e)
	}
	if cfg.Edition != gateway.EditionCommunity && cfg.Edition != gateway.EditionEnterprise {
		return nil, nil, fmt.Errorf("SUPACLOUD_EDITION=%q: must be community or enterprise, as for the gateway", cfg.Edition)
	}
	cat, err := tools.Load()
	if err != nil {
		return nil, nil, fmt.Errorf("tool catalog: %w", err)
	}
	return cfg, cat, nil
}

// printExplanation writes ans for people; all adds the chain of every
// permission key known (all_permissions).
func printExplanation(out io.Writer, ans *server.ExplainAnswer, all bool) {
	d, x := ans.Decision, ans.Detail
	verdict := "denied"
	if d.Allow {
		verdict = "allowed"
	}
	fmt.Fprintf(out, "decision: %s (tier %s, decision %s) for user %s\n", verdict, d.Tier, d.ID, ans.User)
	by, _ := x["decided_by"].(map[string]any)
	if d.Allow {
		fmt.Fprintf(out, "decided by: %v\n", by["rule"])
	} else {
		fmt.Fprintf(out, "decided by: gate %v (%v), reason %v\n", orDash(by["gate"]), by["rule"], by["code"])
	}
	for _, r := range d.Reasons {
		fmt.Fprintf(out, "  reason %s: %s\n", r.Code, r.Message)
	}
	fmt.Fprintln(out, "gates, in the order the policy checks them:")
	for _, g := range list(x["gates"]) {
		m, _ := g.(map[string]any)
		mark := "pass"
		if m["passed"] != true {
			mark = "FAIL"
		}
		fmt.Fprintf(out, "  %s  %-12v %v (denies with %v)\n", mark, m["gate"], m["rule"], m["denies_with"])
	}
	if ws, ok := x["workspace"].(map[string]any); ok { // cc_server
		fmt.Fprintf(out, "mode: %v; workspace of the call: %v; reachable: %v\n", orDash(x["mode"]), orDash(ws["call"]), ws["reachable"])
	}
	if p, ok := x["profile"].(map[string]any); ok {
		fmt.Fprintf(out, "profile: %v, source %v; allowlist: %s\n", p["label"], p["source"], joinList(p["allowlist"]))
	}
	if g, ok := x["grant"].(map[string]any); ok {
		fmt.Fprintf(out, "grant (%v, tier %v): granted by %s; would grant: %s", g["kind"], g["tier"], joinList(g["granted_by"]), joinList(g["would_grant"]))
		if g["always_on"] == true {
			fmt.Fprint(out, "; the tier is always on")
		}
		if g["carve_out"] == true {
			fmt.Fprint(out, "; a carve-out: its tier wildcard does not grant it")
		}
		if roles := list(g["roles"]); len(roles) > 0 {
			fmt.Fprintf(out, "; the acting user must be %s", joinList(g["roles"]))
		}
		fmt.Fprintln(out)
	}
	printPermissions(out, "permissions", list(x["permissions"]))
	if all {
		printPermissions(out, "all permission keys", list(x["all_permissions"]))
	}
	for _, n := range ans.Notes {
		fmt.Fprintf(out, "note: %s\n", n)
	}
}

// printPermissions writes each entry of an explanation's permissions (or
// all_permissions) list under title: the key, its value and the link that
// decided it, then the whole chain. An entry whose field is null (a key
// the explained tool does not read) is printed without a field.
func printPermissions(out io.Writer, title string, perms []any) {
	if len(perms) == 0 {
		return
	}
	fmt.Fprintf(out, "%s (user override → seat type → workspace override → org plan → default, capped by the edition):\n", title)
	for _, p := range perms {
		m, _ := p.(map[string]any)
		fmt.Fprint(out, "  ")
		if m["field"] != nil {
			fmt.Fprintf(out, "%v: ", m["field"])
		}
		fmt.Fprintf(out, "%v = %v, decided by %v", m["key"], m["value"], m["decided_by"])
		if m["redacted"] == true {
			fmt.Fprint(out, " (the field is removed from the result)")
		}
		fmt.Fprintln(out)
		var links []string
		for _, l := range list(m["chain"]) {
			lm, _ := l.(map[string]any)
			name := fmt.Sprint(lm["link"])
			if n, ok := lm["name"].(string); ok {
				name += "(" + n + ")"
			}
			if lm["applies"] == false {
				name += "[skipped: no seat type, or enterprise-only on this edition]"
			}
			links = append(links, name+"="+fmt.Sprint(orDash(lm["value"])))
		}
		fmt.Fprintf(out, "    %s\n", strings.Join(links, "  "))
	}
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func joinList(v any) string {
	var s []string
	for _, e := range list(v) {
		s = append(s, fmt.Sprint(e))
	}
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(s, ", ")
}

func orDash(v any) any {
	if v == nil {
		return "-"
	}
	return v
}
