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

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/gateway/config"
)

func newJWTCmd(out io.Writer, getenv func(string) string) *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "jwt",
		Short: "mint agent session, cc_server and console sign-in JWTs for development and tests",
	})
	var o mintOptions
	mint := withEnv(&cobra.Command{
		Use:   "mint --workspace W --task T --user U [--profile P] [--ttl 1h] | mint --cc --user U [--mode M] [--workspace W] [--ticket T] [--kind K] | mint --console --workspace W --user U [--ttl 2h]",
		Short: "sign an agent session JWT (or, with --cc, a cc_server JWT; with --console, a console sign-in JWT) and print it (the token only)",
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
verifier the gateway would build from the same environment.

With --cc the token is a cc_server JWT instead (the cc_server surface,
MCPGATE_CCSERVER_LISTEN): only --user is required; --mode sets the
conversation mode (chat, plan, review, orchestrate; absent: chat), --workspace
pins a server-started agent to that workspace (absent: the user's memberships
decide), --ticket names the run's own ticket and --kind sets user or agent.
Its aud is MCPGATE_CCSERVER_JWT_AUDIENCE (default ` + config.DefaultCCServerAudience + `); key and iss as above.

With --console the token is a console sign-in JWT for user U of workspace W
(aud ` + auth.ConsoleAudience + `, at most ` + auth.ConsoleMaxLifetime.String() + `; key and iss as above): when U's role in W
is owner or admin, U signs in at /console with it and manages W's API tokens.`,
		Example: `  export MCPGATE_TOKEN=$(mcpgate jwt mint --dev --workspace ws-demo --task task-2 --user alice --profile reader)
  MCPGATE_JWT_SECRET=… mcpgate jwt mint --workspace ws-1 --task t-1 --user u-1 --ttl 15m
  mcpgate jwt mint --key-file agent-signing.pem --workspace ws-1 --task t-1 --user u-1
  export CC_TOKEN=$(mcpgate jwt mint --dev --cc --user alice --mode plan)
  mcpgate jwt mint --dev --console --workspace ws-demo --user alice --ttl 2h`,
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
		envVar{auth.EnvCCServerAudience, "the aud of a --cc token (default " + config.DefaultCCServerAudience + ")"},
	)
	f := mint.Flags()
	f.StringVar(&o.workspace, "workspace", "", "workspace id, the workspace_id claim (required)")
	f.StringVar(&o.task, "task", "", "task id, the task_id claim (required)")
	f.StringVar(&o.user, "user", "", "acting user, the sub claim (required)")
	f.StringVar(&o.profile, "profile", "", "agent profile, the agent_profile_id claim (absent: the workspace default profile, else read-only)")
	f.DurationVar(&o.ttl, "ttl", time.Hour, "lifetime of the token")
	f.StringVar(&o.keyFile, "key-file", "", "PEM private key (RS256, ES256, EdDSA)")
	f.StringVar(&o.secretFile, "secret-file", "", "file holding the HS256 secret (surrounding white space ignored)")
	f.BoolVar(&o.cc, "cc", false, "a cc_server JWT (own audience; claims sub, mode, workspace_id, ticket_id, kind) instead of an agent session JWT")
	f.StringVar(&o.mode, "mode", "", "with --cc: the conversation mode, the mode claim (chat, plan, review, orchestrate; absent: chat)")
	f.StringVar(&o.ticket, "ticket", "", "with --cc: the run's own ticket, the ticket_id claim")
	f.StringVar(&o.kind, "kind", "", "with --cc: user or agent, the kind claim (absent: agent when --workspace is given, else user)")
	f.BoolVar(&o.console, "console", false, "a console sign-in JWT for --user of --workspace (aud "+auth.ConsoleAudience+", at most "+auth.ConsoleMaxLifetime.String()+"): an owner or admin of the workspace manages its API tokens in /console")
	f.BoolVar(&o.dev, "dev", false, "use the secret of `mcpgate serve --dev` ("+devSecretsFile+" in the current folder)")
	cmd.AddCommand(mint, newJWKSCmd(out))
	return cmd
}

// newJWKSCmd prints the JWKS of private keys: the key set a development
// identity provider publishes (docs/operations.md, "Identity provider").
func newJWKSCmd(out io.Writer) *cobra.Command {
	var keyFiles []string
	cmd := &cobra.Command{
		Use:   "jwks --key-file KEY [--key-file KEY2 …]",
		Short: "print the JWKS of PEM private keys, for a development identity provider (MCPGATE_JWT_JWKS_URL)",
		Long: `Print the JWKS document ({"keys":[…]}) of the public halves of the given PEM
private keys (RSA of at least 2048 bits, ECDSA P-256 or Ed25519), each with
use "sig", its algorithm and a kid derived from the key. Served by any web
server, it is a key set the gateway verifies agent and cc_server JWTs with
(MCPGATE_JWT_JWKS_URL) while "mcpgate jwt mint --key-file KEY" signs them;
give two keys to rotate from one to the other.`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if len(keyFiles) == 0 {
				return fmt.Errorf("give at least one --key-file (a PEM private key)")
			}
			pems := make([][]byte, 0, len(keyFiles))
			for _, f := range keyFiles {
				b, err := os.ReadFile(f)
				if err != nil {
					return fmt.Errorf("--key-file: %w", err)
				}
				pems = append(pems, b)
			}
			doc, err := auth.PublicJWKS(pems...)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(out, "%s\n", doc)
			return err
		},
	}
	cmd.Flags().StringArrayVar(&keyFiles, "key-file", nil, "PEM private key (repeat for several)")
	return cmd
}

type mintOptions struct {
	workspace, task, user, profile string
	ttl                            time.Duration
	keyFile, secretFile            string
	dev                            bool
	cc                             bool // a cc_server token: mode, ticket and kind apply
	console                        bool // a console sign-in token of a workspace owner or admin
	mode, ticket, kind             string
}

// mintToken signs the token o asks for and checks it with the verifier the
// gateway would build from getenv, so a token the gateway would refuse is
// an error here rather than a 401 later.
func mintToken(o mintOptions, getenv func(string) string) (string, error) {
	cfg := auth.SignerConfig{Issuer: getenv(auth.EnvIssuer), Audience: getenv(auth.EnvAudience)}
	switch {
	case o.console && (o.cc || o.task != "" || o.profile != "" || o.mode != "" || o.ticket != "" || o.kind != ""):
		return "", errors.New("a --console token takes only --workspace, --user and --ttl")
	case o.console && (o.workspace == "" || o.user == ""):
		return "", errors.New("--workspace and --user are required")
	case o.console:
	case o.cc && (o.task != "" || o.profile != ""):
		return "", errors.New("--task and --profile are claims of agent session tokens; a --cc token takes --user, --mode, --workspace, --ticket and --kind")
	case o.cc && o.user == "":
		return "", errors.New("--user is required")
	case o.cc:
		cfg.Audience = getenv(auth.EnvCCServerAudience)
		if cfg.Audience == "" {
			cfg.Audience = config.DefaultCCServerAudience
		}
	case o.mode != "" || o.ticket != "" || o.kind != "":
		return "", errors.New("--mode, --ticket and --kind are claims of cc_server tokens; add --cc")
	case o.workspace == "" || o.task == "" || o.user == "":
		return "", errors.New("--workspace, --task and --user are required")
	}
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
	var tok string
	if o.console {
		tok, err = signer.SignConsole(o.workspace, o.user, o.ttl)
	} else if o.cc {
		tok, err = signer.SignCCServer(auth.CCClaims{Subject: o.user, Kind: o.kind, Mode: o.mode, WorkspaceID: o.workspace, TicketID: o.ticket}, o.ttl)
	} else {
		tok, err = signer.Sign(auth.AgentClaims{Subject: o.user, WorkspaceID: o.workspace, TaskID: o.task, ProfileID: o.profile}, o.ttl)
	}
	if err != nil {
		return "", err
	}
	return tok, checkMinted(tok, o, cfg, getenv)
}

// checkMinted verifies tok as the gateway would: with the key its
// environment configures (MCPGATE_JWT_SECRET or MCPGATE_JWT_PUBLIC_KEY_FILE),
// or, when it configures none, with the secret tok was signed with. A token
// signed with a private key and no public key to check it against passes.
func checkMinted(tok string, o mintOptions, signed auth.SignerConfig, getenv func(string) string) error {
	verify := auth.JWTConfig{Issuer: signed.Issuer, Audience: signed.Audience, Secret: []byte(getenv(auth.EnvSecret)), Leeway: config.DefaultJWTLeeway}
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
	var authn interface {
		Authenticate(*http.Request) (*gateway.Principal, error)
	} = v
	if o.cc {
		authn = auth.CCServer{J: v}
	}
	if o.console {
		_, _, _, err = v.ConsoleUser(tok)
	} else {
		_, err = authn.Authenticate(r)
	}
	if err != nil {
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
