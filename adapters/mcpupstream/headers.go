package mcpupstream

import "net/http"

// MaxIdleConns is how many idle connections to the upstream an Adapter
// keeps open when Options.HTTPClient is nil: enough for every concurrent
// call of a busy gateway to find one. net/http's default of 2 per host
// made all but 2 of the concurrent calls dial a connection and close it
// afterwards.
const MaxIdleConns = 256

// keepAliveClient is the HTTP client of an Adapter without
// Options.HTTPClient: its transport is inline, or keepAlive where alive
// cannot peek at a socket (canPeek).
func keepAliveClient() *http.Client {
	if canPeek {
		return &http.Client{Transport: inline}
	}
	return &http.Client{Transport: keepAlive}
}

// inline is the transport of keepAliveClient: plain-http exchanges on the
// caller's goroutine (inlineTransport), everything else through
// keepAlive, whose settings it shares.
var inline = newInlineTransport(keepAlive, MaxIdleConns)

// keepAlive is the transport the Adapters without Options.HTTPClient
// share, as they shared http.DefaultTransport before: its settings (proxy
// from the environment, timeouts, HTTP/2) with MaxIdleConns idle
// connections per host.
var keepAlive = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = MaxIdleConns, MaxIdleConns
	return t
}()

// withHeaders returns a copy of base (keepAliveClient when nil) whose
// requests carry header, so callers can authenticate to the upstream
// without touching the SDK's transport.
func withHeaders(base *http.Client, header http.Header) *http.Client {
	if base == nil {
		base = keepAliveClient()
	}
	c := *base
	if len(header) == 0 {
		return &c
	}
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = &headerTransport{header: header.Clone(), next: next}
	return &c
}

// headerTransport sets fixed headers on every request it forwards.
type headerTransport struct {
	header http.Header
	next   http.RoundTripper
}

// RoundTrip clones req (a RoundTripper must not modify its input) and adds
// the configured headers, replacing any of the same name.
func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	for k, v := range t.header {
		r.Header[k] = v
	}
	return t.next.RoundTrip(r)
}
