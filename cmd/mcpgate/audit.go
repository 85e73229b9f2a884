package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/gateway/auditchain"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// exitBroken is the exit status of audit verify when the chain does not
// verify (1 stays for errors: the store or the file could not be read).
const exitBroken = 3

func newAuditCmd(out io.Writer, getenv func(string) string) *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "audit",
		Short: "check and export the audit trail's tamper-evident chain",
		Long: `Check the tamper-evident chain over the audit trail (docs/architecture.md,
"The audit chain") directly on the store MCPGATE_DATABASE_URL names (the same
database as serve), export it, and verify an export offline.`,
	})
	withEnv(cmd, databaseURLEnv)
	var exportFile, publicKey string
	verify := withEnv(&cobra.Command{
		Use:   "verify",
		Short: "recompute the chain and name the first row changed, deleted, inserted or reordered",
		Long: `Recompute every sealed row's hash, in seq order, from the first row to the
chain head. Prints one line and exits 0 when the chain verifies; otherwise
names the first seq whose row was changed, deleted, inserted or reordered and
exits 3 (1 when the store cannot be read). Rows not sealed yet (the last
second's, calls still running) are counted, not verified. With --public-key
(the PEM public key of MCPGATE_AUDIT_SIGNING_KEY_FILE's key) it also checks
the Ed25519 signature of every checkpoint the database keeps: one unsigned,
signed by another key or changed is refused (exit 3), so a chain rewritten
with recomputed hashes and checkpoints is told apart.

With --export FILE it verifies a file written by mcpgate audit export instead,
without the database: the chain from the export's anchor, every checkpoint's
hash and, with --public-key (the PEM public key of
MCPGATE_AUDIT_SIGNING_KEY_FILE's key), its Ed25519 signature; an unsigned
checkpoint or one signed by another key is refused (exit 3), as is a tail cut
off after the last checkpoint.`,
		Example: `  MCPGATE_DATABASE_URL=postgres://… mcpgate audit verify
  MCPGATE_DATABASE_URL=postgres://… mcpgate audit verify --public-key audit-key.pub.pem
  mcpgate audit verify --export audit.jsonl --public-key audit-key.pub.pem`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			key, err := readPublicKey(publicKey)
			if err != nil {
				return err
			}
			if exportFile != "" {
				return auditVerifyExport(exportFile, key, out)
			}
			return withStore(c.Context(), getenv, func(store server.FullStore) error {
				return auditVerify(c.Context(), store, key, out)
			})
		},
	}, databaseURLEnv)
	verify.Flags().StringVar(&exportFile, "export", "", "verify this export file (mcpgate audit export) instead of the database")
	verify.Flags().StringVar(&publicKey, "public-key", "", "PEM Ed25519 public key that must have signed every checkpoint (of the export, or of the database)")
	var since, format string
	export := withEnv(&cobra.Command{
		Use:   "export",
		Short: "stream the sealed rows with their hashes and the signed checkpoints, as JSON lines",
		Long: `Write the sealed audit rows to stdout, one JSON object per line (format
mcpgate-audit-export/1, docs/operations.md "Exporting the audit trail"): a
start line, each row in seq order with its seq, the hash before it, its hash
and its canonical form as hashed, each checkpoint right after the row of its
seq, and an end line naming the chain head. With --since the export starts at
the last checkpoint at or before that time (the rows after it, a little more
than asked), so that it verifies from a signed anchor; without a checkpoint
that old, at the first row. mcpgate audit verify --export checks it offline.`,
		Example: `  mcpgate audit export --since 24h --format jsonl > audit.jsonl
  mcpgate audit export --since 2026-07-01T00:00:00Z > audit.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if format != "jsonl" {
				return usageError(fmt.Errorf("--format %q: the one format is jsonl", format))
			}
			from, err := parseSince(since, time.Now())
			if err != nil {
				return usageError(err)
			}
			return withStore(c.Context(), getenv, func(store server.FullStore) error {
				return auditchain.Export(c.Context(), store, from, out)
			})
		},
	}, databaseURLEnv)
	export.Flags().StringVar(&since, "since", "", "an RFC 3339 time or a Go duration before now (24h, 90m); default: from the first row")
	export.Flags().StringVar(&format, "format", "jsonl", "output format: jsonl")
	cmd.AddCommand(verify, export)
	return cmd
}

// parseSince reads --since: "" (the zero time: everything), an RFC 3339
// time, or a positive duration before now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("--since %q: want an RFC 3339 time (2026-07-01T00:00:00Z) or a duration before now (24h, 90m)", s)
	}
	return now.Add(-d), nil
}

// readPublicKey reads --public-key's PEM file; nil when file is "".
func readPublicKey(file string) (ed25519.PublicKey, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--public-key: %w", err)
	}
	key, err := auditchain.ParsePublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("--public-key %s: %w", file, err)
	}
	return key, nil
}

// auditVerify verifies store's chain and, with key, the signatures of
// its checkpoints, and prints the summary, or returns the first problem
// (exit status exitBroken).
func auditVerify(ctx context.Context, store server.FullStore, key ed25519.PublicKey, out io.Writer) error {
	rep, err := store.VerifyAuditChain(ctx)
	if err != nil {
		return err
	}
	if rep.Problem != nil {
		return &exitError{code: exitBroken, err: fmt.Errorf("%w; %d rows before it verified", rep.Problem, rep.Verified)}
	}
	signed := ""
	if key != nil {
		n, p, err := auditchain.CheckSignatures(ctx, store, rep.Head.Seq, key)
		if err != nil {
			return err
		}
		if p != nil {
			return &exitError{code: exitBroken, err: fmt.Errorf("%w; the %d checkpoints before it verified", p, n)}
		}
		signed = fmt.Sprintf("; %d checkpoint signatures verified", n)
	}
	fmt.Fprintf(out, "audit chain verified: %d rows, seq 1 to %d, head %s%s; %d rows not sealed yet\n",
		rep.Verified, rep.Head.Seq, rep.Head.Hash, signed, rep.Unsealed)
	return nil
}

// auditVerifyExport verifies the export in file offline, with the public
// key when given, and prints the summary, or returns the first problem
// (exit status exitBroken).
func auditVerifyExport(file string, key ed25519.PublicKey, out io.Writer) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("--export: %w", err)
	}
	defer func() { _ = f.Close() }()
	rep, err := auditchain.VerifyExport(f, key)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if rep.Problem != nil {
		return &exitError{code: exitBroken, err: fmt.Errorf("%s: %w; %d rows before it verified", file, rep.Problem, rep.Verified)}
	}
	signed := fmt.Sprintf("%d checkpoints, %d signatures verified", rep.Checkpoints, rep.Signed)
	if key == nil {
		signed = fmt.Sprintf("%d checkpoints, signatures not checked (no --public-key)", rep.Checkpoints)
	}
	fmt.Fprintf(out, "audit export verified: %d rows, seq %d to %d, head %s; %s; rows after seq %d are covered by no checkpoint\n",
		rep.Verified, rep.From.Seq+1, rep.Head.Seq, rep.Head.Hash, signed, rep.LastCheckpoint)
	return nil
}
