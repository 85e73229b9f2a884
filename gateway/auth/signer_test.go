package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func privatePEM(t *testing.T, typ string, der []byte) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func pkcs8(t *testing.T, key any) []byte {
	t.Helper()
	return privatePEM(t, "PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(key)))
}

// TestSignerTokensAuthenticate: a token of NewSigner passes the verifier
// the gateway builds from the matching key, for every algorithm, with the
// configured issuer and audience; another key's verifier refuses it.
func TestSignerTokensAuthenticate(t *testing.T) {
	k := testKeys()
	tests := []struct {
		name   string
		signer SignerConfig
		verify JWTConfig
		alg    string
	}{
		{"HS256", SignerConfig{Secret: hsSecret}, JWTConfig{Secret: hsSecret}, "HS256"},
		{"RS256 PKCS#8", SignerConfig{PrivateKeyPEM: pkcs8(t, k.rsa)}, JWTConfig{PublicKeyPEM: k.rsaPEM}, "RS256"},
		{"RS256 PKCS#1", SignerConfig{PrivateKeyPEM: privatePEM(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k.rsa))}, JWTConfig{PublicKeyPEM: k.rsaPEM}, "RS256"},
		{"ES256 SEC1", SignerConfig{PrivateKeyPEM: privatePEM(t, "EC PRIVATE KEY", must(x509.MarshalECPrivateKey(k.ec)))}, JWTConfig{PublicKeyPEM: k.ecPEM}, "ES256"},
		{"EdDSA", SignerConfig{PrivateKeyPEM: pkcs8(t, k.ed)}, JWTConfig{PublicKeyPEM: k.edPEM}, "EdDSA"},
		{"issuer and audience", SignerConfig{Secret: hsSecret, Issuer: "https://platform", Audience: "gw"}, JWTConfig{Secret: hsSecret, Issuer: "https://platform", Audience: "gw"}, "HS256"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.signer.Now = func() time.Time { return now } // the verifiers' clock
			s, err := NewSigner(tc.signer)
			if err != nil {
				t.Fatal(err)
			}
			if s.Algorithm() != tc.alg {
				t.Fatalf("algorithm %s, want %s", s.Algorithm(), tc.alg)
			}
			tok, err := s.Sign(AgentClaims{Subject: "u-1", WorkspaceID: "ws-1", TaskID: "t-9", ProfileID: "p-1"}, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.Header.Set("Authorization", bearer(tok))
			p, err := newVerifier(t, tc.verify).Authenticate(r)
			if err != nil {
				t.Fatalf("the gateway's verifier refused the token: %v", err)
			}
			if p.Subject != "u-1" || p.WorkspaceID != "ws-1" || p.TaskID != "t-9" || p.ProfileID != "p-1" {
				t.Fatalf("principal %+v", p)
			}
			if tc.verify.Secret == nil {
				other := newVerifier(t, JWTConfig{PublicKeyPEM: publicPEM(&k.rsaOther.PublicKey)})
				if _, err := other.Authenticate(r); err == nil {
					t.Fatal("a verifier with another key accepted the token")
				}
			}
		})
	}
}

func TestNewSignerRefuses(t *testing.T) {
	small := must(rsa.GenerateKey(rand.Reader, 1024))
	p384 := must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader))
	tests := []struct {
		name string
		cfg  SignerConfig
		want string
	}{
		{"nothing", SignerConfig{}, "no signing key"},
		{"both", SignerConfig{Secret: hsSecret, PrivateKeyPEM: pkcs8(t, testKeys().ed)}, "give one"},
		{"short secret", SignerConfig{Secret: []byte("short")}, "at least 32 bytes"},
		{"not PEM", SignerConfig{PrivateKeyPEM: []byte("hello")}, "no PEM block"},
		{"a public key", SignerConfig{PrivateKeyPEM: testKeys().rsaPEM}, "needs the private key"},
		{"small RSA", SignerConfig{PrivateKeyPEM: pkcs8(t, small)}, "at least 2048"},
		{"P-384", SignerConfig{PrivateKeyPEM: pkcs8(t, p384)}, "only P-256"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewSigner(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
	s := must(NewSigner(SignerConfig{Secret: hsSecret}))
	if _, err := s.Sign(AgentClaims{Subject: "u", WorkspaceID: "w", TaskID: "t"}, 0); err == nil {
		t.Fatal("a token without lifetime was signed")
	}
	if _, err := s.Sign(AgentClaims{Subject: "u", WorkspaceID: "w"}, time.Hour); err == nil {
		t.Fatal("a token without task was signed")
	}
}
