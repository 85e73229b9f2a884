package config

import (
	"slices"
	"strings"
	"testing"
)

func TestIdentityProviderConfig(t *testing.T) {
	load := func(env map[string]string) (*Config, error) {
		return Load(func(k string) string { return env[k] })
	}
	const issuer = "https://idp.example.com/realms/main"
	c, err := load(map[string]string{"MCPGATE_JWT_DISCOVERY": "true", "MCPGATE_JWT_ISSUER": issuer})
	if err != nil || !c.JWTDiscovery || !slices.Equal(c.AuthorizationServers, []string{issuer}) {
		t.Fatalf("discovery: %v, authorization servers %v; want the issuer named in the resource metadata", err, c.AuthorizationServers)
	}
	c, err = load(map[string]string{"MCPGATE_JWT_JWKS_URL": issuer + "/certs", "MCPGATE_JWT_ISSUER": issuer, "MCPGATE_AUTHORIZATION_SERVERS": "https://as.example.com"})
	if err != nil || c.JWTJWKSURL != issuer+"/certs" || !slices.Equal(c.AuthorizationServers, []string{"https://as.example.com"}) {
		t.Fatalf("JWKS URL: %v, authorization servers %v; want the configured ones kept", err, c.AuthorizationServers)
	}
	for name, tc := range map[string]struct {
		env  map[string]string
		want string
	}{
		"with a secret":         {map[string]string{"MCPGATE_JWT_JWKS_URL": issuer, "MCPGATE_JWT_ISSUER": issuer, "MCPGATE_JWT_SECRET": strings.Repeat("s", 32)}, "choose one source of keys"},
		"URL and discovery":     {map[string]string{"MCPGATE_JWT_JWKS_URL": issuer, "MCPGATE_JWT_DISCOVERY": "true", "MCPGATE_JWT_ISSUER": issuer}, "not both"},
		"URL not http":          {map[string]string{"MCPGATE_JWT_JWKS_URL": "keys.json", "MCPGATE_JWT_ISSUER": issuer}, "MCPGATE_JWT_JWKS_URL=\"keys.json\""},
		"no issuer":             {map[string]string{"MCPGATE_JWT_JWKS_URL": issuer}, "MCPGATE_JWT_ISSUER is required"},
		"discovery, bad issuer": {map[string]string{"MCPGATE_JWT_DISCOVERY": "true", "MCPGATE_JWT_ISSUER": "main-realm"}, "discovery needs the issuer's"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := load(tc.env); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
