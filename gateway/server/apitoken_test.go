package server_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/auth"
)

// The admin API mints and lists scmt_ tokens, gateway/auth checks them;
// neither imports the other, so the wiring checks that they agree on the
// token's prefix, its stored hash, the active status and the
// management:read scope.
func TestAPITokenFormsAgree(t *testing.T) {
	value, tok := admin.NewAPIToken("ws-a", "ci", []string{admin.ScopeManagementRead}, time.Now())
	if auth.APITokenPrefix != admin.TokenPrefix {
		t.Errorf("prefix %q (auth) and %q (admin)", auth.APITokenPrefix, admin.TokenPrefix)
	}
	if got := auth.HashAPIToken(value); got != tok.Hash || got != admin.HashToken(value) {
		t.Errorf("auth hashes the token as %s, admin stores %s", got, tok.Hash)
	}
	if auth.ScopeManagementRead != admin.ScopeManagementRead {
		t.Errorf("scope %q (auth) and %q (admin)", auth.ScopeManagementRead, admin.ScopeManagementRead)
	}
	// A freshly minted token (status active) reads its workspace.
	read := auth.ManagementReader(oneToken{tok}, nil, nil)
	r := httptest.NewRequest("GET", "/admin/v1/workspaces/ws-a", nil)
	r.Header.Set("Authorization", "Bearer "+value)
	if ws, ok := read(r); !ok || ws != "ws-a" {
		t.Errorf("a token the admin API minted reads %q, %v; want ws-a, true", ws, ok)
	}
}

// oneToken is a token store holding one token.
type oneToken struct{ tok *gateway.APIToken }

func (s oneToken) APITokenByHash(_ context.Context, hash string) (*gateway.APIToken, error) {
	if hash != s.tok.Hash {
		return nil, gateway.Errorf(gateway.ENotFound, "no such token")
	}
	return s.tok, nil
}

func (oneToken) TouchAPIToken(context.Context, string, time.Time) error { return nil }
