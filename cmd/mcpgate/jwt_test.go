package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
)

var testSecret = strings.Repeat("s", 32)

func mint(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	out, err := runCmd(t, env, append([]string{"jwt", "mint"}, args...)...)
	return strings.TrimSpace(out), err
}

// authenticate verifies tok with the verifier the gateway builds.
func authenticate(t *testing.T, cfg auth.JWTConfig, tok string) (*gateway.Principal, error) {
	t.Helper()
	v, err := auth.NewJWT(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	return v.Authenticate(r)
}

// TestMintOpensASession: a token of `jwt mint` opens an MCP session on a
// gateway wired as `serve` wires it, for a task the gateway has never seen.
func TestMintOpensASession(t *testing.T) {
	env := map[string]string{
		"MCPGATE_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "g.db"),
		"MCPGATE_JWT_SECRET":   testSecret,
		"MCPGATE_JWT_ISSUER":   "https://platform.example",
		"MCPGATE_JWT_AUDIENCE": "gw-test",
	}
	tok, err := mint(t, env, "--workspace", "ws-m", "--task", "task-new", "--user", "carol", "--profile", "p-1", "--ttl", "10m")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(tok, ".") != 2 || strings.ContainsAny(tok, " \n") {
		t.Fatalf("output %q is not just a token", tok)
	}
	p, err := authenticate(t, auth.JWTConfig{Secret: []byte(testSecret), Issuer: "https://platform.example", Audience: "gw-test"}, tok)
	if err != nil {
		t.Fatal(err)
	}
	if p.Subject != "carol" || p.WorkspaceID != "ws-m" || p.TaskID != "task-new" || p.ProfileID != "p-1" {
		t.Fatalf("principal %+v", p)
	}

	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	app, err := server.Open(ctx, cfg, zap.NewNop(), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if err := app.Store.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-m", Name: "M", Slug: "m"}); err != nil {
		t.Fatal(err)
	}
	if err := app.Store.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-m", UserID: "carol", Role: gateway.RoleOwner}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Server)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize with the minted token: %d, session %q", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
	}
}

func TestMintKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keyPair := func(name string) (priv, pub string) {
		pk, sk, _ := ed25519.GenerateKey(rand.Reader)
		der, _ := x509.MarshalPKCS8PrivateKey(sk)
		pubDER, _ := x509.MarshalPKIXPublicKey(pk)
		return write(name+".pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
			write(name+".pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}))
	}
	priv, pub := keyPair("a")
	_, otherPub := keyPair("b")
	secretFile := write("secret", []byte(testSecret+"\n"))
	claims := []string{"--workspace", "w", "--task", "t", "--user", "u"}

	t.Run("key file, checked against the gateway's public key", func(t *testing.T) {
		tok, err := mint(t, map[string]string{"MCPGATE_JWT_PUBLIC_KEY_FILE": pub}, append(claims, "--key-file", priv)...)
		if err != nil {
			t.Fatal(err)
		}
		pem, _ := os.ReadFile(pub)
		if _, err := authenticate(t, auth.JWTConfig{PublicKeyPEM: pem}, tok); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("key file that does not match", func(t *testing.T) {
		_, err := mint(t, map[string]string{"MCPGATE_JWT_PUBLIC_KEY_FILE": otherPub}, append(claims, "--key-file", priv)...)
		if err == nil || !strings.Contains(err.Error(), "would refuse") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("key file while the gateway uses a secret", func(t *testing.T) {
		_, err := mint(t, map[string]string{"MCPGATE_JWT_SECRET": testSecret}, append(claims, "--key-file", priv)...)
		if err == nil || !strings.Contains(err.Error(), "MCPGATE_JWT_SECRET would refuse") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("secret file", func(t *testing.T) {
		tok, err := mint(t, nil, append(claims, "--secret-file", secretFile)...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := authenticate(t, auth.JWTConfig{Secret: []byte(testSecret)}, tok); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("dev secrets", func(t *testing.T) {
		work := t.TempDir()
		t.Chdir(work)
		_, err := mint(t, nil, append(claims, "--dev")...)
		if err == nil || !strings.Contains(err.Error(), "make run") {
			t.Fatalf("without the dev secrets file: %v", err)
		}
		if entries, _ := os.ReadDir(work); len(entries) != 0 {
			t.Fatal("jwt mint --dev created a file")
		}
		secrets := loadDevSecrets(devSecretsFile) // what serve --dev does
		tok, err := mint(t, nil, append(claims, "--dev")...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := authenticate(t, auth.JWTConfig{Secret: []byte(secrets["MCPGATE_JWT_SECRET"])}, tok); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		t.Chdir(t.TempDir())
		for _, tc := range []struct {
			env  map[string]string
			args []string
			want string
		}{
			{nil, claims, "no signing key"},
			{map[string]string{"MCPGATE_JWT_SECRET": testSecret}, []string{"--workspace", "w", "--user", "u"}, "--task"},
			{map[string]string{"MCPGATE_JWT_SECRET": "short"}, claims, "at least 32 bytes"},
			{map[string]string{"MCPGATE_JWT_SECRET": testSecret}, append(claims, "--ttl", "-1h"), "not positive"},
			{nil, append(claims, "--key-file", priv, "--secret-file", secretFile), "give one key"},
			{nil, append(claims, "--key-file", filepath.Join(dir, "missing.pem")), "--key-file"},
		} {
			if _, err := mint(t, tc.env, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v %v: err %v, want %q", tc.env, tc.args, err, tc.want)
			}
		}
	})
}

// TestMintCCServer: `jwt mint --cc` signs a cc_server token with the
// cc_server audience (MCPGATE_CCSERVER_JWT_AUDIENCE, default
// mcpgate-ccserver) and the mode, workspace, ticket and kind claims, which
// the cc_server verifier reads back and the agent verifier refuses;
// agent-only flags with --cc, and cc_server flags without it, are errors.
func TestMintCCServer(t *testing.T) {
	env := map[string]string{"MCPGATE_JWT_SECRET": testSecret}
	verify := func(aud, tok string) (*gateway.Principal, error) {
		v, err := auth.NewJWT(auth.JWTConfig{Secret: []byte(testSecret), Audience: aud})
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return auth.CCServer{J: v}.Authenticate(r)
	}
	tok, err := mint(t, env, "--cc", "--user", "ada", "--mode", "plan", "--ticket", "TCK-1")
	if err != nil {
		t.Fatal(err)
	}
	p, err := verify(config.DefaultCCServerAudience, tok)
	if err != nil {
		t.Fatal(err)
	}
	if p.Subject != "ada" || p.Mode != "plan" || p.TicketID != "TCK-1" || p.WorkspaceID != "" || p.Kind != gateway.PrincipalUser {
		t.Fatalf("principal %+v", p)
	}
	if _, err := authenticate(t, auth.JWTConfig{Secret: []byte(testSecret)}, tok); err == nil {
		t.Fatal("the agent verifier accepted a cc_server token")
	}

	env[auth.EnvCCServerAudience] = "cc-aud"
	tok, err = mint(t, env, "--cc", "--user", "bot", "--workspace", "ws-globex")
	if err != nil {
		t.Fatal(err)
	}
	if p, err = verify("cc-aud", tok); err != nil || p.WorkspaceID != "ws-globex" || p.Kind != gateway.PrincipalAgent || p.Mode != "" {
		t.Fatalf("pinned agent: %+v %v", p, err)
	}

	for _, args := range [][]string{
		{"--cc", "--user", "ada", "--task", "t-1"},
		{"--cc", "--mode", "chat"},
		{"--workspace", "ws-1", "--task", "t-1", "--user", "u", "--mode", "plan"},
	} {
		if _, err := mint(t, env, args...); err == nil {
			t.Errorf("jwt mint %v: no error", args)
		}
	}
}

func TestMintConsole(t *testing.T) {
	env := map[string]string{"MCPGATE_JWT_SECRET": testSecret}
	tok, err := mint(t, env, "--console", "--workspace", "ws-1", "--user", "ada", "--ttl", "2h")
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewJWT(auth.JWTConfig{Secret: []byte(testSecret)})
	if err != nil {
		t.Fatal(err)
	}
	if ws, user, _, err := v.ConsoleUser(tok); err != nil || ws != "ws-1" || user != "ada" {
		t.Fatalf("ConsoleUser = %q %q %v", ws, user, err)
	}
	if _, err := authenticate(t, auth.JWTConfig{Secret: []byte(testSecret)}, tok); err == nil {
		t.Fatal("the agent verifier accepted a console sign-in token")
	}
	for _, args := range [][]string{
		{"--console", "--user", "ada"},
		{"--console", "--workspace", "ws-1", "--user", "ada", "--task", "t-1"},
		{"--console", "--workspace", "ws-1", "--user", "ada", "--ttl", "24h"},
	} {
		if _, err := mint(t, env, args...); err == nil {
			t.Errorf("jwt mint %v: no error", args)
		}
	}
}
