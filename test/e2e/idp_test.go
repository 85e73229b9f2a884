package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcpgate/mcpgate/gateway/auth"
)

// rotatingProvider is zitadel/oidc's example OpenID provider (the real
// op package: discovery, keys endpoint, token endpoint) whose signing key
// the test rotates, and whose client_credentials tokens are agent session
// JWTs: aud mcpgate, the subject and workspace claims the test names.
type rotatingProvider struct {
	*storage.Storage
	mu   sync.Mutex
	keys []*providerKey // published; the last one signs
	sub  string
}

type providerKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k *providerKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *providerKey) Key() any                                    { return k.key }
func (k *providerKey) ID() string                                  { return k.id }

// publishedKey is a providerKey as the keys endpoint shows it.
type publishedKey struct{ k *providerKey }

func (p publishedKey) ID() string                         { return p.k.id }
func (p publishedKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (p publishedKey) Use() string                        { return "sig" }
func (p publishedKey) Key() any                           { return &p.k.key.PublicKey }

// addKey publishes a new key, which signs from now on.
func (p *rotatingProvider) addKey(t *testing.T, id string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	p.mu.Lock()
	p.keys = append(p.keys, &providerKey{id: id, key: key})
	p.mu.Unlock()
}

// dropKey stops publishing the key id.
func (p *rotatingProvider) dropKey(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, k := range p.keys {
		if k.id == id {
			p.keys = append(p.keys[:i], p.keys[i+1:]...)
			return
		}
	}
}

func (p *rotatingProvider) SigningKey(context.Context) (op.SigningKey, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keys[len(p.keys)-1], nil
}

func (p *rotatingProvider) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (p *rotatingProvider) KeySet(context.Context) ([]op.Key, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]op.Key, 0, len(p.keys))
	for _, k := range p.keys {
		out = append(out, publishedKey{k})
	}
	return out, nil
}

// jwtClient makes the example's service user receive JWT access tokens.
type jwtClient struct{ op.Client }

func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }

func (p *rotatingProvider) ClientCredentials(ctx context.Context, id, secret string) (op.Client, error) {
	c, err := p.Storage.ClientCredentials(ctx, id, secret)
	if err != nil {
		return nil, err
	}
	return jwtClient{c}, nil
}

func (p *rotatingProvider) ClientCredentialsTokenRequest(_ context.Context, _ string, scopes []string) (op.TokenRequest, error) {
	return &oidc.JWTTokenRequest{Subject: p.sub, Audience: []string{"mcpgate"}, Scopes: scopes}, nil
}

func (p *rotatingProvider) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return map[string]any{"workspace_id": "ws-a", "task_id": "task-ws-a", "agent_profile_id": "reader"}, nil
}

// startProvider serves the provider on a loopback server; its URL is
// the issuer.
func startProvider(t *testing.T) (*rotatingProvider, *httptest.Server) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	t.Cleanup(srv.Close)
	p := &rotatingProvider{Storage: storage.NewStorage(storage.NewUserStore(srv.URL)), sub: "mia"}
	p.addKey(t, "key-1")
	srv.Config.Handler = exampleop.SetupServer(srv.URL, p, nil, false)
	return p, srv
}

// issue asks the provider's token endpoint for a token (client
// credentials of the example's service user).
func issue(t *testing.T, provider *httptest.Server) string {
	t.Helper()
	resp, err := http.PostForm(provider.URL+"/oauth/token", url.Values{
		"grant_type": {"client_credentials"}, "client_id": {"sid1"}, "client_secret": {"verysecret"}, "scope": {"openid"},
	})
	must(t, err)
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tok) != nil || strings.Count(tok.AccessToken, ".") != 2 {
		t.Fatalf("token endpoint: %d %s; want a JWT access token", resp.StatusCode, body)
	}
	return tok.AccessToken
}

// initialize posts an MCP initialize with token and returns the status.
func (g *gatewayUnderTest) initialize(t *testing.T, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, g.srv.URL+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+protocolVersion+`","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (g *gatewayUnderTest) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(g.srv.URL + path)
	must(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestIdentityProviderRotation runs the gateway against a real OpenID
// provider found by discovery (docs/operations.md, "Identity provider"): its tokens open sessions, a
// key rotated in works without a restart, a key removed stops verifying
// after the next refresh, and a provider that goes away leaves the
// cached keys working with /readyz degraded.
func TestIdentityProviderRotation(t *testing.T) {
	p, provider := startProvider(t)
	g := startGateway(t, "sqlite:"+filepath.Join(t.TempDir(), "idp.db"), map[string]string{
		"MCPGATE_JWT_SECRET": "", "MCPGATE_JWT_DISCOVERY": "true", "MCPGATE_JWT_ISSUER": provider.URL,
		"MCPGATE_PUBLIC_URL": "http://127.0.0.1",
	})
	seedFixtures(t, g)
	if code, body := g.get(t, "/.well-known/oauth-protected-resource"); code != http.StatusOK || !strings.Contains(body, `"authorization_servers":["`+provider.URL+`"]`) {
		t.Fatalf("resource metadata: %d %s; want the issuer as authorization server (RFC 9728)", code, body)
	}
	oldTok := issue(t, provider)
	cs := g.connect(t, oldTok)
	if tools := listed(t, cs); len(tools) == 0 {
		t.Fatal("a session of the provider's token lists no tools")
	}

	p.addKey(t, "key-2") // the provider rotates: key-2 signs, key-1 still published
	newTok := issue(t, provider)
	if code, body := g.initialize(t, newTok); code != http.StatusOK {
		t.Fatalf("token of the rotated-in key: %d %s; want it accepted without a restart", code, body)
	}
	if code, _ := g.initialize(t, oldTok); code != http.StatusOK {
		t.Fatalf("token of the old key while it is still published: %d", code)
	}

	p.dropKey("key-1")
	if !g.app.Keys.Refresh() {
		t.Fatal("refresh from the provider failed")
	}
	if code, body := g.initialize(t, oldTok); code != http.StatusUnauthorized || !strings.Contains(body, "not in the identity provider's key set") {
		t.Fatalf("token of the removed key: %d %s; want 401 naming the key set", code, body)
	}

	provider.Close() // the provider goes away
	if g.app.Keys.Refresh() {
		t.Fatal("a refresh from a closed provider succeeded")
	}
	if code, body := g.get(t, "/readyz"); code != http.StatusOK || !strings.Contains(body, `"jwks":{"state":"degraded","keys":1}`) {
		t.Fatalf("/readyz with the provider down: %d %s; want ready, jwks degraded with the cached key", code, body)
	}
	if code, body := g.initialize(t, newTok); code != http.StatusOK {
		t.Fatalf("cached key with the provider down: %d %s", code, body)
	}
}

// TestIdentityProviderBadInput starts the gateway against a JWKS URL that
// serves what a broken or hostile provider could (docs/operations.md,
// "Identity provider"): a page that is not JSON, a key whose alg is
// none, an RSA key under 2048 bits, a 10 MB document, and a provider that
// never answers. Each time the gateway starts within its bound (the
// JWKS request timeout), logs a line that says what is wrong, reports
// /readyz not ready with jwks degraded (no key ever fetched), and refuses
// a token with 401, without crashing.
func TestIdentityProviderBadInput(t *testing.T) {
	t.Parallel()
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	must(t, err)
	good, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	jwks := func(keys ...jose.JSONWebKey) []byte {
		b, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
		must(t, err)
		return b
	}
	for name, tc := range map[string]struct {
		body []byte // nil: never answer
		log  string
	}{
		"not JSON":      {[]byte("<html>sign in</html>"), "failed to decode JWK Set"},
		"alg none":      {jwks(jose.JSONWebKey{Key: &good.PublicKey, KeyID: "n", Algorithm: "none", Use: "sig"}), `declares alg "none"`},
		"RSA 1024 bits": {jwks(jose.JSONWebKey{Key: &small.PublicKey, KeyID: "s", Algorithm: "RS256", Use: "sig"}), "RSA key has 1024 bits; use at least 2048"},
		"10 MB":         {[]byte(`{"keys":[` + strings.Repeat(`{"kty":"oct","k":"AAAA"},`, 10<<20/25) + `{}]}`), "larger than 1048576 bytes"},
		"never answers": {nil, "context deadline exceeded"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.body == nil {
					select {
					case <-release:
					case <-r.Context().Done():
					}
					return
				}
				_, _ = w.Write(tc.body)
			}))
			t.Cleanup(provider.Close)
			t.Cleanup(func() { close(release) })
			core, logs := observer.New(zap.InfoLevel)
			start := time.Now()
			g := startGatewayLogging(t, "sqlite:"+filepath.Join(t.TempDir(), "idp.db"), map[string]string{
				"MCPGATE_JWT_SECRET": "", "MCPGATE_JWT_JWKS_URL": provider.URL, "MCPGATE_JWT_ISSUER": provider.URL,
			}, zap.New(core))
			if took := time.Since(start); took > auth.DefaultJWKSTimeout+5*time.Second {
				t.Fatalf("the gateway took %s to start; want at most the JWKS timeout %s and a little", took, auth.DefaultJWKSTimeout)
			}
			if !loggedLine(logs, tc.log) {
				t.Fatalf("no log line saying %q: %v", tc.log, logs.All())
			}
			if code, body := g.get(t, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"jwks":{"state":"degraded","keys":0}`) {
				t.Fatalf("/readyz: %d %s; want 503 with jwks degraded and no key", code, body)
			}
			tok := signRS256(t, good, "a")
			began := time.Now()
			if code, body := g.initialize(t, tok); code != http.StatusUnauthorized {
				t.Fatalf("a token with no key to verify it: %d %s; want 401", code, body)
			}
			if took := time.Since(began); took > auth.DefaultJWKSTimeout/2 {
				t.Fatalf("the refusal took %s: the call waited for the provider", took)
			}
		})
	}
}

// loggedLine reports whether a log line's message or one of its fields
// contains want.
func loggedLine(logs *observer.ObservedLogs, want string) bool {
	for _, e := range logs.All() {
		if strings.Contains(e.Message, want) {
			return true
		}
		for k, v := range e.ContextMap() {
			if strings.Contains(k+"="+fmt.Sprint(v), want) {
				return true
			}
		}
	}
	return false
}

// signRS256 is a token of the test's claims signed by key with kid.
func signRS256(t *testing.T, key *rsa.PrivateKey, kid string) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", kid).WithType("JWT"))
	must(t, err)
	payload, _ := json.Marshal(map[string]any{"sub": "mia", "aud": "mcpgate", "workspace_id": "ws-a", "task_id": "task-ws-a",
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()})
	jws, err := signer.Sign(payload)
	must(t, err)
	out, err := jws.CompactSerialize()
	must(t, err)
	return out
}
