package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// AgentClaims names the task session a token is issued for. Subject,
// WorkspaceID and TaskID are required; ProfileID is optional (absent ⇒
// workspace default profile, else the read-only fallback;
// docs/requirements.md#profile-less-tasks).
type AgentClaims struct {
	Subject     string
	WorkspaceID string
	TaskID      string
	ProfileID   string
}

// Issue signs an HS256 agent session token for c, valid for ttl from now,
// with the configured aud and iss. It is for development (`make run` prints
// a token) and tests: the platform issues production tokens. It fails when
// the verifier holds a public key (it cannot sign), when ttl ≤ 0, or when a
// required field of c is empty.
func (j *JWT) Issue(c AgentClaims, ttl time.Duration) (string, error) {
	if j.alg != jwt.SigningMethodHS256.Alg() {
		return "", fmt.Errorf("cannot issue tokens with a %s public key; issuing needs %s (HS256)", j.alg, EnvSecret)
	}
	s := &Signer{method: jwt.SigningMethodHS256, key: j.key, issuer: j.issuer, audience: j.audience, now: j.now}
	return s.Sign(c, ttl)
}

// SignerConfig configures NewSigner. Exactly one of Secret and
// PrivateKeyPEM must be set.
type SignerConfig struct {
	// Secret is the HS256 key, the gateway's MCPGATE_JWT_SECRET (≥ 32 bytes).
	Secret []byte
	// PrivateKeyPEM is a PEM private key ("PRIVATE KEY", "RSA PRIVATE KEY"
	// or "EC PRIVATE KEY") whose public half the gateway holds in
	// MCPGATE_JWT_PUBLIC_KEY_FILE: RSA (≥ 2048 bits) signs RS256, ECDSA
	// P-256 ES256, Ed25519 EdDSA.
	PrivateKeyPEM []byte
	// Issuer, when set, becomes the token's iss (MCPGATE_JWT_ISSUER).
	Issuer string
	// Audience becomes the token's aud; "" means "mcpgate".
	Audience string
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Signer signs agent session tokens that a JWT verifier with the matching
// key, issuer and audience accepts. It is for development, tests and
// `mcpgate jwt mint`: in production the platform issues the tokens.
type Signer struct {
	method   jwt.SigningMethod
	key      any // []byte for HS256, else the private key
	issuer   string
	audience string
	now      func() time.Time
}

// NewSigner validates cfg and returns a signer whose algorithm is fixed by
// the key. Errors say what is wrong with the key and how to fix it.
func NewSigner(cfg SignerConfig) (*Signer, error) {
	s := &Signer{issuer: cfg.Issuer, audience: cfg.Audience, now: cfg.Now}
	if s.audience == "" {
		s.audience = DefaultAudience
	}
	if s.now == nil {
		s.now = time.Now
	}
	hasSecret, hasPEM := len(cfg.Secret) > 0, len(cfg.PrivateKeyPEM) > 0
	switch {
	case hasSecret && hasPEM:
		return nil, errors.New("both an HS256 secret and a private key are given; give one")
	case hasSecret:
		if len(cfg.Secret) < MinSecretBytes {
			return nil, fmt.Errorf("the HS256 secret is %d bytes; the gateway accepts only secrets of at least %d bytes", len(cfg.Secret), MinSecretBytes)
		}
		s.method, s.key = jwt.SigningMethodHS256, append([]byte(nil), cfg.Secret...)
	case hasPEM:
		method, key, err := parsePrivateKey(cfg.PrivateKeyPEM)
		if err != nil {
			return nil, err
		}
		s.method, s.key = method, key
	default:
		return nil, fmt.Errorf("no signing key; give the HS256 secret of %s or the private key matching %s", EnvSecret, EnvPublicKeyFile)
	}
	return s, nil
}

// Algorithm returns the JWS algorithm the signer uses ("HS256", "RS256",
// "ES256" or "EdDSA").
func (s *Signer) Algorithm() string { return s.method.Alg() }

// Sign returns a token for c, valid for ttl from now, with the signer's aud
// and iss. It fails when ttl ≤ 0 or a required field of c is empty.
func (s *Signer) Sign(c AgentClaims, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		return "", fmt.Errorf("token lifetime %s is not positive; agent session tokens must expire", ttl)
	}
	if c.Subject == "" || c.WorkspaceID == "" || c.TaskID == "" {
		return "", errors.New("agent session token needs Subject, WorkspaceID and TaskID")
	}
	now := s.now()
	claims := sessionClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   c.Subject,
			Issuer:    s.issuer,
			Audience:  jwt.ClaimStrings{s.audience},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		WorkspaceID: c.WorkspaceID,
		TaskID:      c.TaskID,
		ProfileID:   c.ProfileID,
	}
	return jwt.NewWithClaims(s.method, claims).SignedString(s.key)
}

// parsePrivateKey reads the first PEM block and maps its key type to the
// one algorithm the gateway would verify it with.
func parsePrivateKey(data []byte) (jwt.SigningMethod, crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, nil, errors.New("the key file holds no PEM block; give a PEM private key (PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)")
	}
	if !strings.Contains(block.Type, "PRIVATE KEY") {
		return nil, nil, fmt.Errorf("the key file holds a %s; signing needs the private key (the gateway's %s holds the public one)", block.Type, EnvPublicKeyFile)
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, nil, fmt.Errorf("unsupported PEM type %s; use PRIVATE KEY (PKCS #8), RSA PRIVATE KEY or EC PRIVATE KEY", block.Type)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cannot parse the %s block: %w", block.Type, err)
	}
	switch k := key.(type) {
	case *rsa.PrivateKey:
		if k.N.BitLen() < minRSABits {
			return nil, nil, fmt.Errorf("the RSA key has %d bits; the gateway accepts at least %d", k.N.BitLen(), minRSABits)
		}
		return jwt.SigningMethodRS256, k, nil
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, nil, fmt.Errorf("the ECDSA key is on %s; the gateway accepts only P-256 (ES256)", k.Curve.Params().Name)
		}
		return jwt.SigningMethodES256, k, nil
	case ed25519.PrivateKey:
		return jwt.SigningMethodEdDSA, k, nil
	default:
		return nil, nil, fmt.Errorf("unsupported key type %T; use RSA, ECDSA P-256 or Ed25519", key)
	}
}
