package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/store"
)

// ScopeManagementRead is the scmt_ token scope that reads the management
// (admin) API of the token's own workspace (docs/requirements.md#api-tokens); the admin
// API's token listing names the same scope.
const ScopeManagementRead = "management:read"

// apiTokenActive is the gateway.APIToken.Status of a token in use.
const apiTokenActive = "active"

// HashAPIToken returns the lower-case hex SHA-256 of an scmt_ token value
// (64 characters): the only form of a value the store keeps, and so the key
// a presented token is looked up by.
func HashAPIToken(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:])
}

// APITokenStore is what the management-read token check needs from the
// audit store: the contract's Tokens part (the PostgreSQL and embedded
// stores implement it).
type APITokenStore = store.Tokens

// tokenLookupTimeout bounds the token lookup of one admin request.
const tokenLookupTimeout = 5 * time.Second

// ManagementReader returns the admin API's TokenReader hook: scmt_ tokens
// with management:read may make GET requests of the admin API for their own
// workspace (docs/requirements.md#api-tokens: management:read is read access to the
// management API next to MCP). For a request whose bearer credential is an
// active scmt_ token whose scopes include management:read it returns the
// token's workspace and true, and updates the token's last_used_at. A
// revoked token, one without that scope, any other credential, or a store
// that cannot answer within 5 s returns "", false (the request then gets
// the admin API's 401). log, when non-nil, receives store failures; now
// nil means time.Now.
func ManagementReader(s APITokenStore, log *zap.Logger, now func() time.Time) func(r *http.Request) (string, bool) {
	if now == nil {
		now = time.Now
	}
	return func(r *http.Request) (string, bool) {
		value, err := BearerToken(r)
		if err != nil || !strings.HasPrefix(value, APITokenPrefix) {
			return "", false
		}
		ctx, cancel := context.WithTimeout(r.Context(), tokenLookupTimeout)
		defer cancel()
		tok, err := s.APITokenByHash(ctx, HashAPIToken(value))
		if err != nil {
			if gateway.ErrorCodeOf(err) != gateway.ENotFound && log != nil {
				log.Warn("API token lookup failed; the admin request is refused", zap.Error(err))
			}
			return "", false
		}
		if tok.Status != apiTokenActive || !slices.Contains(tok.Scopes, ScopeManagementRead) {
			return "", false
		}
		if err := s.TouchAPIToken(ctx, tok.Fingerprint, now()); err != nil && log != nil {
			log.Warn("could not record API token use", zap.String("fingerprint", tok.Fingerprint), zap.Error(err))
		}
		return tok.WorkspaceID, true
	}
}

// apiTokenBodyLen is the length of an scmt_ value after its prefix: the
// base64url (unpadded) encoding of the 32 random bytes a token is minted
// from (256 bits; docs/requirements.md#api-tokens).
const apiTokenBodyLen = 43

// touchEvery is how stale a token's last_used_at may get before a use
// records it again: one write a minute per token at most, instead of one
// per request.
const touchEvery = time.Minute

// APITokens authenticates the scmt_ API tokens of external coordinators on
// /api/mcp (docs/requirements.md#external-gateway). Every request looks its token up in
// the store, so a revocation through any replica takes effect on the next
// request everywhere (no cache). It implements the MCP transport's
// Authenticator.
type APITokens struct {
	store APITokenStore
	log   *zap.Logger
	now   func() time.Time
}

// NewAPITokens returns the scmt_ authenticator over s. log, when non-nil,
// receives failures to record a token's use; now nil means time.Now.
func NewAPITokens(s APITokenStore, log *zap.Logger, now func() time.Time) *APITokens {
	if log == nil {
		log = zap.NewNop()
	}
	if now == nil {
		now = time.Now
	}
	return &APITokens{store: s, log: log, now: now}
}

// Authenticate returns the coordinator principal of the active scmt_ token
// in "Authorization: Bearer": Kind PrincipalCoordinator, the token's
// workspace, fingerprint and scopes, Subject "token:<fingerprint>". A
// missing credential, an agent session JWT (or any credential without the
// scmt_ prefix), a malformed, unknown or revoked token is an
// EUnauthenticated *gateway.Error (HTTP 401); a store that cannot answer is
// EUnavailable. The stored hash is compared with the presented token's in
// constant time. Messages never contain the token. A use is recorded in
// the token's last_used_at at most once a minute.
func (a *APITokens) Authenticate(r *http.Request) (*gateway.Principal, error) {
	value, err := BearerToken(r)
	if err != nil {
		return nil, err
	}
	body, ok := strings.CutPrefix(value, APITokenPrefix)
	if !ok {
		return nil, unauthenticated("this endpoint takes scmt_ API tokens; agent session JWTs belong on /mcp")
	}
	if !wellFormedTokenBody(body) {
		return nil, unauthenticated("malformed API token: an scmt_ token is scmt_ followed by %d base64url characters; send the value shown when the token was created", apiTokenBodyLen)
	}
	ctx, cancel := context.WithTimeout(r.Context(), tokenLookupTimeout)
	defer cancel()
	hash := HashAPIToken(value)
	tok, err := a.store.APITokenByHash(ctx, hash)
	switch {
	case gateway.ErrorCodeOf(err) == gateway.ENotFound:
		return nil, unauthenticated("API token not recognised; create a token for the workspace (admin API or mcpgate token create) and send its value")
	case err != nil:
		return nil, gateway.Wrap(gateway.EUnavailable, err, "the token store does not answer, so the API token could not be checked; retry shortly")
	case subtle.ConstantTimeCompare([]byte(tok.Hash), []byte(hash)) != 1:
		return nil, unauthenticated("API token not recognised; create a token for the workspace (admin API or mcpgate token create) and send its value")
	case tok.Status != apiTokenActive:
		return nil, unauthenticated("API token %s was revoked; create a new token", tok.Fingerprint)
	case tok.WorkspaceID == "":
		return nil, unauthenticated("API token %s names no workspace; create a token for a workspace", tok.Fingerprint)
	}
	if now := a.now(); tok.LastUsedAt == nil || now.Sub(*tok.LastUsedAt) >= touchEvery {
		if err := a.store.TouchAPIToken(ctx, tok.Fingerprint, now); err != nil {
			a.log.Warn("could not record API token use", zap.String("fingerprint", tok.Fingerprint), zap.Error(err))
		}
	}
	return &gateway.Principal{
		Kind:             gateway.PrincipalCoordinator,
		Subject:          "token:" + tok.Fingerprint,
		WorkspaceID:      tok.WorkspaceID,
		TokenFingerprint: tok.Fingerprint,
		Scopes:           slices.Clone(tok.Scopes),
	}, nil
}

// wellFormedTokenBody reports whether s is apiTokenBodyLen base64url
// characters.
func wellFormedTokenBody(s string) bool {
	if len(s) != apiTokenBodyLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
