package server

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/auth"
)

// APITokenStore is what the management-read token check needs from the
// audit store (the PostgreSQL and embedded stores implement it).
type APITokenStore interface {
	// APITokenByHash returns the token whose SHA-256 hash is hash, any
	// status; ENotFound when none has it.
	APITokenByHash(ctx context.Context, hash string) (*gateway.APIToken, error)
	// TouchAPIToken records that the token was used at at.
	TouchAPIToken(ctx context.Context, fingerprint string, at time.Time) error
}

// tokenLookupTimeout bounds the token lookup of one admin request.
const tokenLookupTimeout = 5 * time.Second

// ManagementReader returns the admin API's TokenReader hook (DESIGN.md §4:
// "scmt_ tokens with management:read for GETs"; seed 002, step 1:
// management:read is read access to the management API next to MCP). An
// active scmt_ token whose scopes include management:read reads its own
// workspace; its last_used_at is updated. A revoked token, one without
// that scope, or a store that cannot answer is not accepted (the request
// then gets the admin API's 401). log, when non-nil, receives store
// failures.
func ManagementReader(s APITokenStore, log *zap.Logger, now func() time.Time) func(r *http.Request) (string, bool) {
	if now == nil {
		now = time.Now
	}
	return func(r *http.Request) (string, bool) {
		value, err := auth.BearerToken(r)
		if err != nil || !strings.HasPrefix(value, admin.TokenPrefix) {
			return "", false
		}
		ctx, cancel := context.WithTimeout(r.Context(), tokenLookupTimeout)
		defer cancel()
		tok, err := s.APITokenByHash(ctx, admin.HashToken(value))
		if err != nil {
			if gateway.ErrorCodeOf(err) != gateway.ENotFound && log != nil {
				log.Warn("API token lookup failed; the admin request is refused", zap.Error(err))
			}
			return "", false
		}
		if tok.Status != admin.TokenActive || !slices.Contains(tok.Scopes, admin.ScopeManagementRead) {
			return "", false
		}
		if err := s.TouchAPIToken(ctx, tok.Fingerprint, now()); err != nil && log != nil {
			log.Warn("could not record API token use", zap.String("fingerprint", tok.Fingerprint), zap.Error(err))
		}
		return tok.WorkspaceID, true
	}
}
