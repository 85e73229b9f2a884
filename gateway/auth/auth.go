// Package auth authenticates in-app agent task sessions by the JWT they carry
// on /mcp (docs/http.md, "Agent session JWT").
//
// The signing algorithm is fixed by the configured key, never chosen by the
// token: an HS256 secret accepts HS256 only, an RSA public key RS256 only, an
// ECDSA P-256 key ES256 only and an Ed25519 key EdDSA only. "none" and every
// other algorithm are refused, which also closes the HS256-with-a-public-key
// confusion attack.
package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Environment variables that configure agent session JWTs (docs/configuration.md).
// They are named in configuration errors so operators know what to fix.
const (
	EnvSecret        = "MCPGATE_JWT_SECRET"
	EnvPublicKeyFile = "MCPGATE_JWT_PUBLIC_KEY_FILE"
	EnvIssuer        = "MCPGATE_JWT_ISSUER"
	EnvAudience      = "MCPGATE_JWT_AUDIENCE"
	EnvLeeway        = "MCPGATE_JWT_LEEWAY"
)

// Defaults and bounds of JWTConfig.
const (
	// DefaultAudience is the aud a token must carry when JWTConfig.Audience
	// is empty (docs/configuration.md, MCPGATE_JWT_AUDIENCE).
	DefaultAudience = "mcpgate"
	// MinSecretBytes is the shortest HS256 secret accepted (docs/configuration.md).
	MinSecretBytes = 32
	// minRSABits is the smallest RSA modulus accepted; shorter keys are
	// forgeable in practice.
	minRSABits = 2048
)

// JWTConfig configures agent session JWT verification. Exactly one of Secret,
// PublicKeyPEM and Keys must be set.
type JWTConfig struct {
	// Secret is the HS256 key (MCPGATE_JWT_SECRET), at least 32 bytes.
	Secret []byte
	// PublicKeyPEM is a PEM public key or certificate (the contents of
	// MCPGATE_JWT_PUBLIC_KEY_FILE): RSA (≥ 2048 bits) selects RS256, ECDSA
	// P-256 selects ES256, Ed25519 selects EdDSA.
	PublicKeyPEM []byte
	// Keys is an identity provider's key set (MCPGATE_JWT_JWKS_URL or
	// MCPGATE_JWT_DISCOVERY, docs/operations.md, "Identity provider"): each token is verified by the
	// key its kid names, with the algorithm that key fixes. The verifier
	// does not own it (the caller closes it); several verifiers may share
	// one.
	Keys *JWKS
	// Issuer, when set, is the iss every token must carry (MCPGATE_JWT_ISSUER).
	Issuer string
	// Audience is the aud every token must include; "" means "mcpgate".
	Audience string
	// Leeway is the clock skew tolerated on exp, nbf and iat: zero
	// tolerates none, negative is an error. The gateway passes
	// MCPGATE_JWT_LEEWAY (config.DefaultJWTLeeway unless set).
	Leeway time.Duration
	// Now returns the current time; nil means time.Now. Tests set it.
	Now func() time.Time
}

// JWT verifies (and, with an HS256 secret, issues) agent session tokens.
// It is safe for concurrent use.
type JWT struct {
	alg      string
	key      any // []byte for HS256, else the public key; nil with jwks
	jwks     *JWKS
	keyfunc  jwt.Keyfunc // j.key, or the key set's lookup
	audience string
	issuer   string
	now      func() time.Time
	leeway   time.Duration
	parser   *jwt.Parser
	// console verifies console sign-in tokens: the same key, issuer and
	// leeway, the audience ConsoleAudience (console.go).
	console  *jwt.Parser
	verified verifiedTokens // tokens accepted before, until they expire
}

// NewJWT validates cfg and returns a verifier whose algorithm is fixed by the
// key. Errors name the environment variable to fix.
func NewJWT(cfg JWTConfig) (*JWT, error) {
	alg, key, err := loadKey(cfg)
	if err != nil {
		return nil, err
	}
	methods := []string{alg}
	if cfg.Keys != nil {
		methods = jwksMethods
	}
	if cfg.Leeway < 0 {
		return nil, fmt.Errorf("JWT leeway %s is negative; use a duration ≥ 0 (%s)", cfg.Leeway, EnvLeeway)
	}
	j := &JWT{alg: alg, key: key, jwks: cfg.Keys, audience: cfg.Audience, issuer: cfg.Issuer, now: cfg.Now}
	j.keyfunc = func(*jwt.Token) (any, error) { return j.key, nil }
	if j.jwks != nil {
		j.keyfunc = j.jwks.keyfunc
	}
	if j.audience == "" {
		j.audience = DefaultAudience
	}
	if j.audience == ConsoleAudience {
		// Else a console sign-in JWT would open this surface, and an agent
		// holding its session JWT could sign in to the console.
		return nil, fmt.Errorf("JWT audience %q is the console sign-in audience; give %s (or %s) another value", ConsoleAudience, EnvAudience, EnvCCServerAudience)
	}
	if j.now == nil {
		j.now = time.Now
	}
	leeway := cfg.Leeway
	j.leeway = leeway
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(methods),
		jwt.WithAudience(j.audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(leeway),
		jwt.WithTimeFunc(j.now),
	}
	if j.issuer != "" {
		opts = append(opts, jwt.WithIssuer(j.issuer))
	}
	j.parser = jwt.NewParser(opts...)
	opts[1] = jwt.WithAudience(ConsoleAudience)
	j.console = jwt.NewParser(opts...)
	return j, nil
}

// Algorithm returns the one JWS algorithm this verifier accepts
// ("HS256", "RS256", "ES256" or "EdDSA"), or with an identity provider's
// key set jwksAlgorithms: each key fixes its own.
func (j *JWT) Algorithm() string { return j.alg }

// jwksMethods are the algorithms keys of a key set may fix; each token
// must use its key's (JWKS.keyfunc).
var jwksMethods = []string{jwt.SigningMethodRS256.Alg(), jwt.SigningMethodES256.Alg(), jwt.SigningMethodEdDSA.Alg()}

// jwksAlgorithms is Algorithm with a key set.
const jwksAlgorithms = "RS256, ES256 or EdDSA (the algorithm of the identity provider's key)"

// accepts reports whether a token whose header names alg can verify.
func (j *JWT) accepts(alg string) bool {
	if j.jwks != nil {
		return slices.Contains(jwksMethods, alg)
	}
	return alg == j.alg
}

// loadKey picks the algorithm from whichever key is configured.
func loadKey(cfg JWTConfig) (string, any, error) {
	hasSecret, hasPEM := len(cfg.Secret) > 0, len(cfg.PublicKeyPEM) > 0
	switch {
	case cfg.Keys != nil && (hasSecret || hasPEM):
		return "", nil, fmt.Errorf("%s (or %s) is set with %s or %s; choose one source of keys", EnvJWKSURL, EnvDiscovery, EnvSecret, EnvPublicKeyFile)
	case cfg.Keys != nil:
		return jwksAlgorithms, nil, nil
	case hasSecret && hasPEM:
		return "", nil, fmt.Errorf("both %s and %s are set; set exactly one (a shared HS256 secret or a public key)", EnvSecret, EnvPublicKeyFile)
	case hasSecret:
		if len(cfg.Secret) < MinSecretBytes {
			return "", nil, fmt.Errorf("%s is %d bytes; it must be at least %d bytes (e.g. openssl rand -hex 32)", EnvSecret, len(cfg.Secret), MinSecretBytes)
		}
		return jwt.SigningMethodHS256.Alg(), append([]byte(nil), cfg.Secret...), nil
	case hasPEM:
		return parsePublicKey(cfg.PublicKeyPEM)
	default:
		return "", nil, fmt.Errorf("no agent session key configured; set %s (HS256 secret, ≥ %d bytes) or %s (PEM public key for RS256/ES256/EdDSA)", EnvSecret, MinSecretBytes, EnvPublicKeyFile)
	}
}

// parsePublicKey reads the first PEM block and maps its key type to the one
// algorithm it may verify.
func parsePublicKey(data []byte) (string, any, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return "", nil, fmt.Errorf("%s holds no PEM block; give a \"PUBLIC KEY\" PEM file", EnvPublicKeyFile)
	}
	if strings.Contains(block.Type, "PRIVATE") {
		return "", nil, fmt.Errorf("%s holds a %s; give the public key only (the gateway only verifies)", EnvPublicKeyFile, block.Type)
	}
	pub, err := decodePublicBlock(block)
	if err != nil {
		return "", nil, fmt.Errorf("%s: cannot parse %s block: %w", EnvPublicKeyFile, block.Type, err)
	}
	return algorithmFor(pub)
}

func decodePublicBlock(block *pem.Block) (any, error) {
	switch block.Type {
	case "PUBLIC KEY":
		return x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		return x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		return cert.PublicKey, nil
	default:
		return nil, errors.New("unsupported PEM type; use PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE")
	}
}

func algorithmFor(pub any) (string, any, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < minRSABits {
			return "", nil, fmt.Errorf("%s: RSA key has %d bits; use at least %d", EnvPublicKeyFile, k.N.BitLen(), minRSABits)
		}
		return jwt.SigningMethodRS256.Alg(), k, nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return "", nil, fmt.Errorf("%s: ECDSA key on %s; only P-256 (ES256) is accepted", EnvPublicKeyFile, k.Curve.Params().Name)
		}
		return jwt.SigningMethodES256.Alg(), k, nil
	case ed25519.PublicKey:
		return jwt.SigningMethodEdDSA.Alg(), k, nil
	default:
		return "", nil, fmt.Errorf("%s: unsupported key type %T; use RSA, ECDSA P-256 or Ed25519", EnvPublicKeyFile, pub)
	}
}
