package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
)

// newPolicyReloadCmd is `mcpgate policy reload`: it asks a running gateway
// (POST /admin/v1/policy/reload) to load its policy folder again, and
// prints what happened. A refused bundle is an error (exit status 1) with
// OPA's message, so a deploy script stops there.
func newPolicyReloadCmd(out io.Writer, getenv func(string) string) *cobra.Command {
	var url string
	cmd := withEnv(&cobra.Command{
		Use:   "reload [--url URL]",
		Short: "reload a running gateway's MCPGATE_POLICY_DIR now (it goes live only if it compiles and its tests pass)",
		Long: `Ask a running gateway to load its policy folder (MCPGATE_POLICY_DIR) again,
without waiting for the folder watch. The candidate goes live only when it
compiles, defines the decision queries and its own *_test.rego pass; otherwise
the running revision stays and this command fails with OPA's message. The
shadow folder (MCPGATE_SHADOW_POLICY_DIR), when set, is loaded again too.
A gateway that serves its embedded bundle never reloads (an error).`,
		Example: `  mcpgate policy reload
  mcpgate policy reload --url https://gateway.internal:8080`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if url == "" {
				url = "http://" + listenOr(getenv("MCPGATE_LISTEN"))
			}
			return policyReload(c.Context(), out, url, getenv("MCPGATE_ADMIN_TOKEN"))
		},
	}, envVar{"MCPGATE_ADMIN_TOKEN", "the gateway's admin token (required)"},
		envVar{"MCPGATE_LISTEN", "the gateway's address when --url is not given (default 127.0.0.1:8080)"})
	cmd.Flags().StringVar(&url, "url", "", "the gateway's base URL (default http://$MCPGATE_LISTEN)")
	return cmd
}

// listenOr is addr, or the gateway's default listen address.
func listenOr(addr string) string {
	if addr == "" {
		return "127.0.0.1:8080"
	}
	return addr
}

// policyReload posts the reload and prints the attempt.
func policyReload(ctx context.Context, out io.Writer, base, token string) error {
	if token == "" {
		return fmt.Errorf("MCPGATE_ADMIN_TOKEN is unset: set it to the gateway's admin token (mcpgate serve --dev printed it and keeps it in %s)", devSecretsFile)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // the bundle's tests run before the reply
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/admin/v1/policy/reload", nil)
	if err != nil {
		return fmt.Errorf("--url %q: %w", base, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the gateway at %s does not answer (%w); is it running, and is --url right?", base, err)
	}
	defer resp.Body.Close()
	var body struct {
		Attempt *policystatus.Attempt `json:"attempt"`
		Status  *policystatus.Status  `json:"status"`
		Error   struct{ Code, Message string }
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return fmt.Errorf("the gateway at %s answered %s with a body that is not the admin API's: %w", base, resp.Status, err)
	}
	if body.Attempt == nil || body.Status == nil {
		return fmt.Errorf("reload refused (%s): %s", resp.Status, body.Error.Message)
	}
	at, st := body.Attempt, body.Status
	// The count is runBundleTests': every test of every package in the
	// folder that passed, which is OPA's "PASS: n" for the folder.
	const counted = "tests passed: every test in the folder, as `mcpgate policy test` counts them"
	switch at.Outcome {
	case policystatus.Live:
		fmt.Fprintf(out, "policy revision %s is live (%d %s; source %s)\n", st.Revision, at.Tests, counted, st.Source)
	case policystatus.Unchanged:
		fmt.Fprintf(out, "policy revision %s is already live; nothing changed (%d %s)\n", st.Revision, at.Tests, counted)
	default:
		return fmt.Errorf("policy bundle %s refused, revision %s stays live: %s", at.Revision, st.Revision, at.Error)
	}
	if st.Shadow != nil {
		fmt.Fprintf(out, "shadow revision %s (source %s)\n", orNone(st.Shadow.Revision), st.Shadow.Source)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none (refused)"
	}
	return s
}
