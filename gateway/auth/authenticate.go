package auth

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgate/mcpgate/gateway"
)

// APITokenPrefix starts every external-gateway API token (docs/requirements.md#api-tokens).
const APITokenPrefix = "scmt_"

// maxTokenBytes bounds the work spent on one credential; real session
// tokens are a few hundred bytes.
const maxTokenBytes = 8 << 10

// sessionClaims is the payload of an agent session JWT (docs/http.md).
type sessionClaims struct {
	jwt.RegisteredClaims
	WorkspaceID string `json:"workspace_id"`
	TaskID      string `json:"task_id"`
	ProfileID   string `json:"agent_profile_id,omitempty"`
}

// Authenticate verifies the agent session JWT in "Authorization: Bearer" and
// returns the principal it names (Kind PrincipalAgent). The token must be
// signed with the configured algorithm and key, carry exp (not past, with
// leeway), the configured aud and iss, and non-empty sub, workspace_id and
// task_id strings; agent_profile_id is optional. Every failure is an
// EUnauthenticated *gateway.Error whose message says what is wrong and what
// to do; messages never contain the token. A token accepted before is
// remembered by its bytes until it expires (verifiedTokens): only its time
// claims are checked again.
func (j *JWT) Authenticate(r *http.Request) (*gateway.Principal, error) {
	raw, err := BearerToken(r)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(raw, APITokenPrefix) {
		return nil, unauthenticated("this endpoint takes agent session JWTs; scmt_ API tokens belong on /api/mcp")
	}
	if len(raw) > maxTokenBytes {
		return nil, unauthenticated("bearer token is longer than %d bytes; send the agent session JWT issued for the task", maxTokenBytes)
	}
	now, gen := j.now(), j.generation()
	if p, ok := j.verified.get(raw, now, j.leeway, gen); ok {
		return p, nil
	}
	var c sessionClaims
	tok, err := j.parseStrict(j.parser, raw, &c, sessionClaimNames)
	if err != nil {
		return nil, j.explain(err, tok, &c)
	}
	if err := c.requireIdentity(); err != nil {
		return nil, err
	}
	p := &gateway.Principal{
		Kind:        gateway.PrincipalAgent,
		Subject:     c.Subject,
		WorkspaceID: c.WorkspaceID,
		TaskID:      c.TaskID,
		ProfileID:   c.ProfileID,
		ExpiresAt:   c.ExpiresAt.Time.UTC(),
	}
	j.verified.put(raw, p, &c, now, j.leeway, gen)
	return p, nil
}

// generation is the key set's generation (JWKS.Generation), 0 with a
// fixed key: a token verified under another generation is verified again.
func (j *JWT) generation() uint64 {
	if j.jwks == nil {
		return 0
	}
	return j.jwks.Generation()
}

// BearerToken returns the credential of "Authorization: Bearer <token>"
// (scheme matched case-insensitively, RFC 7235). A missing header, another
// scheme or an empty token is an EUnauthenticated *gateway.Error.
func BearerToken(r *http.Request) (string, error) {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	if h == "" {
		return "", unauthenticated("missing Authorization: Bearer header; send the credential as Authorization: Bearer <token>")
	}
	scheme, token, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", unauthenticated("Authorization scheme %s is not accepted; send Authorization: Bearer <token>", displayWord(scheme))
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return "", unauthenticated("Authorization: Bearer header has no token; send Authorization: Bearer <token>")
	}
	return token, nil
}

// requireIdentity checks the claims mcpgate needs beyond the registered ones.
func (c *sessionClaims) requireIdentity() error {
	for _, f := range []struct{ name, value string }{
		{"sub", c.Subject}, {"workspace_id", c.WorkspaceID}, {"task_id", c.TaskID},
	} {
		if f.value == "" {
			return unauthenticated("token has no %s claim; agent session tokens must carry sub, workspace_id and task_id — request a new task session token", f.name)
		}
	}
	return nil
}

// explain turns a jwt/v5 parse error into a message for people, checking
// the causes in the order a token is processed: shape, algorithm,
// signature, then claims.
func (j *JWT) explain(err error, tok *jwt.Token, c *sessionClaims) error {
	var ge *gateway.Error
	if errors.As(err, &ge) {
		return ge // parseStrict's refusal says what is wrong already
	}
	if tok == nil || errors.Is(err, jwt.ErrTokenMalformed) {
		return malformed(err)
	}
	if alg, _ := tok.Header["alg"].(string); !j.accepts(alg) {
		return j.wrongAlgorithm(alg)
	}
	if errors.Is(err, errNoKey) {
		kid, _ := tok.Header["kid"].(string)
		return unauthenticated("token's key (kid %s) is not in the identity provider's key set, or verifies another algorithm; request a new token (keys the provider removed stop verifying)", displayWord(kid))
	}
	if errors.Is(err, jwt.ErrTokenSignatureInvalid) && j.jwks != nil {
		return unauthenticated("token signature does not verify with the identity provider's keys; request a token from the issuer this gateway trusts (%s)", EnvIssuer)
	}
	if errors.Is(err, jwt.ErrTokenSignatureInvalid) {
		return unauthenticated("token signature does not verify with the configured %s key; request a token issued for this gateway", j.alg)
	}
	return j.explainClaims(err, c)
}

func (j *JWT) explainClaims(err error, c *sessionClaims) error {
	switch {
	case c.ExpiresAt == nil:
		return unauthenticated("token has no exp claim; agent session tokens must expire — request a new task session token")
	case errors.Is(err, jwt.ErrTokenExpired):
		return unauthenticated("agent session token expired at %s; request a new task session token", stamp(c.ExpiresAt))
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return unauthenticated("agent session token is not valid before %s; check the token issuer's clock or wait", stamp(c.NotBefore))
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return unauthenticated("agent session token was issued in the future (%s); check the token issuer's clock", stamp(c.IssuedAt))
	case j.issuer != "" && c.Issuer == "":
		return unauthenticated("token has no iss claim; this gateway requires iss %q (%s)", j.issuer, EnvIssuer)
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return unauthenticated("token issuer is not %q; request a token from the issuer this gateway trusts (%s)", j.issuer, EnvIssuer)
	case len(c.Audience) == 0:
		return unauthenticated("token has no aud claim; this gateway requires aud %q (%s)", j.audience, EnvAudience)
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return unauthenticated("token audience does not include %q; request a token issued for this gateway (%s)", j.audience, EnvAudience)
	default:
		return &gateway.Error{Code: gateway.EUnauthenticated, Message: "agent session token rejected; request a new task session token", Err: err}
	}
}

func (j *JWT) wrongAlgorithm(alg string) error {
	switch {
	case strings.EqualFold(alg, "none"):
		return unauthenticated("unsigned token (alg none) refused; this gateway accepts %s only", j.alg)
	case alg == "":
		return unauthenticated("token header has no alg; this gateway accepts %s only", j.alg)
	default:
		return unauthenticated("token signed with %s; this gateway accepts %s only", displayWord(alg), j.alg)
	}
}

// malformed explains a token that is not a decodable JWT, naming the claim
// when a claim has the wrong JSON type.
func malformed(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return unauthenticated("token claim %s has the wrong type (%s); sub, workspace_id, task_id and agent_profile_id are strings, exp/nbf/iat numbers", displayWord(te.Field), te.Value)
	}
	return unauthenticated("malformed token: an agent session JWT is three base64url segments (header.payload.signature) with JSON header and claims; send the token issued for the task session")
}

func unauthenticated(format string, args ...any) *gateway.Error {
	return gateway.Errorf(gateway.EUnauthenticated, format, args...)
}

func stamp(d *jwt.NumericDate) string {
	if d == nil {
		return "an unknown time"
	}
	return d.Time.UTC().Format(time.RFC3339)
}

// displayWord returns s when it is a short, plain word safe to repeat in a
// message and log line, else a placeholder: header values are attacker
// controlled.
func displayWord(s string) string {
	if s == "" || len(s) > 32 {
		return "(unrecognised)"
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return "(unrecognised)"
		}
	}
	return s
}
