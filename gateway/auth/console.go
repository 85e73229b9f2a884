package auth

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgate/mcpgate/gateway"
)

// ConsoleAudience is the aud a console sign-in JWT carries, and the only
// one accepted for it: an agent session JWT (aud MCPGATE_JWT_AUDIENCE)
// never signs anyone in to the console, and a console sign-in JWT never
// opens /mcp (it has another aud and no task_id).
const ConsoleAudience = "mcpgate-console"

// ConsoleMaxLifetime bounds a console sign-in JWT: exp may lie at most this
// far after iat (and iat is required), so a leaked one does not last.
const ConsoleMaxLifetime = 12 * time.Hour

// consoleClaims is the payload of a console sign-in JWT (docs/http.md,
// "Workspace owners and admins").
type consoleClaims struct {
	jwt.RegisteredClaims
	WorkspaceID string `json:"workspace_id"`
}

// ConsoleUser verifies a console sign-in JWT: signed with the agent
// session key and algorithm, aud ConsoleAudience, iss when configured, iat
// and exp present with exp at most ConsoleMaxLifetime after iat, sub and
// workspace_id non-empty. It returns the workspace, the user and the
// expiry. It says nothing about the user's role: the admin API checks the
// membership on every request. Failures are EUnauthenticated.
func (j *JWT) ConsoleUser(raw string) (workspaceID, userID string, expires time.Time, err error) {
	if len(raw) > maxTokenBytes {
		return "", "", time.Time{}, unauthenticated("console sign-in token is longer than %d bytes", maxTokenBytes)
	}
	var c consoleClaims
	tok, err := j.parseStrict(j.console, raw, &c, consoleClaimNames)
	if errors.Is(err, jwt.ErrTokenInvalidAudience) {
		return "", "", time.Time{}, unauthenticated("console sign-in token audience does not include %q; mint it for the console, not as an agent session token", ConsoleAudience)
	}
	if err != nil {
		return "", "", time.Time{}, j.explain(err, tok, &sessionClaims{RegisteredClaims: c.RegisteredClaims})
	}
	switch {
	case c.IssuedAt == nil:
		return "", "", time.Time{}, unauthenticated("console sign-in token has no iat claim; mint one with iat and an exp at most %s later", ConsoleMaxLifetime)
	case c.ExpiresAt.Sub(c.IssuedAt.Time) > ConsoleMaxLifetime:
		return "", "", time.Time{}, unauthenticated("console sign-in token lives longer than %s (exp − iat); mint a shorter one", ConsoleMaxLifetime)
	case c.Subject == "" || c.WorkspaceID == "":
		return "", "", time.Time{}, unauthenticated("console sign-in token needs sub (the user) and workspace_id claims")
	}
	return c.WorkspaceID, c.Subject, c.ExpiresAt.Time.UTC(), nil
}

// ConsoleUsers returns the admin API's hook for console sign-in JWTs
// (admin.Options.WorkspaceAdmin): the workspace and user of a valid one
// in "Authorization: Bearer", ok=false for anything else (scmt_ tokens
// included).
func (j *JWT) ConsoleUsers() func(r *http.Request) (workspaceID, userID string, ok bool) {
	return func(r *http.Request) (string, string, bool) {
		raw, err := BearerToken(r)
		if err != nil || strings.HasPrefix(raw, APITokenPrefix) {
			return "", "", false
		}
		ws, user, _, err := j.ConsoleUser(raw)
		return ws, user, err == nil
	}
}

// SignConsole returns a console sign-in JWT for user of workspace, valid
// for ttl (at most ConsoleMaxLifetime), with the signer's iss. The
// platform that signs agent session tokens mints these for its users;
// `mcpgate jwt mint --console` and tests use this.
func (s *Signer) SignConsole(workspaceID, userID string, ttl time.Duration) (string, error) {
	if ttl <= 0 || ttl > ConsoleMaxLifetime {
		return "", gateway.Errorf(gateway.EInvalid, "console sign-in token lifetime %s must be positive and at most %s", ttl, ConsoleMaxLifetime)
	}
	if workspaceID == "" || userID == "" {
		return "", gateway.Errorf(gateway.EInvalid, "console sign-in token needs a workspace and a user")
	}
	now := s.now()
	claims := consoleClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   userID,
			Issuer:    s.issuer,
			Audience:  jwt.ClaimStrings{ConsoleAudience},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		WorkspaceID: workspaceID,
	}
	return jwt.NewWithClaims(s.method, claims).SignedString(s.key)
}
