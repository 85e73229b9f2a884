package auth_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auth"
)

// tokenStore answers APITokenByHash from a map (or fails with err) and
// records touches.
type tokenStore struct {
	byHash  map[string]*gateway.APIToken
	err     error
	touched []string
}

func (s *tokenStore) APITokenByHash(_ context.Context, hash string) (*gateway.APIToken, error) {
	if s.err != nil {
		return nil, s.err
	}
	if t, ok := s.byHash[hash]; ok {
		return t, nil
	}
	return nil, gateway.Errorf(gateway.ENotFound, "no such token")
}

func (s *tokenStore) TouchAPIToken(_ context.Context, fp string, _ time.Time) error {
	s.touched = append(s.touched, fp)
	return nil
}

func TestManagementReader(t *testing.T) {
	tok := func(status string, scopes ...string) *gateway.APIToken {
		return &gateway.APIToken{Fingerprint: "fp-" + status, WorkspaceID: "ws-a", Status: status, Scopes: scopes}
	}
	store := &tokenStore{byHash: map[string]*gateway.APIToken{
		auth.HashAPIToken("scmt_good"):    tok("active", "mcp:read", auth.ScopeManagementRead),
		auth.HashAPIToken("scmt_revoked"): tok("revoked", auth.ScopeManagementRead),
		auth.HashAPIToken("scmt_mcp"):     tok("active", "mcp:read"),
	}}
	read := auth.ManagementReader(store, nil, nil)
	for _, tc := range []struct {
		note, header string
		ws           string
		ok           bool
	}{
		{"active with management:read", "Bearer scmt_good", "ws-a", true},
		{"scheme is case-insensitive", "bearer scmt_good", "ws-a", true},
		{"revoked", "Bearer scmt_revoked", "", false},
		{"without the scope", "Bearer scmt_mcp", "", false},
		{"unknown", "Bearer scmt_nope", "", false},
		{"not an API token", "Bearer eyJhbGciOi", "", false},
		{"no header", "", "", false},
	} {
		t.Run(tc.note, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/admin/v1/audit-events", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			if ws, ok := read(r); ws != tc.ws || ok != tc.ok {
				t.Errorf("= %q, %v; want %q, %v", ws, ok, tc.ws, tc.ok)
			}
		})
	}
	if len(store.touched) != 2 || store.touched[0] != "fp-active" {
		t.Errorf("touched %v, want the active token twice (once per accepted request)", store.touched)
	}
	// A store that cannot answer refuses (fail closed).
	down := auth.ManagementReader(&tokenStore{err: gateway.Errorf(gateway.EUnavailable, "down")}, nil, nil)
	r := httptest.NewRequest("GET", "/admin/v1/audit-events", nil)
	r.Header.Set("Authorization", "Bearer scmt_good")
	if _, ok := down(r); ok {
		t.Error("a token was accepted while the store was down")
	}
}

// wellFormed is an scmt_ value of the minted shape (scmt_ + 43 base64url
// characters) whose body is made of c.
func wellFormed(c string) string {
	v := "scmt_"
	for len(v) < len("scmt_")+43 {
		v += c
	}
	return v[:len("scmt_")+43]
}

func TestAPITokensAuthenticate(t *testing.T) {
	good, revoked, noWS := wellFormed("a"), wellFormed("b"), wellFormed("c")
	used := time.Now().Add(-10 * time.Second)
	store := &tokenStore{byHash: map[string]*gateway.APIToken{
		auth.HashAPIToken(good):    {Fingerprint: "fpgood", WorkspaceID: "ws-a", Status: "active", Scopes: []string{"mcp:read", "mcp:ops"}, Hash: auth.HashAPIToken(good)},
		auth.HashAPIToken(revoked): {Fingerprint: "fprevoked", WorkspaceID: "ws-a", Status: "revoked", Scopes: []string{"mcp:read"}, Hash: auth.HashAPIToken(revoked)},
		auth.HashAPIToken(noWS):    {Fingerprint: "fpnows", Status: "active", Scopes: []string{"mcp:read"}, Hash: auth.HashAPIToken(noWS), LastUsedAt: &used},
	}}
	a := auth.NewAPITokens(store, nil, nil)
	for _, tc := range []struct {
		note, header, want string
	}{
		{"no header", "", "missing Authorization"},
		{"agent JWT", "Bearer eyJhbGciOiJIUzI1NiJ9.e30.x", "agent session JWTs belong on /mcp"},
		{"wrong prefix", "Bearer scmx_" + good[5:], "agent session JWTs belong on /mcp"},
		{"malformed: too short", "Bearer scmt_abc", "malformed API token"},
		{"malformed: bad character", "Bearer " + good[:47] + "!", "malformed API token"},
		{"unknown", "Bearer " + wellFormed("z"), "not recognised"},
		{"revoked", "Bearer " + revoked, "revoked"},
		{"no workspace", "Bearer " + noWS, "names no workspace"},
	} {
		t.Run(tc.note, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/api/mcp", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			p, err := a.Authenticate(r)
			if p != nil || gateway.ErrorCodeOf(err) != gateway.EUnauthenticated || !strings.Contains(gateway.ErrorMessageOf(err), tc.want) {
				t.Fatalf("got %+v, %v; want 401 saying %q", p, err, tc.want)
			}
			if strings.Contains(gateway.ErrorMessageOf(err), good[5:]) {
				t.Fatalf("message repeats the token: %v", err)
			}
		})
	}
	r := httptest.NewRequest("POST", "/api/mcp", nil)
	r.Header.Set("Authorization", "Bearer "+good)
	p, err := a.Authenticate(r)
	if err != nil {
		t.Fatal(err)
	}
	if p.Kind != gateway.PrincipalCoordinator || p.WorkspaceID != "ws-a" || p.TokenFingerprint != "fpgood" ||
		p.Subject != "token:fpgood" || strings.Join(p.Scopes, ",") != "mcp:read,mcp:ops" || p.TaskID != "" {
		t.Fatalf("principal %+v", p)
	}
	if strings.Join(store.touched, ",") != "fpgood" {
		t.Fatalf("touched %v, want the good token once", store.touched)
	}

	store.err = gateway.Errorf(gateway.EUnavailable, "db down")
	if _, err := a.Authenticate(r); gateway.ErrorCodeOf(err) != gateway.EUnavailable {
		t.Fatalf("store down: got %v, want Unavailable", err)
	}
}
