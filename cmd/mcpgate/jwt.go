package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/gateway/auth"
)

func newJWTCmd(out io.Writer, getenv func(string) string) *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "jwt",
		Short: "agent session JWTs: mint one for development and tests",
	})
	var o mintOptions
	mint := withEnv(&cobra.Command{
		Use:   "mint --workspace W --task T --user U [--profile P] [--ttl 1h]",
		Short: "sign an agent session JWT and print it (the token only)",
		Long: `Sign an agent session JWT for user U running task T in workspace W and print
only the token, so that scripts can capture it. The gateway registers a task it
has never seen as running on its first call, so any task id works; U must be a
member of W (PUT /admin/v1/workspaces/W/members/U).

The key, in this order: --key-file (a PEM private key: RSA, ECDSA P-256 or
Ed25519, whose public key the gateway has in MCPGATE_JWT_PUBLIC_KEY_FILE);
--secret-file (a file holding the HS256 secret); MCPGATE_JWT_SECRET; with
--dev, the secret "mcpgate serve --dev" keeps in ` + devSecretsFile + `.
aud is MCPGATE_JWT_AUDIENCE (default mcpgate) and iss MCPGATE_JWT_ISSUER when
set, as the gateway requires. Before printing, the token is checked with the
verifier the gateway would build from the same environment.`,
		Example: `  export MCPGATE_TOKEN=$(mcpgate jwt mint --dev --workspace ws-demo --task task-2 --user alice --profile reader)
  MCPGATE_JWT_SECRET=… mcpgate jwt mint --workspace ws-1 --task t-1 --user u-1 --ttl 15m
  mcpgate jwt mint --key-file agent-signing.pem --workspace ws-1 --task t-1 --user u-1`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			tok, err := mintToken(o, getenv)
			if err != nil {
				return fmt.Errorf("jwt mint: %w", err)
			}
			_, err = fmt.Fprintln(out, tok)
			return err
		},
	},
		envVar{auth.EnvSecret, "the HS256 secret (when neither --key-file nor --secret-file is given)"},
		envVar{auth.EnvPublicKeyFile, "the gateway's public key: the --key-file token is checked against it"},
		envVar{auth.EnvAudience, "the token's aud (default mcpgate)"},
		envVar{auth.EnvIssuer, "the token's iss, when set"},
	)
	f := mint.Flags()
	f.StringVar(&o.workspace, "workspace", "", "workspace id, the workspace_id claim (required)")
	f.StringVar(&o.task, "task", "", "task id, the task_id claim (required)")
	f.StringVar(&o.user, "user", "", "acting user, the sub claim (required)")
	f.StringVar(&o.profile, "profile", "", "agent profile, the agent_profile_id claim (absent: the workspace default profile, else read-only)")
	f.DurationVar(&o.ttl, "ttl", time.Hour, "lifetime of the token")
	f.StringVar(&o.keyFile, "key-file", "", "PEM private key (RS256, ES256, EdDSA)")
	f.StringVar(&o.secretFile, "secret-file", "", "file holding the HS256 secret (surrounding white space ignored)")
	f.BoolVar(&o.dev, "dev", false, "use the secret of `mcpgate serve --dev` ("+devSecretsFile+" in the current folder)")
	cmd.AddCommand(mint)
	return cmd
}

type mintOptions struct {
	workspace, task, user, profile string
	ttl                            time.Duration
	keyFile, secretFile            string
	dev                            bool
}

// mintToken signs the token o asks for and checks it with the verifier the
// gateway would build from getenv, so a token the gateway would refuse is
// an error here rather than a 401 later.
func mintToken(o mintOptions, getenv func(string) string) (string, error) {
	if o.workspace == "" || o.task == "" || o.user == "" {
		return "", errors.New("--workspace, --task and --user are required")
	}
	cfg := auth.SignerConfig{Issuer: getenv(auth.EnvIssuer), Audience: getenv(auth.EnvAudience)}
	switch {
	case o.keyFile != "" && o.secretFile != "":
		return "", errors.New("--key-file and --secret-file both given; give one key")
	case o.keyFile != "":
		pem, err := os.ReadFile(o.keyFile)
		if err != nil {
			return "", fmt.Errorf("--key-file: %w", err)
		}
		cfg.PrivateKeyPEM = pem
	case o.secretFile != "":
		raw, err := os.ReadFile(o.secretFile)
		if err != nil {
			return "", fmt.Errorf("--secret-file: %w", err)
		}
		cfg.Secret = bytes.TrimSpace(raw)
	case getenv(auth.EnvSecret) != "":
		cfg.Secret = []byte(getenv(auth.EnvSecret))
	case o.dev:
		secret, err := readDevSecret(devSecretsFile)
		if err != nil {
			return "", err
		}
		cfg.Secret = []byte(secret)
	default:
		return "", fmt.Errorf("no signing key: set %s, or give --secret-file, --key-file (a private key matching %s), or --dev (the keys of `mcpgate serve --dev`)", auth.EnvSecret, auth.EnvPublicKeyFile)
	}
	signer, err := auth.NewSigner(cfg)
	if err != nil {
		return "", err
	}
	tok, err := signer.Sign(auth.AgentClaims{Subject: o.user, WorkspaceID: o.workspace, TaskID: o.task, ProfileID: o.profile}, o.ttl)
	if err != nil {
		return "", err
	}
	return tok, checkMinted(tok, cfg, getenv)
}

// checkMinted verifies tok as the gateway would: with the key its
// environment configures (MCPGATE_JWT_SECRET or MCPGATE_JWT_PUBLIC_KEY_FILE),
// or, when it configures none, with the secret tok was signed with. A token
// signed with a private key and no public key to check it against passes.
func checkMinted(tok string, signed auth.SignerConfig, getenv func(string) string) error {
	verify := auth.JWTConfig{Issuer: signed.Issuer, Audience: signed.Audience, Secret: []byte(getenv(auth.EnvSecret))}
	source := auth.EnvSecret
	if pub := getenv(auth.EnvPublicKeyFile); pub != "" {
		pem, err := os.ReadFile(pub)
		if err != nil {
			return fmt.Errorf("%s: %w", auth.EnvPublicKeyFile, err)
		}
		verify.PublicKeyPEM, source = pem, auth.EnvPublicKeyFile
	}
	if len(verify.Secret) == 0 && verify.PublicKeyPEM == nil {
		if signed.Secret == nil {
			return nil
		}
		verify.Secret, source = signed.Secret, "the signing secret"
	}
	v, err := auth.NewJWT(verify)
	if err != nil {
		return err
	}
	r, _ := http.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	if _, err := v.Authenticate(r); err != nil {
		return fmt.Errorf("a gateway verifying with %s would refuse this token: %v; sign with the key that matches it", source, err)
	}
	return nil
}

// readDevSecret reads the JWT secret `serve --dev` keeps in path, without
// creating the file.
func readDevSecret(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("--dev: no %s in this folder; run `make run` (or `mcpgate serve --dev`) here once to create it", path)
	}
	if err != nil {
		return "", fmt.Errorf("--dev: %w", err)
	}
	var secrets map[string]string
	if err := json.Unmarshal(raw, &secrets); err != nil || secrets[auth.EnvSecret] == "" {
		return "", fmt.Errorf("--dev: %s holds no %s; delete it and start `mcpgate serve --dev` again to make new keys", path, auth.EnvSecret)
	}
	return secrets[auth.EnvSecret], nil
}
