package config

import (
	"net"
	"net/url"
	"strings"
)

// HTTP configures the HTTP surface of the MCP endpoints: which host names
// they answer to and how OAuth-capable clients find the authorization
// server. It is embedded in Config, so its fields read as cfg.PublicURL.
type HTTP struct {
	// PublicURL is the URL clients reach the gateway at, without a trailing
	// slash (MCPGATE_PUBLIC_URL; default http://<MCPGATE_LISTEN>, with
	// localhost for a wildcard address). The OAuth resource identifiers
	// (PublicURL and PublicURL/mcp) and the resource metadata URL derive
	// from it (RFC 9728 §3).
	PublicURL string
	// AuthorizationServers are the issuer URLs of the OAuth authorization
	// servers whose tokens the gateway accepts, published in the protected
	// resource metadata (MCPGATE_AUTHORIZATION_SERVERS, comma separated;
	// none by default).
	AuthorizationServers []string
	// AllowedHosts are the Host header values the MCP endpoints accept,
	// against DNS rebinding (MCPGATE_ALLOWED_HOSTS, comma separated: "name"
	// for any port, "name:port", "[::1]", or "*" for any host). Default:
	// on a loopback MCPGATE_LISTEN its host plus localhost, 127.0.0.1 and
	// [::1]; on another specific address that address; on a wildcard
	// address (0.0.0.0, ::, empty) no check. The host of an explicit
	// MCPGATE_PUBLIC_URL is added to the default.
	AllowedHosts []string
}

// loopbackHosts are the names of the local machine a client may use.
var loopbackHosts = []string{"localhost", "127.0.0.1", "[::1]"}

// loadHTTP reads and checks the HTTP variables; it needs c.Listen.
func (c *Config) loadHTTP(r *reader) {
	host, port, _ := net.SplitHostPort(c.Listen) // Listen is checked by validate
	explicit := r.getenv("MCPGATE_PUBLIC_URL")
	c.PublicURL = strings.TrimSuffix(explicit, "/")
	if c.PublicURL == "" {
		c.PublicURL = "http://" + net.JoinHostPort(publicHost(host), port)
	} else if !isHTTPURL(c.PublicURL) {
		r.fail("MCPGATE_PUBLIC_URL=%q: want the absolute http:// or https:// URL clients use to reach the gateway, without query or fragment", explicit)
	}
	c.AuthorizationServers = splitList(r.getenv("MCPGATE_AUTHORIZATION_SERVERS"))
	for _, as := range c.AuthorizationServers {
		if !isHTTPURL(as) {
			r.fail("MCPGATE_AUTHORIZATION_SERVERS: %q is not an absolute http:// or https:// issuer URL", as)
		}
	}
	c.AllowedHosts = splitList(r.getenv("MCPGATE_ALLOWED_HOSTS"))
	for _, h := range c.AllowedHosts {
		if strings.ContainsAny(h, "/@ ") {
			r.fail("MCPGATE_ALLOWED_HOSTS: %q is not a host name; write it as a Host header carries it (gw.example.com or gw.example.com:8443), without scheme or path", h)
		}
	}
	if len(c.AllowedHosts) == 0 {
		c.AllowedHosts = defaultHosts(host, explicit)
	}
}

// defaultHosts is AllowedHosts when MCPGATE_ALLOWED_HOSTS is unset.
func defaultHosts(listenHost, publicURL string) []string {
	var hosts []string
	switch ip := net.ParseIP(listenHost); {
	case listenHost == "" || (ip != nil && ip.IsUnspecified()):
		return nil // every interface: names are unknown, so no check
	case listenHost == "localhost" || (ip != nil && ip.IsLoopback()):
		hosts = append(hosts, loopbackHosts...)
	}
	hosts = appendHost(hosts, listenHost)
	if u, err := url.Parse(publicURL); publicURL != "" && err == nil {
		hosts = appendHost(hosts, u.Hostname())
	}
	return hosts
}

// appendHost adds host (IPv6 in brackets) unless it is already there.
func appendHost(hosts []string, host string) []string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	for _, h := range hosts {
		if strings.EqualFold(h, host) {
			return hosts
		}
	}
	return append(hosts, host)
}

// publicHost is the host of the default public URL: the listen host, or
// localhost when the gateway listens on every interface.
func publicHost(listenHost string) string {
	if ip := net.ParseIP(listenHost); listenHost == "" || (ip != nil && ip.IsUnspecified()) {
		return "localhost"
	}
	return listenHost
}

// isHTTPURL reports an absolute http(s) URL with a host and no query or
// fragment.
func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.RawQuery == "" && u.Fragment == ""
}
