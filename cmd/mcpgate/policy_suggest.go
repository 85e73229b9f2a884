package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// ccNothingToSuggest is policy suggest's answer for the cc_server
// surface, whose modes have no allowlist to shrink.
const ccNothingToSuggest = `nothing to suggest for the ccserver surface: its modes have no allowlist to shrink.
What a conversation reaches is its mode's curated list in the bundle (data.ccserver.mode_tool_policy,
policies/ccserver/modes.rego: chat reaches every tool, plan, review and orchestrate their lists, every mode
the always-allowed sets), the same for every user; change a mode's list there, test it (mcpgate policy test)
and replay the cc_server decision log against it (mcpgate policy replay) before it goes live.
`

func newPolicySuggestCmd(out io.Writer, getenv func(string) string) *cobra.Command {
	var ws, profile, since, surface string
	cmd := withEnv(&cobra.Command{
		Use:   "suggest --workspace W --profile P [--since T] [--surface S]",
		Short: "suggest the smallest allowlist that covers what a profile actually called",
		Long: `Read the audit trail of the store MCPGATE_DATABASE_URL names and print the
smallest allowlist, in the profile's own vocabulary (tier wildcards such as
supacloud.read.*, group wildcards such as supacloud.conversation.*, exact
names, prefixed as supacloud.<tool> when the profile spells them so), that
grants every tool the profile was allowed to call and nothing it did not
call: a wildcard is used only when every tool it grants was called. The
always-on baseline needs no entry. What each entry grants is asked of the
bundle the gateway runs (MCPGATE_POLICY_DIR or the embedded one), for a
session whose user may deploy, so the deploy tier's role check aside.

Denied calls are listed apart (they are not in the suggestion), and so is
what the current allowlist grants beyond the suggestion. --since takes an
RFC 3339 time or a duration back from now (720h); default: all history.
--surface ccserver says why there is nothing to suggest there: its modes
have no allowlist.`,
		Example: `  mcpgate policy suggest --workspace ws-demo --profile p-ops --since 720h`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			switch surface {
			case gateway.SurfaceCCServer:
				_, err := io.WriteString(out, ccNothingToSuggest)
				return err
			case gateway.SurfaceSupaCloud:
			default:
				return fmt.Errorf("policy suggest: --surface %q is unknown; want %s or %s", surface, gateway.SurfaceSupaCloud, gateway.SurfaceCCServer)
			}
			if ws == "" || profile == "" {
				return fmt.Errorf("policy suggest: --workspace and --profile are required")
			}
			from, err := parseWhen("--since", since, time.Now())
			if err != nil {
				return err
			}
			return withStore(c.Context(), getenv, func(store server.FullStore) error {
				return suggest(c.Context(), out, store, getenv, ws, profile, from)
			})
		},
	}, databaseURLEnv, editionEnv, policyDirEnv)
	f := cmd.Flags()
	f.StringVar(&ws, "workspace", "", "workspace id (required)")
	f.StringVar(&profile, "profile", "", "agent profile id (required)")
	f.StringVar(&since, "since", "", "read only calls at or after this time (RFC 3339, or a duration back from now such as 720h)")
	f.StringVar(&surface, "surface", gateway.SurfaceSupaCloud, "the surface whose policy to suggest for: supacloud, or ccserver (whose modes have no allowlist: nothing to suggest, and why)")
	return cmd
}

// usageTotals is one tool's calls in the audit trail.
type usageTotals struct {
	tool  string
	tier  gateway.Tier
	calls int64
	last  time.Time
}

func (u *usageTotals) add(r gateway.ToolUsage) {
	u.tool, u.tier = r.Tool, r.Tier
	u.calls += r.Calls
	if r.Last.After(u.last) {
		u.last = r.Last
	}
}

func suggest(ctx context.Context, out io.Writer, store server.FullStore, getenv func(string) string, ws, profileID string, since time.Time) error {
	prof, err := store.Profile(ctx, ws, profileID)
	if err != nil {
		return fmt.Errorf("policy suggest: %s", gateway.ErrorMessageOf(err))
	}
	rows, err := store.ProfileToolUsage(ctx, ws, profileID, since)
	if err != nil {
		return err
	}
	cfg, cat, err := bundleConfig(getenv)
	if err != nil {
		return err
	}
	engine, err := server.NewEngine(ctx, cfg, cat)
	if err != nil {
		return err
	}
	allowed, denied := map[string]*usageTotals{}, map[string]*usageTotals{}
	var undecided int64
	for _, r := range rows {
		into := allowed
		switch {
		case !r.Decided:
			undecided += r.Calls
			continue
		case r.Status == gateway.AuditDenied, r.Bucket == pipeline.RefusalBucket:
			into = denied
		}
		if into[r.Tool] == nil {
			into[r.Tool] = &usageTotals{}
		}
		into[r.Tool].add(r)
	}
	g := grantOracle{engine: engine, ws: ws, profile: profileID}
	baseline, err := g.grants(ctx, nil)
	if err != nil {
		return err
	}
	used := map[string]bool{}
	for t := range allowed {
		used[t] = true
	}
	entries, uncovered, err := g.smallest(ctx, used, baseline, prof.Allowlist)
	if err != nil {
		return err
	}
	var calls int64
	for _, r := range rows {
		calls += r.Calls
	}
	when := "all history"
	if !since.IsZero() {
		when = "since " + since.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(out, "profile %s (%s) of workspace %s: %d audited calls, %s; %d tools allowed, %d denied, %d calls refused before a decision\n",
		prof.ID, prof.Name, ws, calls, when, len(allowed), len(denied), undecided)
	sugg, _ := json.Marshal(entries)
	fmt.Fprintf(out, "\nsuggested allowlist (%d entries): %s\n", len(entries), sugg)
	for _, e := range entries {
		gr, err := g.grants(ctx, []string{e})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  %-32s grants %s\n", e, strings.Join(slices.Sorted(maps.Keys(minus(gr, baseline))), ", "))
	}
	if len(uncovered) > 0 {
		fmt.Fprintf(out, "called but grantable by no entry of this bundle (not in the suggestion): %s\n", strings.Join(uncovered, ", "))
	}
	printUsage(out, "allowed calls", allowed, baseline)
	printUsage(out, "denied calls (not in the suggestion)", denied, nil)
	cur, _ := json.Marshal(prof.Allowlist)
	fmt.Fprintf(out, "\ncurrent allowlist: %s\n", cur)
	current, err := g.grants(ctx, prof.Allowlist)
	if err != nil {
		return err
	}
	suggested, err := g.grants(ctx, entries)
	if err != nil {
		return err
	}
	extra := slices.Sorted(maps.Keys(minus(current, suggested)))
	fmt.Fprintf(out, "it grants %d tools the profile never called: %s\n", len(extra), listOrNone(extra))
	if missing := slices.Sorted(maps.Keys(minus(suggested, current))); len(missing) > 0 {
		fmt.Fprintf(out, "the suggestion grants %d tools the current allowlist does not (allowed under an earlier allowlist): %s\n", len(missing), strings.Join(missing, ", "))
	}
	if prof.ScriptAllowlist != nil || used["script.run"] {
		fmt.Fprintln(out, "script_allowlist: keep it as it is; the audit trail holds argument hashes, not the slugs scripts ran with")
	}
	return nil
}

func printUsage(out io.Writer, title string, m map[string]*usageTotals, baseline map[string]bool) {
	if len(m) == 0 {
		fmt.Fprintf(out, "\n%s: none\n", title)
		return
	}
	fmt.Fprintf(out, "\n%s:\n", title)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TOOL\tTIER\tCALLS\tLAST")
	for _, k := range slices.Sorted(maps.Keys(m)) {
		u := m[k]
		tier := string(u.tier)
		if baseline[k] {
			tier += " (always on)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\n", k, tier, u.calls, u.last.UTC().Format(time.RFC3339))
	}
	_ = tw.Flush()
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func minus(a, b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		if !b[k] {
			out[k] = true
		}
	}
	return out
}

// grantOracle asks the bundle what an allowlist grants: the tools
// tools/list shows a session of the profile with that allowlist, whose
// user is an owner (so the deploy tier's role check passes) and whose
// scripts are unrestricted.
type grantOracle struct {
	engine      *policy.Engine
	ws, profile string
}

func (g grantOracle) grants(ctx context.Context, allowlist []string) (map[string]bool, error) {
	p := &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "policy-suggest", WorkspaceID: g.ws, TaskID: "policy-suggest", ProfileID: g.profile}
	c := &gateway.Caller{
		Workspace:        &gateway.Workspace{ID: g.ws},
		Member:           &gateway.Member{WorkspaceID: g.ws, UserID: p.Subject, Role: gateway.RoleOwner},
		ProfileRequested: g.profile,
		Profile:          &gateway.Profile{WorkspaceID: g.ws, ID: g.profile, Allowlist: slices.Clone(allowlist)},
		Task:             &gateway.Task{WorkspaceID: g.ws, ID: p.TaskID, Status: gateway.TaskRunning},
	}
	if c.Profile.Allowlist == nil {
		c.Profile.Allowlist = []string{}
	}
	v, err := g.engine.Visible(ctx, p, c)
	if err != nil {
		return nil, err
	}
	return maps.Clone(v), nil
}

// smallest returns the fewest allowlist entries that grant every tool of
// used that the baseline does not, each granting only called tools:
// candidates (the bundle's wildcards and full grant, and each called
// tool's exact name, prefixed when the current allowlist prefixes its
// names) are taken largest first. The grants form a hierarchy (full ⊇
// tier ⊇ group ⊇ name), so largest first is also fewest. uncovered are the
// called tools no candidate grants.
func (g grantOracle) smallest(ctx context.Context, used, baseline map[string]bool, current []string) (entries, uncovered []string, err error) {
	wildcards, prefix := g.engine.Grants()
	prefixed := false
	for _, e := range current {
		if name, ok := strings.CutPrefix(e, prefix); ok && prefix != "" && !slices.Contains(wildcards, e) && !strings.HasSuffix(name, "*") {
			prefixed = true
		}
	}
	type cand struct {
		entry  string
		grants map[string]bool
	}
	var cands []cand
	for _, e := range wildcards {
		gr, err := g.grants(ctx, []string{e})
		if err != nil {
			return nil, nil, err
		}
		cands = append(cands, cand{e, minus(gr, baseline)})
	}
	for t := range used {
		e := t
		if prefixed {
			e = prefix + t
		}
		gr, err := g.grants(ctx, []string{e})
		if err != nil {
			return nil, nil, err
		}
		cands = append(cands, cand{e, minus(gr, baseline)})
	}
	sort.Slice(cands, func(i, j int) bool {
		if len(cands[i].grants) != len(cands[j].grants) {
			return len(cands[i].grants) > len(cands[j].grants)
		}
		return cands[i].entry < cands[j].entry
	})
	covered := map[string]bool{}
	for _, c := range cands {
		if len(c.grants) == 0 || len(minus(c.grants, used)) > 0 || len(minus(c.grants, covered)) == 0 {
			continue
		}
		entries = append(entries, c.entry)
		for t := range c.grants {
			covered[t] = true
		}
	}
	for t := range used {
		if !covered[t] && !baseline[t] {
			uncovered = append(uncovered, t)
		}
	}
	slices.Sort(entries)
	slices.Sort(uncovered)
	return entries, uncovered, nil
}
