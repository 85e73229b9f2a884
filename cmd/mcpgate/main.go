// Command mcpgate is the policy-engine-driven authorization gateway for MCP
// tool calls. Subcommands: serve, migrate, token, policy (DESIGN.md §4).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `mcpgate — authorization gateway for MCP tool calls

usage:
  mcpgate serve [--dev]          run the gateway (configuration from the environment; README.md, Configuration)
  mcpgate migrate                apply database migrations to MCPGATE_DATABASE_URL and exit
  mcpgate token create --workspace WS --label L --scope mcp:read [--scope …]
  mcpgate token list --workspace WS
  mcpgate token revoke FINGERPRINT
  mcpgate policy test [DIR] [-v]            run the Rego tests of a policy folder (default: policies)
  mcpgate policy eval -d DIR -i FILE QUERY  evaluate a query, e.g. data.supacloud.decision, on an input
  mcpgate policy check|fmt|bench …          the same OPA commands as ` + "`go tool opa`" + `, with the OPA the gateway embeds
  mcpgate version

--dev starts with the embedded store, a demo workspace, generated keys, console
logs, and prints a ready agent session token with a copy-paste example.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Getenv)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpgate:", err)
		os.Exit(1)
	}
}

var errUsage = errors.New("see usage above")

func run(ctx context.Context, args []string, out io.Writer, getenv func(string) string) error {
	if len(args) == 0 {
		fmt.Fprint(out, usage)
		return errUsage
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], out, getenv)
	case "migrate":
		return migrate(ctx, getenv)
	case "token":
		return token(ctx, args[1:], out, getenv)
	case "policy":
		return policyCmd(ctx, args[1:], out)
	case "version":
		fmt.Fprintln(out, "mcpgate", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(out, usage)
		return nil
	default:
		fmt.Fprint(out, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}
