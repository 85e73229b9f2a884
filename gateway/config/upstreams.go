package config

import (
	"os"
	"time"
)

// Upstreams configures the MCP servers bridged into the surfaces
// (docs/configuration.md#bridged-upstreams). The file itself is read and
// checked against the surfaces' catalogs by gateway/upstreams when the
// gateway starts; here only its path and the timings.
type Upstreams struct {
	// File (MCPGATE_UPSTREAMS_FILE) declares the bridged upstreams; ""
	// bridges none. It is independent of MCPGATE_UPSTREAM_URL, which
	// keeps replacing the SupaCloud demo backend with one upstream.
	File string
	// Refresh (MCPGATE_UPSTREAM_REFRESH, default DefaultUpstreamRefresh,
	// at least MinUpstreamRefresh) is how often every bridged upstream's
	// tools are listed again; a degraded upstream is tried again then.
	Refresh time.Duration
	// Timeout (MCPGATE_UPSTREAM_TIMEOUT, default DefaultUpstreamTimeout)
	// bounds one operation with a bridged upstream: a tools/call, a
	// tools/list walk, the handshake.
	Timeout time.Duration
}

// Defaults and bounds of the bridged upstreams' timings.
const (
	DefaultUpstreamRefresh = 5 * time.Minute
	MinUpstreamRefresh     = time.Second
	DefaultUpstreamTimeout = 30 * time.Second
	MaxUpstreamTimeout     = 10 * time.Minute
)

// loadUpstreams reads MCPGATE_UPSTREAMS_FILE, MCPGATE_UPSTREAM_REFRESH
// and MCPGATE_UPSTREAM_TIMEOUT and checks them.
func (c *Config) loadUpstreams(r *reader) {
	c.Upstreams = Upstreams{
		File:    r.getenv("MCPGATE_UPSTREAMS_FILE"),
		Refresh: r.duration("MCPGATE_UPSTREAM_REFRESH", DefaultUpstreamRefresh),
		Timeout: r.duration("MCPGATE_UPSTREAM_TIMEOUT", DefaultUpstreamTimeout),
	}
	u := c.Upstreams
	if u.File != "" {
		if st, err := os.Stat(u.File); err != nil || st.IsDir() {
			r.fail("MCPGATE_UPSTREAMS_FILE=%q: not a readable file; point it at the JSON file that declares the bridged upstreams, or unset it", u.File)
		}
	}
	if u.Refresh < MinUpstreamRefresh {
		r.fail("MCPGATE_UPSTREAM_REFRESH=%s: want at least %s (default %s)", u.Refresh, MinUpstreamRefresh, DefaultUpstreamRefresh)
	}
	if u.Timeout > MaxUpstreamTimeout {
		r.fail("MCPGATE_UPSTREAM_TIMEOUT=%s: want at most %s (default %s)", u.Timeout, MaxUpstreamTimeout, DefaultUpstreamTimeout)
	}
}
