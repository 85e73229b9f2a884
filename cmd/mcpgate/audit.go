package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/gateway/server"
)

// exitBroken is the exit status of audit verify when the chain does not
// verify (1 stays for errors: the store could not be read).
const exitBroken = 3

func newAuditCmd(out io.Writer, getenv func(string) string) *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "audit",
		Short: "check the audit trail's tamper-evident chain",
		Long: `Check the tamper-evident chain over the audit trail (docs/architecture.md,
"The audit chain") directly on the store MCPGATE_DATABASE_URL names: the same
database as serve.`,
	})
	withEnv(cmd, databaseURLEnv)
	verify := withEnv(&cobra.Command{
		Use:   "verify",
		Short: "recompute the chain and name the first row changed, deleted, inserted or reordered",
		Long: `Recompute every sealed row's hash, in seq order, from the first row to the
chain head. Prints one line and exits 0 when the chain verifies; otherwise
names the first seq whose row was changed, deleted, inserted or reordered and
exits 3 (1 when the store cannot be read). Rows not sealed yet (the last
second's, calls still running) are counted, not verified.`,
		Example: "  MCPGATE_DATABASE_URL=postgres://… mcpgate audit verify",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return withStore(c.Context(), getenv, func(store server.FullStore) error {
				return auditVerify(c.Context(), store, out)
			})
		},
	}, databaseURLEnv)
	cmd.AddCommand(verify)
	return cmd
}

// auditVerify verifies store's chain and prints the summary, or returns
// the first problem (exit status exitBroken).
func auditVerify(ctx context.Context, store server.FullStore, out io.Writer) error {
	rep, err := store.VerifyAuditChain(ctx)
	if err != nil {
		return err
	}
	if rep.Problem != nil {
		return &exitError{code: exitBroken, err: fmt.Errorf("%w; %d rows before it verified", rep.Problem, rep.Verified)}
	}
	fmt.Fprintf(out, "audit chain verified: %d rows, seq 1 to %d, head %s; %d rows not sealed yet\n",
		rep.Verified, rep.Head.Seq, rep.Head.Hash, rep.Unsealed)
	return nil
}
