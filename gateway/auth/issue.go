package auth

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// AgentClaims names the task session a token is issued for. Subject,
// WorkspaceID and TaskID are required; ProfileID is optional (absent ⇒
// workspace default profile, else the read-only fallback; seed 000, "Tasks
// ohne Profil und Workspace-Standardprofile").
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
	if ttl <= 0 {
		return "", fmt.Errorf("token lifetime %s is not positive; agent session tokens must expire", ttl)
	}
	if c.Subject == "" || c.WorkspaceID == "" || c.TaskID == "" {
		return "", errors.New("agent session token needs Subject, WorkspaceID and TaskID")
	}
	now := j.now()
	claims := sessionClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   c.Subject,
			Issuer:    j.issuer,
			Audience:  jwt.ClaimStrings{j.audience},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		WorkspaceID: c.WorkspaceID,
		TaskID:      c.TaskID,
		ProfileID:   c.ProfileID,
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(j.key)
}
