package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
)

func newTokenCmd(out io.Writer, getenv func(string) string) *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "token",
		Short: "create, list and revoke scmt_ API tokens of external coordinators",
		Long: `Create, list and revoke the workspace-bound scmt_ API tokens of external
coordinators, directly on the store MCPGATE_DATABASE_URL names (the admin API
offers the same over HTTP). A SQLite file that does not exist is refused rather
than created: the commands must work on the gateway's own store.`,
	})
	withEnv(cmd, databaseURLEnv)

	var ws, label string
	var scopes []string
	create := withEnv(&cobra.Command{
		Use:     "create --workspace WS --label L --scope SCOPE [--scope SCOPE…]",
		Short:   "create a token and print it (the only time it is shown)",
		Example: "  mcpgate token create --workspace ws-demo --label ci --scope mcp:read --scope mcp:ops",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return withStore(c.Context(), getenv, func(store server.FullStore) error {
				return tokenCreate(c.Context(), store, out, ws, label, scopes)
			})
		},
	}, databaseURLEnv)
	create.Flags().StringVar(&ws, "workspace", "", "workspace id (required)")
	create.Flags().StringVar(&label, "label", "", "label shown in listings (required)")
	create.Flags().StringArrayVar(&scopes, "scope", nil, "scope: "+strings.Join(admin.Scopes, ", ")+"; repeat for several (at least one)")

	var listWS string
	list := withEnv(&cobra.Command{
		Use:   "list --workspace WS",
		Short: "list a workspace's tokens: fingerprint, label, scopes, status, times (never the value)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return withStore(c.Context(), getenv, func(store server.FullStore) error {
				return tokenList(c.Context(), store, out, listWS)
			})
		},
	}, databaseURLEnv)
	list.Flags().StringVar(&listWS, "workspace", "", "workspace id (required)")

	revoke := withEnv(&cobra.Command{
		Use:   "revoke FINGERPRINT",
		Short: "revoke a token at once (its fingerprint is in token list)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return withStore(c.Context(), getenv, func(store server.FullStore) error {
				if err := store.RevokeAPIToken(c.Context(), args[0]); err != nil {
					return err
				}
				fmt.Fprintln(out, "revoked", args[0])
				return nil
			})
		},
	}, databaseURLEnv)
	cmd.AddCommand(create, list, revoke)
	return cmd
}

// withStore opens the existing store MCPGATE_DATABASE_URL names, runs f on
// it and closes it.
func withStore(ctx context.Context, getenv func(string) string, f func(server.FullStore) error) error {
	url := databaseURL(getenv)
	if err := existingSQLite(url); err != nil {
		return err
	}
	store, err := server.OpenStore(ctx, url)
	if err != nil {
		return err
	}
	defer func() { _ = store.Close() }()
	return f(store)
}

func tokenCreate(ctx context.Context, store server.FullStore, out io.Writer, ws, label string, scopes []string) error {
	if ws == "" || label == "" || len(scopes) == 0 {
		return fmt.Errorf("token create: --workspace, --label and at least one --scope are required")
	}
	for _, s := range scopes {
		if !slices.Contains(admin.Scopes, s) {
			return fmt.Errorf("token create: unknown scope %q; want one of %s", s, strings.Join(admin.Scopes, ", "))
		}
	}
	value, t := admin.NewAPIToken(ws, label, scopes, time.Now().UTC())
	if err := store.CreateAPIToken(ctx, t); err != nil {
		return err
	}
	fmt.Fprintf(out, "token:       %s\nfingerprint: %s\n(the token is shown only now; store it safely)\n", value, t.Fingerprint)
	return nil
}

func tokenList(ctx context.Context, store server.FullStore, out io.Writer, ws string) error {
	if ws == "" {
		return fmt.Errorf("token list: --workspace is required")
	}
	list, err := store.ListAPITokens(ctx, ws)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FINGERPRINT\tLABEL\tSCOPES\tSTATUS\tCREATED\tLAST USED")
	for _, t := range list {
		last := "-"
		if t.LastUsedAt != nil {
			last = t.LastUsedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Fingerprint, t.Label, strings.Join(t.Scopes, ","), t.Status, t.CreatedAt.Format(time.RFC3339), last)
	}
	return tw.Flush()
}

// existingSQLite refuses an sqlite: URL whose file does not exist: opening
// it would create an empty store that no gateway uses, and the token
// commands would then fail on a workspace nobody can see.
func existingSQLite(url string) error {
	path, ok, err := config.SQLitePath(url)
	if err != nil {
		return fmt.Errorf("MCPGATE_DATABASE_URL=%w", err)
	}
	path, _, _ = strings.Cut(path, "?")
	if !ok || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no database at %s: set MCPGATE_DATABASE_URL to the gateway's store (make run uses sqlite:mcpgate-dev.db; production a postgres:// URL), or create one with `mcpgate migrate`", path)
	}
	return nil
}
