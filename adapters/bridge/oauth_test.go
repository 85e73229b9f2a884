package bridge_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/adapters/bridge"
	"github.com/mcpgate/mcpgate/gateway"
)

const clientSecret = "client-secret-4b7e2a"

// tokenServer issues access tokens tok-1, tok-2, … to the client
// credentials gw / clientSecret, each valid for expiresIn seconds.
func tokenServer(t *testing.T, expiresIn int) (url string, issued *atomic.Int32) {
	t.Helper()
	issued = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "client_credentials" {
			http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
			return
		}
		if !ok || id != "gw" || secret != clientSecret {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client","error_description":"bad secret ` + secret + `"}`))
			return
		}
		n := issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "tok-" + string(rune('0'+n)), "token_type": "bearer", "expires_in": expiresIn, "scope": r.Form.Get("scope")})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/token", issued
}

// An upstream with client credentials gets a bearer token from the token
// endpoint on its requests, reused while it is valid and fetched again
// once it is about to expire.
func TestBridgeOAuthClientCredentials(t *testing.T) {
	tokenURL, issued := tokenServer(t, 3600)
	s := mcp.NewServer(&mcp.Implementation{Name: "guarded", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "whoami", InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	var seen atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Header.Get("Authorization"))
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer tok-") {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		sdk.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	up := bridge.Upstream{Name: "guarded", Prefix: "g.", URL: srv.URL, Tier: gateway.TierRead,
		OAuth: &bridge.OAuth{TokenURL: tokenURL, ClientID: "gw", ClientSecret: clientSecret, Scopes: []string{"mcp:read"}}}
	b, err := bridge.New(context.Background(), bridge.Options{Upstreams: []bridge.Upstream{up}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if st := b.Status(); st[0].State != bridge.StateOK {
		t.Fatalf("status %+v", st)
	}
	for range 3 {
		res, err := b.CallTool(context.Background(), gateway.ToolCall{Tool: "g.whoami", RawArguments: json.RawMessage(`{}`)})
		if err != nil || res.IsError {
			t.Fatalf("g.whoami: %v %+v", err, res)
		}
	}
	if seen.Load() != "Bearer tok-1" || issued.Load() != 1 {
		t.Errorf("upstream saw %v after %d tokens; want tok-1, issued once and reused", seen.Load(), issued.Load())
	}

	// A token that expires within the reuse margin is fetched again.
	shortURL, shortIssued := tokenServer(t, 1)
	up.OAuth.TokenURL, up.Name, up.Prefix = shortURL, "short", "s."
	b2, err := bridge.New(context.Background(), bridge.Options{Upstreams: []bridge.Upstream{up}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b2.Close() })
	if _, err := b2.CallTool(context.Background(), gateway.ToolCall{Tool: "s.whoami", RawArguments: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if shortIssued.Load() < 2 {
		t.Errorf("tokens issued for a token valid 1 s: %d; want a new one before each use", shortIssued.Load())
	}
}

// Credentials the token endpoint refuses leave the upstream degraded,
// with an error naming it and neither the secret nor the endpoint's reply.
func TestBridgeOAuthRefused(t *testing.T) {
	tokenURL, _ := tokenServer(t, 3600)
	up := newSDKServer(t, "guarded")
	b, err := bridge.New(context.Background(), bridge.Options{Upstreams: []bridge.Upstream{{Name: "guarded", Prefix: "g.", URL: up.url, Tier: gateway.TierRead,
		OAuth: &bridge.OAuth{TokenURL: tokenURL, ClientID: "gw", ClientSecret: "wrong-" + clientSecret}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if st := b.Status(); st[0].State != bridge.StateDegraded {
		t.Fatalf("status %+v; want degraded", st)
	}
	err = b.Refresh(context.Background())
	if err == nil || !strings.Contains(err.Error(), `token endpoint of upstream "guarded" refused the client credentials (HTTP 401, error "invalid_client")`) {
		t.Fatalf("refresh: %v", err)
	}
	if strings.Contains(err.Error(), clientSecret) || strings.Contains(err.Error(), "/token") {
		t.Errorf("the error shows the secret or the token endpoint: %v", err)
	}
}
