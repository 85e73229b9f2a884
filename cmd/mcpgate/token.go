package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/server"
)

type scopeList []string

func (s *scopeList) String() string     { return strings.Join(*s, ",") }
func (s *scopeList) Set(v string) error { *s = append(*s, v); return nil }

// token runs `mcpgate token create|list|revoke` directly on the store named
// by MCPGATE_DATABASE_URL (the admin API offers the same over HTTP).
func token(ctx context.Context, args []string, out io.Writer, getenv func(string) string) error {
	if len(args) == 0 {
		return fmt.Errorf("token: want create, list or revoke")
	}
	fs := flag.NewFlagSet("token "+args[0], flag.ContinueOnError)
	ws := fs.String("workspace", "", "workspace id")
	label := fs.String("label", "", "label shown in listings")
	var scopes scopeList
	fs.Var(&scopes, "scope", "scope (mcp:read, mcp:ops, management:read); repeat for several")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	url := getenv("MCPGATE_DATABASE_URL")
	if url == "" {
		url = "sqlite:mcpgate.db"
	}
	if err := existingSQLite(url); err != nil {
		return err
	}
	store, err := server.OpenStore(ctx, url)
	if err != nil {
		return err
	}
	defer func() { _ = store.Close() }()
	switch args[0] {
	case "create":
		return tokenCreate(ctx, store, out, *ws, *label, scopes)
	case "list":
		return tokenList(ctx, store, out, *ws)
	case "revoke":
		if fs.NArg() != 1 {
			return fmt.Errorf("token revoke: want exactly one fingerprint")
		}
		if err := store.RevokeAPIToken(ctx, fs.Arg(0)); err != nil {
			return err
		}
		fmt.Fprintln(out, "revoked", fs.Arg(0))
		return nil
	default:
		return fmt.Errorf("token: unknown subcommand %q; want create, list or revoke", args[0])
	}
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
	path, ok := strings.CutPrefix(url, "sqlite:")
	path, _, _ = strings.Cut(path, "?")
	if !ok || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no database at %s: set MCPGATE_DATABASE_URL to the gateway's store (make run uses sqlite:mcpgate-dev.db; production a postgres:// URL), or create one with `mcpgate migrate`", path)
	}
	return nil
}
