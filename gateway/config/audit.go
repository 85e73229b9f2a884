package config

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"time"
)

// Audit configures the audit chain's checkpoints (docs/configuration.md,
// docs/architecture.md "The audit chain").
type Audit struct {
	// SigningKeyFile is MCPGATE_AUDIT_SIGNING_KEY_FILE: a PEM file with
	// one PKCS #8 PRIVATE KEY block holding an Ed25519 key, as `openssl
	// genpkey -algorithm ed25519 -out key.pem` writes it. Unset: the
	// checkpoints are unsigned.
	SigningKeyFile string
	// SigningKey is the key read from SigningKeyFile, nil when unset.
	SigningKey ed25519.PrivateKey
	// Retention is MCPGATE_AUDIT_RETENTION: a Go duration of at least
	// MinAuditRetention; the sweep prunes whole ranges of sealed rows up
	// to the last checkpoint older than that. 0 (the default) keeps all.
	Retention time.Duration
}

// MinAuditRetention is the shortest Retention accepted: the usage views
// and the day's rate-limit windows read the last day's rows.
const MinAuditRetention = 24 * time.Hour

func (c *Config) loadAudit(r *reader) {
	if v := r.getenv("MCPGATE_AUDIT_RETENTION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || (d != 0 && d < MinAuditRetention) {
			r.fail("MCPGATE_AUDIT_RETENTION=%q: want a duration of at least %v, such as 2160h (90 days), or 0 to keep every row", v, MinAuditRetention)
		} else {
			c.Audit.Retention = d
		}
	}
	const name = "MCPGATE_AUDIT_SIGNING_KEY_FILE"
	f := r.getenv(name)
	c.Audit.SigningKeyFile = f
	if f == "" {
		return
	}
	b, err := os.ReadFile(f)
	if err != nil {
		r.fail("%s: cannot read %s: %v", name, f, err)
		return
	}
	key, err := ParseSigningKey(b)
	if err != nil {
		r.fail("%s=%s: %v; write a key with: openssl genpkey -algorithm ed25519 -out %s", name, f, err, f)
		return
	}
	c.Audit.SigningKey = key
}

// ParseSigningKey reads an Ed25519 private key in PEM: one PKCS #8
// PRIVATE KEY block, as `openssl genpkey -algorithm ed25519` writes it.
// The error says what the file holds instead.
func ParseSigningKey(pemBytes []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, fmt.Errorf("not a PEM file (want a PRIVATE KEY block)")
	}
	if block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("the PEM block is %q, want PRIVATE KEY (PKCS #8, Ed25519)", block.Type)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("unreadable PKCS #8 private key: %v", err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("the key is a %T, not Ed25519", k)
	}
	return key, nil
}
