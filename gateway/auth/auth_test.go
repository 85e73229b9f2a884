package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgate/mcpgate/gateway"
)

// now is the fixed clock of every test.
var now = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)

// testLeeway is the gateway's default leeway (config.DefaultJWTLeeway,
// which this package cannot import), given to the verifiers whose cases
// are about tokens at the edge of their times.
const testLeeway = 30 * time.Second

var (
	hsSecret    = []byte("0123456789abcdef0123456789abcdef")
	otherSecret = []byte("ffffffffffffffffffffffffffffffff")
)

// keys holds one key pair per algorithm, generated once per test binary.
type keys struct {
	rsa, rsaOther *rsa.PrivateKey
	ec            *ecdsa.PrivateKey
	ed            ed25519.PrivateKey
	rsaPEM        []byte
	ecPEM         []byte
	edPEM         []byte
}

var testKeys = sync.OnceValue(func() *keys {
	k := &keys{}
	k.rsa = must(rsa.GenerateKey(rand.Reader, 2048))
	k.rsaOther = must(rsa.GenerateKey(rand.Reader, 2048))
	k.ec = must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	_, k.ed = must2(ed25519.GenerateKey(rand.Reader))
	k.rsaPEM = publicPEM(&k.rsa.PublicKey)
	k.ecPEM = publicPEM(&k.ec.PublicKey)
	k.edPEM = publicPEM(k.ed.Public())
	return k
})

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func must2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		panic(err)
	}
	return a, b
}

func publicPEM(pub crypto.PublicKey) []byte {
	der := must(x509.MarshalPKIXPublicKey(pub))
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// claims returns a valid claim set; edits tweak it per case.
func claims(edits ...func(jwt.MapClaims)) jwt.MapClaims {
	c := jwt.MapClaims{
		"sub":          "user-1",
		"workspace_id": "ws-1",
		"task_id":      "task-1",
		"aud":          "mcpgate",
		"iat":          now.Add(-time.Minute).Unix(),
		"exp":          now.Add(time.Hour).Unix(),
	}
	for _, e := range edits {
		e(c)
	}
	return c
}

func set(k string, v any) func(jwt.MapClaims) { return func(c jwt.MapClaims) { c[k] = v } }
func drop(k string) func(jwt.MapClaims)       { return func(c jwt.MapClaims) { delete(c, k) } }

func sign(m jwt.SigningMethod, key any, c jwt.MapClaims) string {
	return must(jwt.NewWithClaims(m, c).SignedString(key))
}

func newVerifier(t testing.TB, cfg JWTConfig) *JWT {
	t.Helper()
	cfg.Now = func() time.Time { return now }
	j, err := NewJWT(cfg)
	if err != nil {
		t.Fatalf("NewJWT: %v", err)
	}
	return j
}

func bearer(tok string) string { return "Bearer " + tok }

func TestAuthenticate(t *testing.T) {
	k := testKeys()
	hs := newVerifier(t, JWTConfig{Secret: hsSecret, Leeway: testLeeway})
	hsIss := newVerifier(t, JWTConfig{Secret: hsSecret, Issuer: "https://platform.example", Leeway: testLeeway})
	rs := newVerifier(t, JWTConfig{PublicKeyPEM: k.rsaPEM, Leeway: testLeeway})
	es := newVerifier(t, JWTConfig{PublicKeyPEM: k.ecPEM, Leeway: testLeeway})
	ed := newVerifier(t, JWTConfig{PublicKeyPEM: k.edPEM, Leeway: testLeeway})

	wantAgent := gateway.Principal{
		Kind: gateway.PrincipalAgent, Subject: "user-1", WorkspaceID: "ws-1", TaskID: "task-1",
		ExpiresAt: now.Add(time.Hour),
	}
	withProfile := wantAgent
	withProfile.ProfileID = "prof-7"

	cases := []struct {
		name    string
		v       *JWT
		header  string // Authorization value; "" sends none
		want    *gateway.Principal
		wantErr string // substring of the message
	}{
		{name: "valid HS256", v: hs, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims())), want: &wantAgent},
		{name: "valid HS256 with profile", v: hs, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(set("agent_profile_id", "prof-7")))), want: &withProfile},
		{name: "scheme is case-insensitive", v: hs, header: "bearer " + sign(jwt.SigningMethodHS256, hsSecret, claims()), want: &wantAgent},
		{name: "aud as array", v: hs, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(set("aud", []string{"other", "mcpgate"})))), want: &wantAgent},
		{name: "valid RS256", v: rs, header: bearer(sign(jwt.SigningMethodRS256, k.rsa, claims())), want: &wantAgent},
		{name: "valid ES256", v: es, header: bearer(sign(jwt.SigningMethodES256, k.ec, claims())), want: &wantAgent},
		{name: "valid EdDSA", v: ed, header: bearer(sign(jwt.SigningMethodEdDSA, k.ed, claims())), want: &wantAgent},
		{name: "valid with issuer", v: hsIss, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(set("iss", "https://platform.example")))), want: &wantAgent},
		{name: "expired inside leeway", v: hs, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(set("exp", now.Add(-10*time.Second).Unix())))),
			want: &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "user-1", WorkspaceID: "ws-1", TaskID: "task-1", ExpiresAt: now.Add(-10 * time.Second)}},

		{name: "alg none", v: hs, header: bearer(sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims())), wantErr: "unsigned token (alg none) refused; this gateway accepts HS256 only"},
		{name: "alg confusion HS256 with RSA public key as secret", v: rs, header: bearer(sign(jwt.SigningMethodHS256, k.rsaPEM, claims())), wantErr: "token signed with HS256; this gateway accepts RS256 only"},
		{name: "HS512 against HS256", v: hs, header: bearer(sign(jwt.SigningMethodHS512, hsSecret, claims())), wantErr: "token signed with HS512; this gateway accepts HS256 only"},
		{name: "RS256 against EdDSA", v: ed, header: bearer(sign(jwt.SigningMethodRS256, k.rsa, claims())), wantErr: "token signed with RS256; this gateway accepts EdDSA only"},
		{name: "unknown alg", v: hs, header: bearer(forgeHeader(`{"alg":"XY999","typ":"JWT"}`)), wantErr: "token signed with XY999; this gateway accepts HS256 only"},
		{name: "hostile alg not echoed", v: hs, header: bearer(forgeHeader(`{"alg":"<script>alert(1)</script>"}`)), wantErr: "token signed with (unrecognised); this gateway accepts HS256 only"},
		{name: "expired", v: hs, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(set("exp", now.Add(-time.Hour).Unix())))), wantErr: "agent session token expired at 2026-11-30T13:00:00Z; request a new task session token"},
		{name: "not yet valid", v: hs, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(set("nbf", now.Add(10*time.Minute).Unix())))), wantErr: "not valid before 2026-11-30T14:10:00Z"},
		{name: "issued in the future", v: hs, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(set("iat", now.Add(10*time.Minute).Unix())))), wantErr: "issued in the future (2026-11-30T14:10:00Z)"},
		{name: "wrong aud", v: hs, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(set("aud", "other")))), wantErr: `token audience does not include "mcpgate"`},
		{name: "missing aud", v: hs, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(drop("aud")))), wantErr: `token has no aud claim; this gateway requires aud "mcpgate"`},
		{name: "wrong iss", v: hsIss, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(set("iss", "https://evil.example")))), wantErr: `token issuer is not "https://platform.example"`},
		{name: "missing iss", v: hsIss, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims())), wantErr: "token has no iss claim"},
		{name: "missing exp", v: hs, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(drop("exp")))), wantErr: "token has no exp claim"},
		{name: "missing sub", v: hs, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(drop("sub")))), wantErr: "token has no sub claim"},
		{name: "missing workspace_id", v: hs, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(drop("workspace_id")))), wantErr: "token has no workspace_id claim"},
		{name: "empty workspace_id", v: hs, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(set("workspace_id", "")))), wantErr: "token has no workspace_id claim"},
		{name: "missing task_id", v: hs, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(drop("task_id")))), wantErr: "token has no task_id claim"},
		{name: "workspace_id not a string", v: hs, header: bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(set("workspace_id", 42)))), wantErr: "token claim workspace_id has the wrong type"},
		{name: "wrong HS256 secret", v: hs, header: bearer(sign(jwt.SigningMethodHS256, otherSecret, claims())), wantErr: "token signature does not verify with the configured HS256 key"},
		{name: "wrong RSA key", v: rs, header: bearer(sign(jwt.SigningMethodRS256, k.rsaOther, claims())), wantErr: "token signature does not verify with the configured RS256 key"},
		{name: "malformed two segments", v: hs, header: "Bearer abc.def", wantErr: "malformed token"},
		{name: "malformed garbage payload", v: hs, header: "Bearer eyJhbGciOiJIUzI1NiJ9.!!!.sig", wantErr: "malformed token"},
		{name: "scmt_ API token", v: hs, header: "Bearer scmt_abcdefghijklmnop", wantErr: "scmt_ API tokens belong on /api/mcp"},
		{name: "missing header", v: hs, header: "", wantErr: "missing Authorization: Bearer header"},
		{name: "Basic scheme", v: hs, header: "Basic dXNlcjpwYXNz", wantErr: "Authorization scheme Basic is not accepted"},
		{name: "empty bearer", v: hs, header: "Bearer   ", wantErr: "Authorization: Bearer header has no token"},
		{name: "overlong token", v: hs, header: bearer(strings.Repeat("a", 9000)), wantErr: "longer than 8192 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			p, err := tc.v.Authenticate(r)
			if tc.wantErr != "" {
				assertUnauthenticated(t, err, tc.wantErr, tc.header)
				return
			}
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if !principalEqual(*p, *tc.want) {
				t.Fatalf("principal = %+v, want %+v", *p, *tc.want)
			}
		})
	}
}

// forgeHeader builds a token with the given header and valid claims,
// signed with garbage: the algorithm check must reject it first.
func forgeHeader(header string) string {
	enc := (&jwt.Token{}).EncodeSegment
	payload := must(jwt.NewWithClaims(jwt.SigningMethodHS256, claims()).SigningString())
	_, body, _ := strings.Cut(payload, ".")
	return enc([]byte(header)) + "." + body + "." + enc([]byte("sig"))
}

func assertUnauthenticated(t *testing.T, err error, want, header string) {
	t.Helper()
	var ge *gateway.Error
	if !errors.As(err, &ge) || ge.Code != gateway.EUnauthenticated {
		t.Fatalf("error = %v, want an EUnauthenticated *gateway.Error", err)
	}
	if !strings.Contains(ge.Message, want) {
		t.Fatalf("message = %q, want it to contain %q", ge.Message, want)
	}
	_, tok, _ := strings.Cut(header, " ")
	if len(tok) > 8 && strings.Contains(err.Error(), tok) {
		t.Fatalf("error text echoes the token: %q", err.Error())
	}
}

func principalEqual(a, b gateway.Principal) bool {
	return a.Kind == b.Kind && a.Subject == b.Subject && a.WorkspaceID == b.WorkspaceID &&
		a.TaskID == b.TaskID && a.ProfileID == b.ProfileID && a.ExpiresAt.Equal(b.ExpiresAt) &&
		a.TokenFingerprint == "" && a.Scopes == nil
}

func TestNewJWTConfig(t *testing.T) {
	k := testKeys()
	small := must(rsa.GenerateKey(rand.Reader, 1024))
	p384 := must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader))
	privDER := must(x509.MarshalPKCS8PrivateKey(k.ed))
	cases := []struct {
		name    string
		cfg     JWTConfig
		wantAlg string
		wantErr string
	}{
		{name: "secret", cfg: JWTConfig{Secret: hsSecret}, wantAlg: "HS256"},
		{name: "RSA key", cfg: JWTConfig{PublicKeyPEM: k.rsaPEM}, wantAlg: "RS256"},
		{name: "PKCS1 RSA key", cfg: JWTConfig{PublicKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&k.rsa.PublicKey)})}, wantAlg: "RS256"},
		{name: "ECDSA P-256 key", cfg: JWTConfig{PublicKeyPEM: k.ecPEM}, wantAlg: "ES256"},
		{name: "Ed25519 key", cfg: JWTConfig{PublicKeyPEM: k.edPEM}, wantAlg: "EdDSA"},
		{name: "Ed25519 certificate", cfg: JWTConfig{PublicKeyPEM: selfSignedPEM(k.ed)}, wantAlg: "EdDSA"},
		{name: "neither key", cfg: JWTConfig{}, wantErr: "set MCPGATE_JWT_SECRET (HS256 secret, ≥ 32 bytes) or MCPGATE_JWT_PUBLIC_KEY_FILE"},
		{name: "both keys", cfg: JWTConfig{Secret: hsSecret, PublicKeyPEM: k.rsaPEM}, wantErr: "both MCPGATE_JWT_SECRET and MCPGATE_JWT_PUBLIC_KEY_FILE are set"},
		{name: "short secret", cfg: JWTConfig{Secret: []byte("short")}, wantErr: "MCPGATE_JWT_SECRET is 5 bytes; it must be at least 32 bytes"},
		{name: "not PEM", cfg: JWTConfig{PublicKeyPEM: []byte("hello")}, wantErr: "MCPGATE_JWT_PUBLIC_KEY_FILE holds no PEM block"},
		{name: "private key", cfg: JWTConfig{PublicKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER})}, wantErr: "holds a PRIVATE KEY; give the public key only"},
		{name: "RSA 1024", cfg: JWTConfig{PublicKeyPEM: publicPEM(&small.PublicKey)}, wantErr: "RSA key has 1024 bits"},
		{name: "ECDSA P-384", cfg: JWTConfig{PublicKeyPEM: publicPEM(&p384.PublicKey)}, wantErr: "ECDSA key on P-384; only P-256"},
		{name: "corrupt DER", cfg: JWTConfig{PublicKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1, 2, 3}})}, wantErr: "cannot parse PUBLIC KEY block"},
		{name: "negative leeway", cfg: JWTConfig{Secret: hsSecret, Leeway: -time.Second}, wantErr: "leeway -1s is negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j, err := NewJWT(tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewJWT: %v", err)
			}
			if j.Algorithm() != tc.wantAlg {
				t.Fatalf("Algorithm() = %s, want %s", j.Algorithm(), tc.wantAlg)
			}
		})
	}
}

func selfSignedPEM(key ed25519.PrivateKey) []byte {
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "issuer"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	der := must(x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key))
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestLeewayAndAudienceOptions(t *testing.T) {
	strict := newVerifier(t, JWTConfig{Secret: hsSecret, Leeway: time.Second, Audience: "gw-eu"})
	cases := []struct {
		name    string
		c       jwt.MapClaims
		wantErr string
	}{
		{name: "custom audience accepted", c: claims(set("aud", "gw-eu"))},
		{name: "default audience refused", c: claims(), wantErr: `does not include "gw-eu"`},
		{name: "expired beyond 1s leeway", c: claims(set("aud", "gw-eu"), set("exp", now.Add(-10*time.Second).Unix())), wantErr: "expired at 2026-11-30T13:59:50Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.Header.Set("Authorization", bearer(sign(jwt.SigningMethodHS256, hsSecret, tc.c)))
			_, err := strict.Authenticate(r)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Authenticate: %v", err)
				}
				return
			}
			assertUnauthenticated(t, err, tc.wantErr, "")
		})
	}
}

func TestIssue(t *testing.T) {
	hs := newVerifier(t, JWTConfig{Secret: hsSecret, Issuer: "dev"})
	rs := newVerifier(t, JWTConfig{PublicKeyPEM: testKeys().rsaPEM})
	full := AgentClaims{Subject: "u", WorkspaceID: "w", TaskID: "t", ProfileID: "p"}
	cases := []struct {
		name    string
		v       *JWT
		c       AgentClaims
		ttl     time.Duration
		wantErr string
	}{
		{name: "round trip", v: hs, c: full, ttl: time.Hour},
		{name: "without profile", v: hs, c: AgentClaims{Subject: "u", WorkspaceID: "w", TaskID: "t"}, ttl: time.Minute},
		{name: "public key cannot sign", v: rs, c: full, ttl: time.Hour, wantErr: "cannot issue tokens with a RS256 public key"},
		{name: "zero ttl", v: hs, c: full, ttl: 0, wantErr: "not positive"},
		{name: "missing task", v: hs, c: AgentClaims{Subject: "u", WorkspaceID: "w"}, ttl: time.Hour, wantErr: "needs Subject, WorkspaceID and TaskID"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := tc.v.Issue(tc.c, tc.ttl)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Issue: %v", err)
			}
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.Header.Set("Authorization", bearer(tok))
			p, err := tc.v.Authenticate(r)
			if err != nil {
				t.Fatalf("Authenticate(issued): %v", err)
			}
			want := gateway.Principal{Kind: gateway.PrincipalAgent, Subject: tc.c.Subject, WorkspaceID: tc.c.WorkspaceID,
				TaskID: tc.c.TaskID, ProfileID: tc.c.ProfileID, ExpiresAt: now.Add(tc.ttl)}
			if !principalEqual(*p, want) {
				t.Fatalf("principal = %+v, want %+v", *p, want)
			}
		})
	}
}

// TestAuthenticateConcurrent shares one verifier across goroutines; run
// with -race.
func TestAuthenticateConcurrent(t *testing.T) {
	hs := newVerifier(t, JWTConfig{Secret: hsSecret})
	good := bearer(sign(jwt.SigningMethodHS256, hsSecret, claims()))
	bad := bearer(sign(jwt.SigningMethodHS256, otherSecret, claims()))
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for range 50 {
				r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
				h := good
				if i%2 == 1 {
					h = bad
				}
				r.Header.Set("Authorization", h)
				_, err := hs.Authenticate(r)
				if (err == nil) != (i%2 == 0) {
					t.Errorf("goroutine %d: err = %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkAuthenticateHS256(b *testing.B) {
	hs := newVerifier(b, JWTConfig{Secret: hsSecret})
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set("Authorization", bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(set("agent_profile_id", "prof-7")))))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := hs.Authenticate(r); err != nil {
			b.Fatal(err)
		}
	}
}

// Issue 30, point 5: the leeway is what the configuration says
// (MCPGATE_JWT_LEEWAY), 0 included: no skew tolerated, a token is refused
// the second its exp passes.
func TestZeroLeewayToleratesNoSkew(t *testing.T) {
	exact := newVerifier(t, JWTConfig{Secret: hsSecret, Leeway: 0})
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set("Authorization", bearer(sign(jwt.SigningMethodHS256, hsSecret, claims(set("exp", now.Add(-time.Second).Unix())))))
	_, err := exact.Authenticate(r)
	assertUnauthenticated(t, err, "expired at 2026-11-30T13:59:59Z", "")
}
