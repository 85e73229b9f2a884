// Command mcpgate is the policy-engine-driven authorization gateway for MCP
// tool calls. Subcommands: serve, migrate, token, audit, jwt, policy, version;
// `mcpgate help X` or `mcpgate X --help` describes each.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/gateway/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Getenv)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpgate:", err)
		os.Exit(exitCode(err))
	}
}

// run executes one command line. It is main without the process: tests call
// it with their own output and environment.
func run(ctx context.Context, args []string, out io.Writer, getenv func(string) string) error {
	root := newRootCmd(out, getenv)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// exitError is an error that ends the process with its own exit status
// (policy replay: 2 for a usage error, 3 for too many flips).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks err as a usage error: exit status 2.
func usageError(err error) error { return &exitError{code: exitUsage, err: err} }

// exitCode is the exit status for err: an exitError's own, else 1.
func exitCode(err error) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return 1
}

// envAnnotation is the cobra annotation that lists the environment variables
// a command reads; the usage template prints it after the flags.
const envAnnotation = "mcpgate/env"

func newRootCmd(out io.Writer, getenv func(string) string) *cobra.Command {
	root := &cobra.Command{
		Use:   "mcpgate",
		Short: "authorization gateway for MCP tool calls",
		Long: `mcpgate authenticates every MCP tool call an agent makes, asks its Rego policy
(OPA) for a decision, reserves the call's rate-limit slots and writes its audit
row, and only then passes the call on to the tool.

Start with "mcpgate serve --dev" (what "make run" does): an embedded store, a
demo workspace and ready tokens. Every command answers --help.`,
		Version:       versionInfo().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	root.SetErr(out)
	root.SetVersionTemplate("{{.Version}}")
	root.SetUsageTemplate(root.UsageTemplate() + `{{with index .Annotations "` + envAnnotation + `"}}
Environment:
{{.}}{{end}}`)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w (see `%s --help`)", err, c.CommandPath())
	})
	root.AddCommand(
		newServeCmd(out, getenv),
		newMigrateCmd(getenv),
		newTokenCmd(out, getenv),
		newAuditCmd(out, getenv),
		newJWTCmd(out, getenv),
		withSubcommand(newPolicyCmd(out, getenv), newPolicyReloadCmd(out, getenv)),
		newVersionCmd(out),
	)
	return root
}

// withSubcommand adds sub to cmd and returns cmd.
func withSubcommand(cmd, sub *cobra.Command) *cobra.Command {
	cmd.AddCommand(sub)
	return cmd
}

// group makes cmd a command that only holds subcommands: without arguments
// it prints its help; an unknown subcommand is an error, not the help.
func group(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	return cmd
}

// envVar is one environment variable a command reads.
type envVar struct{ name, what string }

// withEnv records the environment variables cmd reads, for its help.
func withEnv(cmd *cobra.Command, vars ...envVar) *cobra.Command {
	width := 0
	for _, v := range vars {
		width = max(width, len(v.name))
	}
	var b strings.Builder
	for _, v := range vars {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, v.name, v.what)
	}
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[envAnnotation] = b.String()
	return cmd
}

var databaseURLEnv = envVar{"MCPGATE_DATABASE_URL", "the store: sqlite:PATH, sqlite:///ABSPATH or postgres://… (default " + config.DefaultDatabaseURL + ")"}
