package auth_test

import (
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auth"
)

func TestCCServerJWT(t *testing.T) {
	secret := []byte(strings.Repeat("k", 32))
	cc, err := auth.NewJWT(auth.JWTConfig{Secret: secret, Audience: "mcpgate-ccserver"})
	if err != nil {
		t.Fatal(err)
	}
	agentJWT, err := auth.NewJWT(auth.JWTConfig{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	authn := func(tok string) (*gateway.Principal, error) {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return auth.CCServer{J: cc}.Authenticate(r)
	}
	for _, c := range []struct {
		claims auth.CCClaims
		want   gateway.Principal
	}{
		{auth.CCClaims{Subject: "ada"}, gateway.Principal{Kind: gateway.PrincipalUser, Subject: "ada"}},
		{auth.CCClaims{Subject: "ada", Mode: "plan", TicketID: "TCK-7"}, gateway.Principal{Kind: gateway.PrincipalUser, Subject: "ada", Mode: "plan", TicketID: "TCK-7"}},
		{auth.CCClaims{Subject: "ada", WorkspaceID: "ws-acme"}, gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "ada", WorkspaceID: "ws-acme"}},
		{auth.CCClaims{Subject: "ada", Kind: "robot", Mode: "weird"}, gateway.Principal{Kind: "robot", Subject: "ada", Mode: "weird"}},
	} {
		tok, err := cc.IssueCCServer(c.claims, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		p, err := authn(tok)
		if err != nil {
			t.Fatalf("%+v: %v", c.claims, err)
		}
		p.ExpiresAt = time.Time{}
		if !reflect.DeepEqual(*p, c.want) {
			t.Errorf("%+v: principal %+v, want %+v", c.claims, *p, c.want)
		}
	}
	// A SupaCloud agent token (audience mcpgate) is not a cc_server token.
	agentTok, err := agentJWT.Issue(auth.AgentClaims{Subject: "ada", WorkspaceID: "ws-acme", TaskID: "t1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := authn(agentTok); gateway.ErrorCodeOf(err) != gateway.EUnauthenticated || !strings.Contains(err.Error(), "audience") {
		t.Errorf("agent token on cc_server: %v, want refused for its audience", err)
	}
	// And a cc_server token is not an agent token.
	ccTok, _ := cc.IssueCCServer(auth.CCClaims{Subject: "ada", WorkspaceID: "ws-acme"}, time.Hour)
	r := httptest.NewRequest("POST", "/mcp", nil)
	r.Header.Set("Authorization", "Bearer "+ccTok)
	if _, err := agentJWT.Authenticate(r); gateway.ErrorCodeOf(err) != gateway.EUnauthenticated {
		t.Errorf("cc_server token on the agent endpoint: %v, want refused", err)
	}
	if _, err := cc.IssueCCServer(auth.CCClaims{}, time.Hour); err == nil {
		t.Error("a token without subject was issued")
	}
}
