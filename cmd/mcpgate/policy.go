package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	opacmd "github.com/open-policy-agent/opa/cmd"
	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/gateway/policy"
)

// policySubcommands are the OPA commands `mcpgate policy` passes through,
// with what each does.
var policySubcommands = []struct{ name, short string }{
	{"test", "run the Rego tests of a policy folder (default: policies; --timeout default 1m per test)"},
	{"eval", "evaluate a query, e.g. data.supacloud.decision, on an input"},
	{"check", "compile a policy folder and report errors (use --strict)"},
	{"fmt", "format Rego files (--list names the files it would change)"},
	{"bench", "benchmark a query"},
}

// newPolicyCmd is `mcpgate policy test|eval|check|fmt|bench …`: the OPA
// commands of the OPA the gateway embeds (the same version as `go tool
// opa`), so a security team checks a bundle with the binary it will run
// under. Their arguments and flags go to OPA unchanged, and their help is
// OPA's. `policy test` without a path tests the policies folder. Beside
// them are mcpgate's own: replay (a candidate bundle against the decision
// log), explain (one call, from the live store) and suggest (the smallest
// allowlist for a profile's audited calls).
func newPolicyCmd(out io.Writer, getenv func(string) string) *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "policy",
		Short: "OPA's test, eval, check, fmt and bench; replay, explain and suggest",
		Long: `Run OPA's own commands with the OPA built into this binary, the one the
gateway decides with. Arguments and flags go to OPA unchanged;
"mcpgate policy test --help" shows OPA's flags.

replay, explain and suggest are mcpgate's: re-decide the decision log
against a candidate bundle, explain one call with the live store's data,
and suggest the smallest allowlist for what a profile actually called.`,
		Example: `  mcpgate policy test -v
  mcpgate policy eval -d policies -i test/testdata/policy-input.json data.supacloud.decision
  mcpgate policy check --strict policies
  mcpgate policy replay --bundle ./candidate --log decisions.jsonl --since 1h`,
	})
	cmd.AddCommand(newPolicyReplayCmd(out), newPolicyExplainCmd(out, getenv), newPolicySuggestCmd(out, getenv))
	for _, sub := range policySubcommands {
		c := &cobra.Command{
			Use:                sub.name + " [OPA flags and arguments]",
			Short:              sub.short,
			DisableFlagParsing: true,
			RunE: func(_ *cobra.Command, args []string) error {
				if sub.name == "test" && !wantsHelp(args) {
					args = testArgs(args)
				}
				if compiles(sub.name) && !wantsHelp(args) {
					var cleanup func()
					var err error
					if args, cleanup, err = withCapabilities(args); err != nil {
						return err
					}
					defer cleanup()
				}
				return runOPA(out, append([]string{sub.name}, args...))
			},
		}
		c.SetHelpFunc(func(*cobra.Command, []string) { _ = runOPA(out, []string{sub.name, "--help"}) })
		cmd.AddCommand(c)
	}
	return cmd
}

// runOPA runs OPA's command line args.
func runOPA(out io.Writer, args []string) error {
	root := opacmd.Command(nil, "OPA")
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(out)
	root.SilenceUsage = true
	if err := root.Execute(); err != nil {
		return fmt.Errorf("policy %s: %w", args[0], err)
	}
	return nil
}

// testTimeout is the per-test bound `policy test` gives OPA unless the
// flags set one: the bound the gateway's reload gate runs a candidate's
// tests with. OPA's own default, 5 s, fails the shipped bundle's matrix
// tests on a busy machine (an ERROR, not a FAIL) while the gateway would
// take the same bundle live.
const testTimeout = "1m"

// testArgs are the OPA arguments of `policy test args`: the policies
// folder when args name none, and --timeout testTimeout unless args set
// --timeout (or -t).
func testArgs(args []string) []string {
	out := slices.Clone(args)
	if !hasPath(args) {
		out = append(out, "policies")
	}
	for _, a := range args {
		if a == "-t" || a == "--timeout" || strings.HasPrefix(a, "--timeout=") || strings.HasPrefix(a, "-t=") {
			return out
		}
	}
	return append([]string{"--timeout", testTimeout}, out...)
}

// compiles reports whether the OPA command name compiles policies and so
// takes --capabilities.
func compiles(name string) bool {
	return name == "test" || name == "eval" || name == "check" || name == "bench"
}

// withCapabilities adds --capabilities with the gateway's own capabilities
// (policy.Capabilities: OPA's without the network builtins) to args, unless
// args set --capabilities, so a bundle that calls http.send fails here as
// it would fail to load in the gateway. The capabilities go to a temporary
// file that cleanup removes.
func withCapabilities(args []string) ([]string, func(), error) {
	for _, a := range args {
		if a == "--capabilities" || strings.HasPrefix(a, "--capabilities=") {
			return args, func() {}, nil
		}
	}
	dir, err := os.MkdirTemp("", "mcpgate-capabilities-")
	if err != nil {
		return nil, nil, fmt.Errorf("policy: write the gateway's OPA capabilities: %w", err)
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	b, err := json.Marshal(policy.Capabilities())
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "capabilities.json"), b, 0o600)
	}
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("policy: write the gateway's OPA capabilities: %w", err)
	}
	return append([]string{"--capabilities", filepath.Join(dir, "capabilities.json")}, args...), cleanup, nil
}

// hasPath reports whether args name a file or folder (an argument that is
// not a flag).
func hasPath(args []string) bool {
	for _, a := range args {
		if len(a) > 0 && a[0] != '-' {
			return true
		}
	}
	return false
}

// wantsHelp reports whether args ask for help.
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "--help" {
			return true
		}
	}
	return false
}
