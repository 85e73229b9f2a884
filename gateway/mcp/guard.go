package mcp

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// CORS header values. Allowed request headers are the ones MCP clients send
// (MCP 2025-11-25, basic/transports: Mcp-Session-Id, MCP-Protocol-Version,
// Last-Event-ID) plus Authorization for the bearer token; exposed response
// headers are the ones a browser client must read: the session id and the
// 401 challenge that starts OAuth discovery.
const (
	corsAllowHeaders  = "Authorization, Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID"
	corsExposeHeaders = "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate"
	corsVary          = "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"
)

// DefaultCORSMaxAge is how long a browser may cache a preflight answer when
// Options.CORSMaxAge is zero (Chromium caps it at 2 hours anyway).
const DefaultCORSMaxAge = 600 // seconds

// hostSet is the parsed Options.AllowedHosts: names that match on any port,
// host:port pairs that match exactly, or any host at all.
type hostSet struct {
	any   bool
	names map[string]bool // lower-case host without port; IPv6 without brackets
	pairs map[string]bool // lower-case host:port as net.JoinHostPort writes it
}

// newHostSet parses entries such as "localhost", "127.0.0.1:8080", "[::1]"
// or "*". No entries means no Host check.
func newHostSet(entries []string) hostSet {
	hs := hostSet{any: len(entries) == 0, names: map[string]bool{}, pairs: map[string]bool{}}
	for _, e := range entries {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "*" {
			hs.any = true
			continue
		}
		if host, port, err := net.SplitHostPort(e); err == nil {
			hs.pairs[net.JoinHostPort(host, port)] = true
			continue
		}
		hs.names[strings.Trim(e, "[]")] = true
	}
	return hs
}

// allows reports whether a request's Host header names this server.
func (hs hostSet) allows(hostHeader string) bool {
	if hs.any {
		return true
	}
	h := strings.ToLower(hostHeader)
	if host, port, err := net.SplitHostPort(h); err == nil {
		return hs.pairs[net.JoinHostPort(host, port)] || hs.names[host]
	}
	return hs.names[strings.Trim(h, "[]")]
}

// ProbeHosts returns the Host check of the gateway's probes and metrics
// (/healthz, /readyz, /metrics and the profiles beside them): it reports
// whether a request's Host header may reach them. It allows what the MCP
// endpoints allow with entries (Options.AllowedHosts; none allows any
// Host), and also, on any port, the loopback name localhost and any IP
// address (127.0.0.1, [::1], a pod's 10.1.2.3): Prometheus and kubelet
// probes send the address they connect to, and an IP address cannot be a
// rebound DNS name, so only names the operator did not configure are
// refused (DNS rebinding protection, as in guard).
func ProbeHosts(entries []string) func(host string) bool {
	hs := newHostSet(entries)
	return func(host string) bool {
		if hs.allows(host) {
			return true
		}
		name := host
		if h, _, err := net.SplitHostPort(host); err == nil {
			name = h
		}
		name = strings.Trim(name, "[]")
		return strings.EqualFold(name, "localhost") || net.ParseIP(name) != nil
	}
}

// guard runs the checks that come before authentication, so that a browser
// or a rebound DNS name never reaches the authenticator: the Host header
// (DNS rebinding, MCP 2025-11-25 basic/security_best_practices, "Local MCP
// Server Compromise"), the Origin header (basic/transports, "Security
// Warning") and CORS, answering preflight requests itself. It reports
// whether the request goes on; when false the reply is written.
func (t *Transport) guard(w http.ResponseWriter, r *http.Request, methods string) bool {
	if !t.hosts.allows(r.Host) {
		t.replyError(w, r, nil, wire.ErrStatus(http.StatusForbidden, gateway.EForbidden,
			"Host %q is not a name of this MCP server (DNS rebinding protection); connect with an allowed host name, or an operator can add it to MCPGATE_ALLOWED_HOSTS", r.Host))
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true // not a browser: CORS does not apply
	}
	if t.sameOrigin(origin, r.Host) {
		return true // a page served under this server's own checked name: no CORS needed
	}
	if !t.anyOrigin && !t.origins[normalizeOrigin(origin)] {
		t.replyError(w, r, nil, wire.ErrStatus(http.StatusForbidden, gateway.EForbidden,
			"origin %q is not allowed to call this MCP endpoint; an operator can add it to MCPGATE_ALLOWED_ORIGINS", origin))
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
	h.Add("Vary", corsVary)
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return true
	}
	h.Set("Access-Control-Allow-Methods", methods)
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", strconv.Itoa(t.opts.CORSMaxAge))
	w.WriteHeader(http.StatusNoContent)
	return false
}

// sameOrigin reports whether origin names the server itself: its authority
// equals the request's Host and that Host passed a restrictive Host check.
// Without a Host check (listening on all interfaces with no
// MCPGATE_ALLOWED_HOSTS) a rebound name would match itself, so the rule is
// off there and only MCPGATE_ALLOWED_ORIGINS counts.
func (t *Transport) sameOrigin(origin, host string) bool {
	if t.hosts.any {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

// normalizeOrigin compares origins case-insensitively, without a trailing slash.
func normalizeOrigin(o string) string {
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(o), "/"))
}
