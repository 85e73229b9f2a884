package auth

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestConsoleUser: console sign-in JWTs are told apart from agent session
// JWTs by their audience, both ways, and must be short-lived.
func TestConsoleUser(t *testing.T) {
	j := must(NewJWT(JWTConfig{Secret: hsSecret, Now: func() time.Time { return now }}))
	s := must(NewSigner(SignerConfig{Secret: hsSecret, Now: func() time.Time { return now }}))
	sign := func(c jwt.MapClaims) string {
		return must(jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(hsSecret))
	}
	console := func(edits ...func(jwt.MapClaims)) string {
		c := jwt.MapClaims{"sub": "u-1", "workspace_id": "ws-1", "aud": ConsoleAudience,
			"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix()}
		for _, e := range edits {
			e(c)
		}
		return sign(c)
	}
	minted := must(s.SignConsole("ws-1", "u-1", time.Hour))
	for _, tc := range []struct {
		name, token, wantErr string
	}{
		{"minted by SignConsole", minted, ""},
		{"hand-made", console(), ""},
		{"agent session JWT", sign(claims()), "audience does not include \"mcpgate-console\""},
		{"no iat", console(func(c jwt.MapClaims) { delete(c, "iat") }), "no iat claim"},
		{"lives too long", console(set("exp", now.Add(13*time.Hour).Unix())), "longer than 12h0m0s"},
		{"expired", console(set("exp", now.Add(-time.Hour).Unix()), set("iat", now.Add(-2*time.Hour).Unix())), "expired"},
		{"no workspace", console(func(c jwt.MapClaims) { delete(c, "workspace_id") }), "needs sub (the user) and workspace_id"},
		{"other key", must(jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "u-1", "workspace_id": "ws-1", "aud": ConsoleAudience,
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}).SignedString(otherSecret)), "signature does not verify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, user, exp, err := j.ConsoleUser(tc.token)
			if tc.wantErr == "" {
				if err != nil || ws != "ws-1" || user != "u-1" || exp.IsZero() {
					t.Fatalf("ConsoleUser = %q %q %v %v; want ws-1 u-1", ws, user, exp, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ConsoleUser error = %v; want one containing %q", err, tc.wantErr)
			}
		})
	}
	// A console sign-in JWT never opens /mcp.
	r := httptest.NewRequest("POST", "/mcp", nil)
	r.Header.Set("Authorization", "Bearer "+minted)
	if _, err := j.Authenticate(r); err == nil {
		t.Error("a console sign-in JWT authenticated an agent session")
	}
	if ws, user, ok := j.ConsoleUsers()(r); !ok || ws != "ws-1" || user != "u-1" {
		t.Errorf("ConsoleUsers hook = %q %q %v", ws, user, ok)
	}
	if _, err := s.SignConsole("ws-1", "u-1", 13*time.Hour); err == nil {
		t.Error("SignConsole minted a token longer than ConsoleMaxLifetime")
	}
}

// TestConsoleAudienceNotAgentAudience: a verifier whose agent (or
// cc_server) audience is the console's would take every console sign-in
// JWT as a session token of its surface and, the other way round, let an
// agent holding its session JWT sign in to the console as its user (an
// owner then mints API tokens). NewJWT refuses that configuration.
func TestConsoleAudienceNotAgentAudience(t *testing.T) {
	_, err := NewJWT(JWTConfig{Secret: hsSecret, Audience: ConsoleAudience})
	if err == nil || !strings.Contains(err.Error(), ConsoleAudience) {
		t.Fatalf("NewJWT with audience %q: error %v, want one naming it", ConsoleAudience, err)
	}
}
