package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	opacmd "github.com/open-policy-agent/opa/cmd"
)

// policySubcommands are the OPA commands `mcpgate policy` passes through.
var policySubcommands = []string{"test", "eval", "check", "fmt", "bench"}

// policyCmd runs `mcpgate policy test|eval|check|fmt|bench …` with the OPA
// the gateway embeds (the same version as `go tool opa`), so a security team
// checks a bundle with the binary it will run under. `policy test` without
// a path tests the policies folder.
func policyCmd(_ context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || !slices.Contains(policySubcommands, args[0]) {
		return fmt.Errorf("policy: want one of %v, e.g. `mcpgate policy test policies -v` or `mcpgate policy eval -d policies -i input.json data.supacloud.decision`", policySubcommands)
	}
	if args[0] == "test" && !hasPath(args[1:]) {
		args = append(args, "policies")
	}
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
