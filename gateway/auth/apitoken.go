package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
)

// ScopeManagementRead is the scmt_ token scope that reads the management
// (admin) API of the token's own workspace (seed 002, step 1); the admin
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
// audit store (the PostgreSQL and embedded stores implement it).
type APITokenStore interface {
	// APITokenByHash returns the token whose SHA-256 hash (HashAPIToken)
	// is hash, whatever its status; ENotFound when none has it.
	APITokenByHash(ctx context.Context, hash string) (*gateway.APIToken, error)
	// TouchAPIToken records that the token was used at at.
	TouchAPIToken(ctx context.Context, fingerprint string, at time.Time) error
}

// tokenLookupTimeout bounds the token lookup of one admin request.
const tokenLookupTimeout = 5 * time.Second

// ManagementReader returns the admin API's TokenReader hook: scmt_ tokens
// with management:read may make GET requests of the admin API for their own
// workspace (seed 002, step 1: management:read is read access to the
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
