package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/zap"
)

// Environment variables of the identity provider's key set
// (docs/configuration.md; docs/operations.md, "Identity provider").
const (
	EnvJWKSURL   = "MCPGATE_JWT_JWKS_URL"
	EnvDiscovery = "MCPGATE_JWT_DISCOVERY"
)

// Bounds of a JWKS key source. They are variables only so that the
// package's tests can shorten them; nothing else sets them.
var (
	// unknownKIDEvery is the shortest time between two refreshes that a
	// token with an unknown kid starts: a flood of made-up kids costs the
	// provider at most one request per interval.
	unknownKIDEvery = 30 * time.Second
	// jwksRetry is how soon a failed refresh is tried again.
	jwksRetry = 30 * time.Second
)

const (
	// MaxJWKSBytes bounds a JWKS or discovery document; real ones are a
	// few kilobytes, and a larger body is refused before it is decoded.
	MaxJWKSBytes = 1 << 20
	// DefaultJWKSTimeout bounds one request to the provider.
	DefaultJWKSTimeout = 10 * time.Second
	// jwksMinAge and jwksMaxAge clamp the freshness the provider's
	// caching headers give: no tighter than a minute, and at least one
	// refresh a day (docs/operations.md, "Identity provider").
	jwksMinAge = time.Minute
	jwksMaxAge = 24 * time.Hour
	// jwksDefaultAge is the freshness of a response without caching
	// headers.
	jwksDefaultAge = time.Hour
	// discoveryPath is appended to the issuer (OpenID Connect Discovery
	// 1.0 §4).
	discoveryPath = "/.well-known/openid-configuration"
)

// JWKSConfig configures a key set fetched from an identity provider.
type JWKSConfig struct {
	// URL is the JWKS document (MCPGATE_JWT_JWKS_URL). When empty, the
	// URL is discovered from Issuer's OpenID configuration
	// (MCPGATE_JWT_DISCOVERY=true).
	URL string
	// Issuer is the provider's issuer (MCPGATE_JWT_ISSUER); required for
	// discovery, and then equal to the discovery document's "issuer".
	Issuer string
	// Timeout bounds each request to the provider; 0 means
	// DefaultJWKSTimeout.
	Timeout time.Duration
	// Client makes the requests; nil means a client of its own.
	Client *http.Client
	// Log receives a line per failed refresh and per key that is not
	// used; nil logs nothing.
	Log *zap.Logger
	// OnRefresh, when set, is called after each refresh with whether it
	// succeeded (the gateway counts them, mcpgate_jwks_refreshes_total).
	OnRefresh func(ok bool)
}

// JWKS is the key set of an identity provider: keys by kid, fetched with
// jwkset and looked up with keyfunc, refreshed as the provider's HTTP
// caching headers say (at least daily), and at most once per 30 s when a
// token names a kid the set lacks. A failed refresh keeps the cached keys
// (Status reports degraded); a successful one replaces them, so a key
// removed by the provider stops verifying. Each key fixes the one
// algorithm it verifies (RSA ≥ 2048 bits: RS256, P-256: ES256, Ed25519:
// EdDSA), never the token's header. It is safe for concurrent use; Close
// stops its refreshes.
type JWKS struct {
	cfg    JWKSConfig
	log    *zap.Logger
	keys   *jwkset.MemoryJWKSet
	kf     keyfunc.Keyfunc
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	// gen counts the changes of the key set; a verifier forgets the
	// tokens it accepted under an older one.
	gen atomic.Uint64

	// fetching serialises refreshes and guards jwksURL and fingerprint;
	// mu guards the state Status and refreshForUnknown read, so neither
	// waits for a provider that is slow to answer.
	fetching    sync.Mutex
	jwksURL     string // discovered or configured
	fingerprint string // of the key set held
	mu          sync.Mutex
	lastErr     error     // of the last refresh; nil: fresh
	lastFailed  time.Time // when a refresh last failed
	lastUnknown time.Time // last refresh an unknown kid started
}

// JWKSStatus is what /readyz shows of a key set.
type JWKSStatus struct {
	// State is "ok", or "degraded" while the last refresh failed (the
	// cached keys still verify).
	State string `json:"state"`
	// Keys is how many keys verify now.
	Keys int `json:"keys"`
}

// NewJWKS checks cfg, fetches the key set once (a provider that does not
// answer leaves the set empty and degraded: tokens are refused until a
// refresh succeeds) and starts the background refresh. Errors name the
// variable to fix.
func NewJWKS(cfg JWKSConfig) (*JWKS, error) {
	if cfg.URL == "" && cfg.Issuer == "" {
		return nil, fmt.Errorf("%s=true needs %s, the issuer whose %s names the JWKS", EnvDiscovery, EnvIssuer, discoveryPath)
	}
	for _, u := range []struct{ name, v string }{{EnvJWKSURL, cfg.URL}, {EnvIssuer, cfg.Issuer}} {
		if u.v != "" && !isHTTPURL(u.v) {
			return nil, fmt.Errorf("%s=%q: want an absolute http:// or https:// URL", u.name, u.v)
		}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultJWKSTimeout
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	s := &JWKS{cfg: cfg, log: cfg.Log, keys: jwkset.NewMemoryStorage(), jwksURL: cfg.URL, done: make(chan struct{})}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	var err error
	if s.kf, err = keyfunc.New(keyfunc.Options{Storage: s.keys, UseWhitelist: []jwkset.USE{jwkset.UseSig, ""}}); err != nil {
		return nil, fmt.Errorf("JWKS key lookup: %w", err)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	next := s.refresh()
	go s.loop(next)
	return s, nil
}

// Close stops the background refresh and waits for it.
func (s *JWKS) Close() {
	s.cancel()
	<-s.done
}

// Status reports whether the last refresh succeeded and how many keys
// verify.
func (s *JWKS) Status() JWKSStatus {
	all, _ := s.keys.KeyReadAll(s.ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := JWKSStatus{State: "ok", Keys: len(all)}
	if s.lastErr != nil {
		st.State = "degraded"
	}
	return st
}

// Refresh fetches the key set now, as the background refresh does, and
// reports whether it succeeded (the cached keys stay when it did not).
func (s *JWKS) Refresh() bool {
	s.refresh()
	return s.Status().State == "ok"
}

// Generation changes whenever the key set does.
func (s *JWKS) Generation() uint64 { return s.gen.Load() }

// loop refreshes at the times the previous refresh chose.
func (s *JWKS) loop(next time.Duration) {
	defer close(s.done)
	t := time.NewTimer(next)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			t.Reset(s.refresh())
		}
	}
}

// refresh fetches the key set (discovering its URL first when needed)
// and returns when to refresh next: the response's freshness, or
// jwksRetry after a failure, which keeps the cached keys.
func (s *JWKS) refresh() time.Duration {
	s.fetching.Lock()
	defer s.fetching.Unlock()
	age, err := s.fetch()
	if s.cfg.OnRefresh != nil {
		s.cfg.OnRefresh(err == nil)
	}
	s.mu.Lock()
	was := s.lastErr
	s.lastErr = err
	if err != nil {
		s.lastFailed = time.Now()
	}
	s.mu.Unlock()
	if err != nil {
		s.log.Warn("identity provider key set refresh failed; the cached keys keep verifying, /readyz shows degraded",
			zap.String("jwks_url", s.jwksURL), zap.String("issuer", s.cfg.Issuer), zap.Error(err))
		return jwksRetry
	}
	if was != nil {
		s.log.Info("identity provider key set refreshed again", zap.String("jwks_url", s.jwksURL))
	}
	return age
}

// fetch runs one refresh under s.fetching.
func (s *JWKS) fetch() (time.Duration, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Timeout)
	defer cancel()
	if s.jwksURL == "" {
		u, err := s.discover(ctx)
		if err != nil {
			return 0, err
		}
		s.jwksURL = u
	}
	var hdr http.Header
	staging := jwkset.NewMemoryStorage()
	_, err := jwkset.NewStorageFromHTTP(s.jwksURL, jwkset.HTTPClientStorageOptions{
		Client: s.client(&hdr), Ctx: ctx, HTTPTimeout: s.cfg.Timeout, Storage: staging,
	})
	if err != nil {
		err = fmt.Errorf("JWKS %s: %w", s.jwksURL, err)
		if s.cfg.URL == "" {
			s.jwksURL = "" // discover again: the provider may have moved it
		}
		return 0, err
	}
	fetched, _ := staging.KeyReadAll(ctx)
	usable := s.screen(fetched)
	if len(usable) == 0 {
		return 0, fmt.Errorf("JWKS %s holds no usable signing key (%d keys, none RSA ≥ %d bits, ECDSA P-256 or Ed25519 with a matching alg)", s.jwksURL, len(fetched), minRSABits)
	}
	if fp := fingerprint(usable); fp != s.fingerprint {
		if err := s.keys.KeyReplaceAll(ctx, usable); err != nil {
			return 0, err
		}
		s.fingerprint = fp
		s.gen.Add(1)
	}
	return freshness(hdr), nil
}

// screen keeps the keys that fix one acceptable algorithm: a key whose
// type or size mcpgate refuses, or whose "alg" names another algorithm
// (including "none"), is logged and left out.
func (s *JWKS) screen(keys []jwkset.JWK) []jwkset.JWK {
	out := keys[:0:0]
	for _, k := range keys {
		m := k.Marshal()
		alg, _, err := algorithmFor(k.Key())
		if err == nil && m.ALG != "" && m.ALG.String() != alg {
			err = fmt.Errorf("it declares alg %q, but its key verifies %s only", displayWord(m.ALG.String()), alg)
		}
		if err != nil {
			s.log.Warn("identity provider key not used", zap.String("kid", m.KID), zap.String("jwks_url", s.jwksURL), zap.String("reason", strings.TrimPrefix(err.Error(), EnvPublicKeyFile+": ")))
			continue
		}
		out = append(out, k)
	}
	return out
}

// discover reads the JWKS URL from the issuer's OpenID configuration,
// whose issuer must be the configured one (OpenID Connect Discovery 1.0
// §4.3), so a document served elsewhere cannot name its own keys.
func (s *JWKS) discover(ctx context.Context) (string, error) {
	u := strings.TrimSuffix(s.cfg.Issuer, "/") + discoveryPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := s.client(nil).Do(req)
	if err != nil {
		return "", fmt.Errorf("OpenID discovery %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("OpenID discovery %s: HTTP %d", u, resp.StatusCode)
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return "", fmt.Errorf("OpenID discovery %s: not a JSON configuration: %w", u, err)
	}
	switch {
	case doc.Issuer != s.cfg.Issuer:
		return "", fmt.Errorf("OpenID discovery %s names issuer %q, not %s=%q; set %s to the issuer exactly as the provider names it", u, doc.Issuer, EnvIssuer, s.cfg.Issuer, EnvIssuer)
	case !isHTTPURL(doc.JWKSURI):
		return "", fmt.Errorf("OpenID discovery %s: jwks_uri %q is not an http(s) URL", u, doc.JWKSURI)
	}
	return doc.JWKSURI, nil
}

// client is the provider client with every body bounded by MaxJWKSBytes;
// when hdr is set it receives the response's headers.
func (s *JWKS) client(hdr *http.Header) *http.Client {
	c := *s.cfg.Client
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = boundedTransport{base: base, hdr: hdr}
	return &c
}

// boundedTransport refuses a body past MaxJWKSBytes and hands the
// response headers to the fetch that asked.
type boundedTransport struct {
	base http.RoundTripper
	hdr  *http.Header
}

func (t boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if t.hdr != nil {
		*t.hdr = resp.Header
	}
	resp.Body = &boundedBody{rc: resp.Body, left: MaxJWKSBytes}
	return resp, nil
}

// errTooLarge is a provider document past MaxJWKSBytes.
var errTooLarge = fmt.Errorf("the document is larger than %d bytes; a key set is a few kilobytes", MaxJWKSBytes)

type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// freshness is how long a response stays fresh by its Cache-Control
// max-age (no-store and no-cache: not at all) or Expires, clamped to
// [jwksMinAge, jwksMaxAge]; jwksDefaultAge without either.
func freshness(h http.Header) time.Duration {
	age, ok := time.Duration(0), false
	for _, d := range strings.Split(h.Get("Cache-Control"), ",") {
		name, val, _ := strings.Cut(strings.TrimSpace(strings.ToLower(d)), "=")
		switch name {
		case "no-store", "no-cache":
			age, ok = 0, true
		case "max-age", "s-maxage":
			if n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64); err == nil && !ok {
				age, ok = time.Duration(n)*time.Second, true
			}
		}
	}
	if !ok {
		if exp, err := http.ParseTime(h.Get("Expires")); err == nil {
			date, derr := http.ParseTime(h.Get("Date"))
			if derr != nil {
				date = time.Now()
			}
			age, ok = exp.Sub(date), true
		}
	}
	if !ok {
		return jwksDefaultAge
	}
	return min(max(age, jwksMinAge), jwksMaxAge)
}

// fingerprint identifies a key set by its public keys.
func fingerprint(keys []jwkset.JWK) string {
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		b, _ := json.Marshal(k.Marshal())
		parts = append(parts, string(b))
	}
	slices.Sort(parts)
	return strings.Join(parts, "\n")
}

// refreshForUnknown refreshes once for a token whose kid the set lacks,
// unless a refresh for an unknown kid ran in the last unknownKIDEvery, or
// the last refresh failed within it: a provider that is down, or never
// answers, would hold the call until the request timeout, and the
// background refresh tries again anyway (jwksRetry). It reports whether
// it refreshed.
func (s *JWKS) refreshForUnknown() bool {
	s.mu.Lock()
	if time.Since(s.lastUnknown) < unknownKIDEvery || (s.lastErr != nil && time.Since(s.lastFailed) < unknownKIDEvery) {
		s.mu.Unlock()
		return false
	}
	s.lastUnknown = time.Now()
	s.mu.Unlock()
	s.refresh()
	return true
}

// errNoKey is a token whose key the set does not hold.
var errNoKey = errors.New("no key of the identity provider's key set")

// keyfunc returns the key that verifies t: by kid, or for a token without
// kid every key of the token's algorithm. The key's own algorithm must be
// the token's. When the set holds no such key it is refreshed once (at
// most once per unknownKIDEvery, whoever asks) and looked up again.
func (s *JWKS) keyfunc(t *jwt.Token) (any, error) {
	k, err := s.lookup(t)
	if errors.Is(err, errNoKey) && s.refreshForUnknown() {
		k, err = s.lookup(t)
	}
	return k, err
}

// lookup is keyfunc on the keys held now.
func (s *JWKS) lookup(t *jwt.Token) (any, error) {
	k, err := s.kf.KeyfuncCtx(s.ctx)(t)
	if errors.Is(err, jwkset.ErrKeyNotFound) {
		return nil, errNoKey
	}
	if err != nil {
		return nil, err
	}
	if set, ok := k.(jwt.VerificationKeySet); ok {
		set.Keys = slices.DeleteFunc(set.Keys, func(k jwt.VerificationKey) bool { return !keyVerifies(k, t.Method.Alg()) })
		if len(set.Keys) == 0 {
			return nil, errNoKey
		}
		return set, nil
	}
	if !keyVerifies(k, t.Method.Alg()) {
		return nil, fmt.Errorf("%w: the key named by kid verifies another algorithm than %s", errNoKey, displayWord(t.Method.Alg()))
	}
	return k, nil
}

// keyVerifies reports whether k's own algorithm is alg.
func keyVerifies(k any, alg string) bool {
	a, _, err := algorithmFor(k)
	return err == nil && a == alg
}

// isHTTPURL reports whether s is an absolute http(s) URL with a host.
func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
