package config

// identityProvider checks the identity provider variables (docs/operations.md, "Identity provider",
// docs/configuration.md "Identity provider") and reports whether they
// are the source of the JWT keys. With one, the protected resource
// metadata names the issuer as its authorization server (RFC 9728) unless
// MCPGATE_AUTHORIZATION_SERVERS says otherwise.
func (c *Config) identityProvider(r *reader) bool {
	if c.JWTJWKSURL == "" && !c.JWTDiscovery {
		return false
	}
	switch {
	case len(c.JWTSecret) > 0 || len(c.JWTPublicKeyPEM) > 0:
		r.fail("MCPGATE_JWT_JWKS_URL or MCPGATE_JWT_DISCOVERY is set with MCPGATE_JWT_SECRET or MCPGATE_JWT_PUBLIC_KEY_FILE; choose one source of keys")
	case c.JWTJWKSURL != "" && c.JWTDiscovery:
		r.fail("MCPGATE_JWT_JWKS_URL and MCPGATE_JWT_DISCOVERY=true are both set; give the key set's URL or discover it from MCPGATE_JWT_ISSUER, not both")
	case c.JWTJWKSURL != "" && !isHTTPURL(c.JWTJWKSURL):
		r.fail("MCPGATE_JWT_JWKS_URL=%q: want the absolute http:// or https:// URL of the identity provider's JWKS", c.JWTJWKSURL)
	case c.JWTIssuer == "":
		// Without an issuer any token the provider signs for this
		// audience would do, whoever it was issued to by that tenant.
		r.fail("MCPGATE_JWT_ISSUER is required with an identity provider's keys (MCPGATE_JWT_JWKS_URL or MCPGATE_JWT_DISCOVERY): the iss its tokens carry")
	case !isHTTPURL(c.JWTIssuer) && c.JWTDiscovery:
		r.fail("MCPGATE_JWT_ISSUER=%q: discovery needs the issuer's http:// or https:// URL", c.JWTIssuer)
	}
	if len(c.AuthorizationServers) == 0 && isHTTPURL(c.JWTIssuer) {
		c.AuthorizationServers = []string{c.JWTIssuer}
	}
	return true
}
