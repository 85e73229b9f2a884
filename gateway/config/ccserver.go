package config

import (
	"net"
	"strings"
)

// CCServer configures the cc_server surface (docs/requirements.md#cc-registry): its own listener,
// the audience of its JWTs, its backend and its per-principal limit.
type CCServer struct {
	// Listen is the address of the cc_server listener
	// (MCPGATE_CCSERVER_LISTEN): POST /mcp, GET /sse and POST /messages.
	// "" (the default) leaves the surface off; `serve --dev` sets
	// DevCCServerListen, the seed's port.
	Listen string
	// JWTAudience is the aud a cc_server JWT must carry
	// (MCPGATE_CCSERVER_JWT_AUDIENCE, default DefaultCCServerAudience).
	// The key and issuer are the agent JWTs' (MCPGATE_JWT_SECRET or
	// MCPGATE_JWT_PUBLIC_KEY_FILE, MCPGATE_JWT_ISSUER); the audience must
	// differ from MCPGATE_JWT_AUDIENCE, so that a token of one surface is
	// never accepted on the other.
	JWTAudience string
	// UpstreamURL (MCPGATE_CCSERVER_UPSTREAM_URL) puts a real cc_server
	// behind the surface through the MCP upstream adapter; "" serves the
	// in-memory demo backend.
	UpstreamURL string
	// CallsPerMinute overrides the per-principal cap of tools/call per UTC
	// minute (MCPGATE_CCSERVER_CALLS_PER_MINUTE); 0 (unset) takes the
	// policy data's, else gateway.DefaultCCServerCallsPerMinute. It is
	// also Limits.CCServerCallsPerMinute.
	CallsPerMinute int
}

// Defaults of the cc_server surface.
const (
	// DefaultCCServerAudience is the aud of cc_server JWTs when
	// MCPGATE_CCSERVER_JWT_AUDIENCE is unset.
	DefaultCCServerAudience = "mcpgate-ccserver"
	// DevCCServerListen is MCPGATE_CCSERVER_LISTEN under `serve --dev`:
	// default port of docs/requirements.md#cc-registry.
	DevCCServerListen = "127.0.0.1:9030"
)

// On reports whether the cc_server surface is served.
func (c CCServer) On() bool { return c.Listen != "" }

// loadCCServer reads the MCPGATE_CCSERVER_* variables and checks them.
func (c *Config) loadCCServer(r *reader) {
	c.CCServer = CCServer{
		Listen:      r.getenv("MCPGATE_CCSERVER_LISTEN"),
		JWTAudience: r.str("MCPGATE_CCSERVER_JWT_AUDIENCE", DefaultCCServerAudience),
		UpstreamURL: r.getenv("MCPGATE_CCSERVER_UPSTREAM_URL"),
	}
	if r.getenv("MCPGATE_CCSERVER_CALLS_PER_MINUTE") != "" {
		c.CCServer.CallsPerMinute = r.positive("MCPGATE_CCSERVER_CALLS_PER_MINUTE", 0)
	}
	c.Limits.CCServerCallsPerMinute = c.CCServer.CallsPerMinute
	cc := c.CCServer
	if cc.Listen != "" {
		// Port 0 is a fresh port for each listener, never one address twice.
		if _, port, err := net.SplitHostPort(cc.Listen); err != nil {
			r.fail("MCPGATE_CCSERVER_LISTEN=%q: want host:port such as %s (%v), or leave it unset to turn the cc_server surface off", cc.Listen, DevCCServerListen, err)
		} else if cc.Listen == c.Listen && port != "0" {
			r.fail("MCPGATE_CCSERVER_LISTEN=%q is MCPGATE_LISTEN too; give the cc_server surface its own address", cc.Listen)
		}
	}
	if cc.JWTAudience == c.JWTAudience {
		r.fail("MCPGATE_CCSERVER_JWT_AUDIENCE=%q equals MCPGATE_JWT_AUDIENCE; choose another audience, so that SupaCloud agent tokens are not accepted as cc_server tokens", cc.JWTAudience)
	}
	if cc.UpstreamURL != "" && !strings.HasPrefix(cc.UpstreamURL, "http://") && !strings.HasPrefix(cc.UpstreamURL, "https://") {
		r.fail("MCPGATE_CCSERVER_UPSTREAM_URL: want an http:// or https:// URL of a cc_server MCP endpoint (the value starts %q)", scheme(cc.UpstreamURL))
	}
}
