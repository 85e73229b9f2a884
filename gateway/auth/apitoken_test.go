package auth_test

import (
	"context"
	"net/http/httptest"
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
