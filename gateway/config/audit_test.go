package config

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writePEM writes one PEM block of typ around der into a file of dir.
func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// MCPGATE_AUDIT_SIGNING_KEY_FILE: unset, no key; a PKCS #8 Ed25519 key is
// read; anything else stops the start with a message naming the variable
// and saying how to write a key.
func TestAuditSigningKey(t *testing.T) {
	c, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret}))
	if err != nil || c.Audit.SigningKey != nil {
		t.Fatalf("unset: key %v, %v; want none", c.Audit.SigningKey, err)
	}
	dir := t.TempDir()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	good := writePEM(t, dir, "key.pem", "PRIVATE KEY", der)
	c, err = Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_AUDIT_SIGNING_KEY_FILE": good}))
	if err != nil || !c.Audit.SigningKey.Public().(ed25519.PublicKey).Equal(pub) {
		t.Fatalf("a PKCS #8 Ed25519 key: %v; want it read", err)
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalPKCS8PrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ file, says string }{
		"missing":     {filepath.Join(dir, "none.pem"), "cannot read"},
		"not PEM":     {junk, "not a PEM file"},
		"public key":  {writePEM(t, dir, "pub.pem", "PUBLIC KEY", pubDER), `"PUBLIC KEY", want PRIVATE KEY`},
		"not Ed25519": {writePEM(t, dir, "ec.pem", "PRIVATE KEY", ecDER), "not Ed25519"},
		"garbled":     {writePEM(t, dir, "bad.pem", "PRIVATE KEY", []byte{1, 2, 3}), "unreadable PKCS #8"},
	} {
		_, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_AUDIT_SIGNING_KEY_FILE": tc.file}))
		if err == nil || !strings.Contains(err.Error(), "MCPGATE_AUDIT_SIGNING_KEY_FILE") || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want the variable named and %q", name, err, tc.says)
		}
		if name != "missing" && (err == nil || !strings.Contains(err.Error(), "openssl genpkey -algorithm ed25519")) {
			t.Errorf("%s: %v; want how to write a key", name, err)
		}
	}
}

// MCPGATE_AUDIT_RETENTION: 0 (keep all) by default, a duration of at
// least a day, anything else refused naming the variable.
func TestAuditRetention(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 0, "0": 0, "2160h": 2160 * time.Hour, "24h": 24 * time.Hour} {
		c, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_AUDIT_RETENTION": v}))
		if err != nil || c.Audit.Retention != want {
			t.Errorf("%q: %v; want %v", v, err, want)
		}
	}
	for _, v := range []string{"1h", "-48h", "90d"} {
		_, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_AUDIT_RETENTION": v}))
		if err == nil || !strings.Contains(err.Error(), "MCPGATE_AUDIT_RETENTION") {
			t.Errorf("%q: %v; want refused naming the variable", v, err)
		}
	}
}
