package bridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// OAuth are an upstream's client credentials (RFC 6749 §4.4): the bridge
// gets a bearer token from TokenURL and a new one before it expires.
type OAuth struct {
	TokenURL     string
	ClientID     string
	ClientSecret string
	Scopes       []string
}

// httpClient is the HTTP client of upstream u: opts.HTTPClient (nil: the
// upstream client's own), with a bearer token of u's client credentials
// on every request when u has them.
func (b *Bridge) httpClient(u Upstream) *http.Client {
	if u.OAuth == nil {
		return b.opts.HTTPClient
	}
	base := http.DefaultTransport
	if b.opts.HTTPClient != nil && b.opts.HTTPClient.Transport != nil {
		base = b.opts.HTTPClient.Transport
	}
	cc := &clientcredentials.Config{ClientID: u.OAuth.ClientID, ClientSecret: u.OAuth.ClientSecret, TokenURL: u.OAuth.TokenURL, Scopes: u.OAuth.Scopes}
	// The token requests go through base too, each bounded by the timeout.
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: base, Timeout: b.opts.Timeout})
	// cc.TokenSource reuses a token until shortly before it expires.
	src := tokenSource{upstream: u.Name, src: cc.TokenSource(ctx)}
	return &http.Client{Transport: &oauth2.Transport{Source: src, Base: base}}
}

// tokenSource says, when no token can be had, which upstream's token
// endpoint failed and how, without the endpoint's URL or its reply
// (either may carry what the operator keeps secret).
type tokenSource struct {
	upstream string
	src      oauth2.TokenSource
}

func (s tokenSource) Token() (*oauth2.Token, error) {
	t, err := s.src.Token()
	if err == nil {
		return t, nil
	}
	var re *oauth2.RetrieveError
	var op *net.OpError
	switch {
	case errors.As(err, &re) && re.Response != nil:
		code := ""
		if re.ErrorCode != "" {
			code = fmt.Sprintf(", error %q", re.ErrorCode)
		}
		return nil, fmt.Errorf("the OAuth token endpoint of upstream %q refused the client credentials (HTTP %d%s); check oauth in MCPGATE_UPSTREAMS_FILE", s.upstream, re.Response.StatusCode, code)
	case errors.As(err, &op):
		return nil, fmt.Errorf("the OAuth token endpoint of upstream %q could not be reached (%s: %v)", s.upstream, op.Op, op.Err)
	}
	return nil, fmt.Errorf("the OAuth token endpoint of upstream %q gave no token; check oauth in MCPGATE_UPSTREAMS_FILE", s.upstream)
}
