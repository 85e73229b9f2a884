package mcpupstream

import "net/http"

// withHeaders returns a copy of base (http.DefaultClient when nil) whose
// requests carry header, so callers can authenticate to the upstream
// without touching the SDK's transport.
func withHeaders(base *http.Client, header http.Header) *http.Client {
	if base == nil {
		base = http.DefaultClient
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
