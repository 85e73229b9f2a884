// Package confirm signs and verifies the confirmation tokens of the
// deploy-tier two-step confirmation
// (docs/requirements.md#deploy-confirmation).
//
// A token is stateless: it carries the workspace, task, principal, tool,
// the hash of the call's arguments and an expiry, signed with HMAC-SHA256 under the
// server-side secret SUPACLOUD_MCP_CONFIRMATION_SECRET. The key is that
// secret alone; it is never derived from task, user, workspace or profile
// credentials.
package confirm

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/canon"
)

// TTL is how long a confirmation token is valid after it is issued
// (docs/requirements.md#deploy-confirmation: "a 5-minute expiry").
const TTL = 5 * time.Minute

// MinSecretBytes is the shortest secret Signer accepts (docs/requirements.md#confirmation-secret:
// SUPACLOUD_MCP_CONFIRMATION_SECRET, "minimum 32 bytes").
const MinSecretBytes = 32

// Argument names of the protocol in a deploy-tier call's arguments. They are
// left out of the input hash: the first call has neither, the second both.
const (
	ArgToken          = "confirmation_token"
	ArgIdempotencyKey = "idempotency_key"
)

// tokenPrefix versions the token format and separates it from other HMACs
// made with the same key.
const tokenPrefix = "mcpc1"

// Errors Verify wraps (test with errors.Is); each comes inside a
// *gateway.Error of code EInvalid whose message tells the caller what to do.
var (
	ErrMalformed = errors.New("confirmation token is malformed")
	ErrSignature = errors.New("confirmation token signature does not verify")
	ErrExpired   = errors.New("confirmation token has expired")
	ErrScope     = errors.New("confirmation token was issued for another workspace, task or tool")
	ErrPrincipal = errors.New("confirmation token was issued to another user")
	ErrArguments = errors.New("confirmation token was issued for other arguments")
)

// Claims are what a token vouches for. Principal identifies who the token
// was issued to (PrincipalID): two users of one task get tokens that do
// not confirm each other's calls. InputHash is InputHash of the call's
// arguments; ExpiresAt is set by Issue (whole seconds, UTC).
type Claims struct {
	WorkspaceID string    `json:"ws"`
	TaskID      string    `json:"task"`
	Principal   string    `json:"prn"`
	Tool        string    `json:"tool"`
	InputHash   string    `json:"ih"`
	ExpiresAt   time.Time `json:"-"`
}

// wireClaims is the signed payload: Claims with the expiry in Unix seconds.
type wireClaims struct {
	Claims
	Exp int64 `json:"exp"`
}

// Signer issues and verifies tokens with one secret. It is safe for
// concurrent use.
type Signer struct {
	key []byte
	now func() time.Time
}

// NewSigner returns a Signer keyed by secret (at least MinSecretBytes; an
// EInvalid *gateway.Error naming SUPACLOUD_MCP_CONFIRMATION_SECRET
// otherwise). now is the clock for expiry; nil means time.Now.
func NewSigner(secret []byte, now func() time.Time) (*Signer, error) {
	if len(secret) < MinSecretBytes {
		return nil, gateway.Errorf(gateway.EInvalid,
			"SUPACLOUD_MCP_CONFIRMATION_SECRET is %d bytes; it must be at least %d", len(secret), MinSecretBytes)
	}
	if now == nil {
		now = time.Now
	}
	return &Signer{key: append([]byte(nil), secret...), now: now}, nil
}

// Issue returns a token for c valid for TTL from now, and its expiry.
// c.ExpiresAt is ignored. Errors: EInternal if c cannot be encoded.
func (s *Signer) Issue(c Claims) (token string, expiresAt time.Time, err error) {
	expiresAt = s.now().Add(TTL).UTC().Truncate(time.Second)
	payload, err := json.Marshal(wireClaims{Claims: Claims{WorkspaceID: c.WorkspaceID, TaskID: c.TaskID, Principal: c.Principal, Tool: c.Tool, InputHash: c.InputHash}, Exp: expiresAt.Unix()})
	if err != nil {
		return "", time.Time{}, gateway.Wrap(gateway.EInternal, err, "could not encode a confirmation token")
	}
	body := tokenPrefix + "." + base64.RawURLEncoding.EncodeToString(payload)
	return body + "." + base64.RawURLEncoding.EncodeToString(s.mac(body)), expiresAt, nil
}

// Verify checks token against want (workspace, task, principal, tool and
// input hash of the current call): first the signature (constant time),
// then the scope, the principal, the arguments and the expiry. It returns
// nil or an EInvalid *gateway.Error wrapping ErrMalformed, ErrSignature,
// ErrScope, ErrPrincipal, ErrArguments or ErrExpired, with one Reason
// whose code is "confirmation.malformed", ".bad_signature",
// ".other_scope", ".other_principal", ".other_arguments" or ".expired".
func (s *Signer) Verify(token string, want Claims) error {
	body, sig, ok := cutLast(token)
	if !ok || !strings.HasPrefix(body, tokenPrefix+".") {
		return refusal(ErrMalformed, "malformed", want.Tool)
	}
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return refusal(ErrMalformed, "malformed", want.Tool)
	}
	if !hmac.Equal(mac, s.mac(body)) {
		return refusal(ErrSignature, "bad_signature", want.Tool)
	}
	var got wireClaims
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(body, tokenPrefix+"."))
	if err != nil || json.Unmarshal(raw, &got) != nil {
		return refusal(ErrMalformed, "malformed", want.Tool)
	}
	switch {
	case got.WorkspaceID != want.WorkspaceID || got.TaskID != want.TaskID || got.Tool != want.Tool:
		return refusal(ErrScope, "other_scope", want.Tool)
	case got.Principal != want.Principal:
		return refusal(ErrPrincipal, "other_principal", want.Tool)
	case got.InputHash != want.InputHash:
		return refusal(ErrArguments, "other_arguments", want.Tool)
	case !s.now().Before(time.Unix(got.Exp, 0)):
		return refusal(ErrExpired, "expired", want.Tool)
	}
	return nil
}

func (s *Signer) mac(body string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(body))
	return m.Sum(nil)
}

// cutLast splits token at its last dot.
func cutLast(token string) (body, sig string, ok bool) {
	i := strings.LastIndexByte(token, '.')
	if i < 0 {
		return "", "", false
	}
	return token[:i], token[i+1:], true
}

// advice is what each refusal tells the caller to do.
var advice = map[error]string{
	ErrMalformed: "it is not a token this gateway issued",
	ErrSignature: "it was not signed by this gateway (or was altered)",
	ErrScope:     "it was issued for another workspace, task or tool",
	ErrPrincipal: "it was issued to another user; each user confirms with a token issued to them",
	ErrArguments: "it was issued for other arguments; the arguments must be exactly those of the first call",
	ErrExpired:   fmt.Sprintf("it has expired (tokens are valid for %s)", TTL),
}

func refusal(cause error, code, tool string) error {
	return &gateway.Error{
		Code: gateway.EInvalid,
		Message: fmt.Sprintf("confirmation_token refused for %s: %s; call %s again without confirmation_token to get a new summary and token",
			tool, advice[cause], tool),
		Reasons: []gateway.Reason{{Code: "confirmation." + code, Message: cause.Error()}},
		Err:     cause,
	}
}

// PrincipalID is the identity a token is bound to: the principal's kind,
// subject and token fingerprint (a coordinator's scmt_ token), joined by
// NUL so that no two different triples give the same text.
func PrincipalID(p *gateway.Principal) string {
	return string(p.Kind) + "\x00" + p.Subject + "\x00" + p.TokenFingerprint
}

// InputHash returns the hash a token and an idempotency key are bound to:
// canon.Hash (RFC 8785, SHA-256, every digit of every number) of args
// without ArgToken and ArgIdempotencyKey. So the first and second call of
// the protocol hash alike exactly when their other arguments are equal,
// and the audit row of the first call carries the same hash. Errors:
// EInvalid for a value that has no canonical form.
func InputHash(args map[string]any) (string, error) {
	h, err := canon.Hash(WithoutProtocolArgs(args))
	if err != nil {
		return "", gateway.Wrap(gateway.EInvalid, err, "the arguments have no canonical JSON form: "+err.Error())
	}
	return h, nil
}

// WithoutProtocolArgs returns a shallow copy of args without ArgToken and
// ArgIdempotencyKey.
func WithoutProtocolArgs(args map[string]any) map[string]any {
	out := make(map[string]any, len(args))
	for k, v := range args {
		if k != ArgToken && k != ArgIdempotencyKey {
			out[k] = v
		}
	}
	return out
}
