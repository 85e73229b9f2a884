package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// registeredClaimNames are the members jwt.RegisteredClaims decodes.
var registeredClaimNames = []string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti"}

// Claim names each verifier reads besides the registered ones.
var (
	sessionClaimNames = append([]string{"workspace_id", "task_id", "agent_profile_id"}, registeredClaimNames...)
	ccClaimNames      = append([]string{"kind", "mode", "workspace_id", "ticket_id", "conversation_id"}, registeredClaimNames...)
	consoleClaimNames = append([]string{"workspace_id"}, registeredClaimNames...)
)

// maxShownMember bounds a member name repeated in a message: it is
// attacker controlled.
const maxShownMember = 40

// parseStrict verifies raw with p (algorithm, key, signature, time and
// audience checks stay golang-jwt's) and decodes its claims into c, then
// refuses a payload encoding/json would have read loosely: it matches
// member names case-insensitively (with Unicode folding: "tasK_id" with a
// Kelvin sign is task_id) and keeps the last of repeated members, so a
// signed payload with "Workspace_ID" or a second "exp" chose the value the
// gateway acted on. Each top-level member must appear once, and a member
// that folds to one of the known claim names must be spelled exactly so.
// The names are checked once the signature verified (a forged token is
// refused for its signature first), and before any claim error is
// explained, since the claims decoded may be the confused ones.
// A refusal is an EUnauthenticated *gateway.Error naming the member.
func (j *JWT) parseStrict(p *jwt.Parser, raw string, c jwt.Claims, known []string) (*jwt.Token, error) {
	tok, err := p.ParseWithClaims(raw, c, j.keyfunc)
	if tok == nil || errors.Is(err, jwt.ErrTokenMalformed) || errors.Is(err, jwt.ErrTokenSignatureInvalid) || errors.Is(err, jwt.ErrTokenUnverifiable) {
		return tok, err
	}
	if serr := strictClaimNames(raw, known); serr != nil {
		return tok, serr
	}
	return tok, err
}

// strictClaimNames checks the member names of the JWT payload in raw (see
// parseStrict). A payload that does not decode is left to golang-jwt,
// which has refused it already.
func strictClaimNames(raw string, known []string) error {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	seen := make(map[string]bool, 12)
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		name, _ := t.(string)
		if seen[name] {
			return unauthenticated("token claims repeat the member %s; a JWT payload must name each claim once — request a token from the issuer this gateway trusts", shownMember(name))
		}
		seen[name] = true
		for _, k := range known {
			if name != k && strings.EqualFold(name, k) {
				return unauthenticated("token claim %s is not spelled %q; claim names are exact and lower case — request a token from the issuer this gateway trusts", shownMember(name), k)
			}
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}

// shownMember is name quoted with non-ASCII escaped, cut to maxShownMember
// bytes.
func shownMember(name string) string {
	if len(name) > maxShownMember {
		name = strings.ToValidUTF8(name[:maxShownMember], "") + "…"
	}
	return strconv.QuoteToASCII(name)
}
