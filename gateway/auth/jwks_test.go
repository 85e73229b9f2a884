package auth

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// provider is an identity provider's JWKS endpoint whose document the
// test changes while the verifier runs.
type provider struct {
	*httptest.Server
	mu     sync.Mutex
	body   []byte
	header http.Header
	hits   atomic.Int32
}

func newProvider(t *testing.T) *provider {
	t.Helper()
	p := &provider{header: http.Header{}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		p.mu.Lock()
		body, hdr := p.body, p.header.Clone()
		p.mu.Unlock()
		for k, v := range hdr {
			w.Header()[k] = v
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(p.Close)
	return p
}

// serve publishes body as the document.
func (p *provider) serve(body []byte) {
	p.mu.Lock()
	p.body = body
	p.mu.Unlock()
}

// serveKeys publishes a JWKS of the given keys (kid → public key, with
// an optional "alg").
func (p *provider) serveKeys(t *testing.T, keys ...jwkOf) {
	t.Helper()
	var set jwkset.JWKSMarshal
	for _, k := range keys {
		j, err := jwkset.NewJWKFromKey(k.pub, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: k.kid, ALG: jwkset.ALG(k.alg)}})
		if err != nil {
			t.Fatal(err)
		}
		set.Keys = append(set.Keys, j.Marshal())
	}
	p.serve(must(json.Marshal(set)))
}

type jwkOf struct {
	kid string
	pub any
	alg string
}

// signKid signs the test claims with key under kid.
func signKid(m jwt.SigningMethod, key any, kid string, edits ...func(jwt.MapClaims)) string {
	tok := jwt.NewWithClaims(m, claims(edits...))
	tok.Header["kid"] = kid
	return must(tok.SignedString(key))
}

// newJWKS starts a key set on url with a log the test reads.
func newJWKS(t *testing.T, cfg JWKSConfig) (*JWKS, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	cfg.Log = zap.New(core)
	s, err := NewJWKS(cfg)
	if err != nil {
		t.Fatalf("NewJWKS: %v", err)
	}
	t.Cleanup(s.Close)
	return s, logs
}

// shortUnknownKID lets every unknown kid refresh, for the duration of a
// test that is about what a refresh changes.
func shortUnknownKID(t *testing.T) {
	old := unknownKIDEvery
	unknownKIDEvery = 0
	t.Cleanup(func() { unknownKIDEvery = old })
}

func TestJWKSRotation(t *testing.T) {
	shortUnknownKID(t)
	k := testKeys()
	p := newProvider(t)
	p.serveKeys(t, jwkOf{kid: "a", pub: &k.rsa.PublicKey})
	s, _ := newJWKS(t, JWKSConfig{URL: p.URL})
	j := newVerifier(t, JWTConfig{Keys: s})

	oldTok := signKid(jwt.SigningMethodRS256, k.rsa, "a")
	if _, err := authenticate(j, "Bearer "+oldTok); err != nil {
		t.Fatalf("token of the published key: %v", err)
	}
	// The provider adds a key: a token naming it works without a restart.
	p.serveKeys(t, jwkOf{kid: "a", pub: &k.rsa.PublicKey}, jwkOf{kid: "b", pub: &k.ec.PublicKey})
	newTok := signKid(jwt.SigningMethodES256, k.ec, "b")
	if _, err := authenticate(j, "Bearer "+newTok); err != nil {
		t.Fatalf("token of the added key: %v", err)
	}
	// The provider removes the old key: after the next refresh (here the
	// one a third, unknown kid starts) the old token stops verifying,
	// although it was accepted (and remembered) before.
	p.serveKeys(t, jwkOf{kid: "b", pub: &k.ec.PublicKey})
	_, _ = authenticate(j, "Bearer "+signKid(jwt.SigningMethodRS256, k.rsaOther, "c"))
	_, err := authenticate(j, "Bearer "+oldTok)
	assertUnauthenticated(t, err, "not in the identity provider's key set", "")
	if _, err := authenticate(j, "Bearer "+newTok); err != nil {
		t.Fatalf("token of the remaining key: %v", err)
	}
}

func TestJWKSUnknownKIDRefreshesAtMostOncePerInterval(t *testing.T) {
	k := testKeys()
	p := newProvider(t)
	p.serveKeys(t, jwkOf{kid: "a", pub: &k.rsa.PublicKey})
	s, _ := newJWKS(t, JWKSConfig{URL: p.URL})
	j := newVerifier(t, JWTConfig{Keys: s})
	start := p.hits.Load()
	for i := range 5 {
		_, err := authenticate(j, "Bearer "+signKid(jwt.SigningMethodRS256, k.rsaOther, "made-up-"+string(rune('0'+i))))
		assertUnauthenticated(t, err, "not in the identity provider's key set", "")
	}
	if got := p.hits.Load() - start; got != 1 {
		t.Fatalf("five unknown kids made %d requests to the provider, want 1 (one per %s)", got, unknownKIDEvery)
	}
}

func TestJWKSAlgorithmFromKey(t *testing.T) {
	k := testKeys()
	p := newProvider(t)
	p.serveKeys(t, jwkOf{kid: "rsa", pub: &k.rsa.PublicKey}, jwkOf{kid: "ed", pub: k.ed.Public()})
	s, _ := newJWKS(t, JWKSConfig{URL: p.URL})
	j := newVerifier(t, JWTConfig{Keys: s})
	for name, tc := range map[string]struct {
		tok, want string
	}{
		"PS256 with the RS256 key":               {signKid(jwt.SigningMethodPS256, k.rsa, "rsa"), "PS256; this gateway accepts RS256, ES256 or EdDSA"},
		"HS256 with the RSA key's bytes":         {signKid(jwt.SigningMethodHS256, []byte(publicPEM(&k.rsa.PublicKey)), "rsa"), "HS256; this gateway accepts"},
		"EdDSA header naming the RSA key":        {signKid(jwt.SigningMethodEdDSA, k.ed, "rsa"), "not in the identity provider's key set, or verifies another algorithm"},
		"no kid, signed by a key not in the set": {sign(jwt.SigningMethodRS256, k.rsaOther, claims()), "does not verify with the identity provider's keys"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := authenticate(j, "Bearer "+tc.tok)
			assertUnauthenticated(t, err, tc.want, "")
		})
	}
	if _, err := authenticate(j, "Bearer "+sign(jwt.SigningMethodEdDSA, k.ed, claims())); err != nil {
		t.Fatalf("a token without kid signed by a key of the set: %v", err)
	}
}

func TestJWKSProviderDownKeepsCachedKeys(t *testing.T) {
	k := testKeys()
	p := newProvider(t)
	p.serveKeys(t, jwkOf{kid: "a", pub: &k.rsa.PublicKey})
	var fails atomic.Int32
	s, logs := newJWKS(t, JWKSConfig{URL: p.URL, Timeout: time.Second, OnRefresh: func(ok bool) {
		if !ok {
			fails.Add(1)
		}
	}})
	j := newVerifier(t, JWTConfig{Keys: s})
	p.Close() // the provider goes away
	s.refresh()
	if st := s.Status(); st.State != "degraded" || st.Keys != 1 {
		t.Fatalf("status with the provider down = %+v, want degraded with the 1 cached key", st)
	}
	if fails.Load() != 1 || logs.FilterMessageSnippet("cached keys keep verifying").Len() != 1 {
		t.Fatalf("a failed refresh must be counted once (%d) and logged once (%v)", fails.Load(), logs.All())
	}
	if _, err := authenticate(j, "Bearer "+signKid(jwt.SigningMethodRS256, k.rsa, "a")); err != nil {
		t.Fatalf("a cached key must keep verifying while the provider is down: %v", err)
	}
}

func TestJWKSBadInput(t *testing.T) {
	small := must(rsa.GenerateKey(rand.Reader, 1024))
	k := testKeys()
	big := `{"keys":[` + strings.Repeat(`{"kty":"oct","k":"AAAA"},`, 10<<20/25) + `{}]}`
	for name, tc := range map[string]struct {
		serve  func(*testing.T, *provider)
		status string // the state after the first fetch
		log    string // what the log line says
	}{
		"not JSON":      {func(t *testing.T, p *provider) { p.serve([]byte("<html>sign in</html>")) }, "degraded", "failed to decode JWK Set"},
		"alg none":      {func(t *testing.T, p *provider) { p.serveKeys(t, jwkOf{kid: "n", pub: &k.rsa.PublicKey, alg: "none"}) }, "degraded", `declares alg "none", but its key verifies RS256 only`},
		"RSA 1024 bits": {func(t *testing.T, p *provider) { p.serveKeys(t, jwkOf{kid: "s", pub: &small.PublicKey}) }, "degraded", "RSA key has 1024 bits; use at least 2048"},
		"10 MB":         {func(t *testing.T, p *provider) { p.serve([]byte(big)) }, "degraded", "larger than 1048576 bytes"},
		"a good key beside a bad one": {func(t *testing.T, p *provider) {
			p.serveKeys(t, jwkOf{kid: "s", pub: &small.PublicKey}, jwkOf{kid: "a", pub: &k.rsa.PublicKey})
		}, "ok", "RSA key has 1024 bits"},
	} {
		t.Run(name, func(t *testing.T) {
			p := newProvider(t)
			tc.serve(t, p)
			s, logs := newJWKS(t, JWKSConfig{URL: p.URL, Timeout: 5 * time.Second})
			if st := s.Status(); st.State != tc.status {
				t.Fatalf("status %+v, want %s", st, tc.status)
			}
			if !logged(logs, tc.log) {
				t.Fatalf("no log line saying %q: %v", tc.log, logs.All())
			}
		})
	}
}

// logged reports whether a log line's message or fields contain want.
func logged(logs *observer.ObservedLogs, want string) bool {
	for _, e := range logs.All() {
		if strings.Contains(e.Message, want) {
			return true
		}
		for _, f := range e.Context {
			if strings.Contains(f.String, want) || (f.Interface != nil && strings.Contains(fmt.Sprint(f.Interface), want)) {
				return true
			}
		}
	}
	return false
}

// hangingProvider is a provider that never answers (until the test
// ends); hits counts its requests.
func hangingProvider(t *testing.T) (hang *httptest.Server, hits *atomic.Int32) {
	hits = new(atomic.Int32)
	release := make(chan struct{})
	hang = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) })
	return hang, hits
}

func TestJWKSProviderThatNeverAnswers(t *testing.T) {
	hang, _ := hangingProvider(t)
	s, logs := newJWKS(t, JWKSConfig{URL: hang.URL, Timeout: 100 * time.Millisecond})
	if st := s.Status(); st.State != "degraded" || !logged(logs, "context deadline exceeded") {
		t.Fatalf("a provider that never answers: status %+v, log %v; want degraded and the timeout logged", st, logs.All())
	}
	j := newVerifier(t, JWTConfig{Keys: s})
	k := testKeys()
	_, err := authenticate(j, "Bearer "+signKid(jwt.SigningMethodRS256, k.rsa, "a"))
	assertUnauthenticated(t, err, "not in the identity provider's key set", "")
}

// A token of an unknown kid does not wait for a refresh from a provider
// whose last refresh failed within unknownKIDEvery: a provider that never
// answers would hold the call for the whole request timeout. The
// background refresh keeps trying (jwksRetry).
func TestJWKSUnknownKIDAfterAFailedRefreshDoesNotWait(t *testing.T) {
	hang, hits := hangingProvider(t)
	s, _ := newJWKS(t, JWKSConfig{URL: hang.URL, Timeout: 300 * time.Millisecond})
	j := newVerifier(t, JWTConfig{Keys: s})
	k := testKeys()
	_, err := authenticate(j, "Bearer "+signKid(jwt.SigningMethodRS256, k.rsa, "a"))
	assertUnauthenticated(t, err, "not in the identity provider's key set", "")
	if got := hits.Load(); got != 1 {
		t.Fatalf("the provider got %d requests; want 1 (the start's): the token must not wait for another", got)
	}
}

func TestJWKSDiscovery(t *testing.T) {
	k := testKeys()
	keys := newProvider(t)
	keys.serveKeys(t, jwkOf{kid: "a", pub: &k.rsa.PublicKey})
	var issuer string
	var named atomic.Value
	op := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != discoveryPath {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": named.Load().(string), "jwks_uri": keys.URL})
	}))
	t.Cleanup(op.Close)
	issuer = op.URL
	named.Store(issuer)
	s, _ := newJWKS(t, JWKSConfig{Issuer: issuer})
	j := newVerifier(t, JWTConfig{Keys: s, Issuer: issuer})
	if _, err := authenticate(j, "Bearer "+signKid(jwt.SigningMethodRS256, k.rsa, "a", set("iss", issuer))); err != nil {
		t.Fatalf("token of the discovered key set: %v", err)
	}
	named.Store("https://elsewhere.example")
	s2, logs := newJWKS(t, JWKSConfig{Issuer: issuer})
	if st := s2.Status(); st.State != "degraded" || !logged(logs, `names issuer "https://elsewhere.example"`) {
		t.Fatalf("a discovery document of another issuer: status %+v, log %v", st, logs.All())
	}
}

func TestJWKSConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg  JWKSConfig
		want string
	}{
		"discovery without issuer": {JWKSConfig{}, EnvIssuer},
		"URL not http":             {JWKSConfig{URL: "file:///etc/keys"}, EnvJWKSURL},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := NewJWKS(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewJWKS(%+v) = %v, want an error naming %s", tc.cfg, err, tc.want)
			}
		})
	}
	s, err := NewJWKS(JWKSConfig{URL: "http://127.0.0.1:1/keys", Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := NewJWT(JWTConfig{Keys: s, Secret: hsSecret}); err == nil || !strings.Contains(err.Error(), "choose one source of keys") {
		t.Fatalf("a key set with a secret: %v, want a refusal", err)
	}
}

func TestFreshness(t *testing.T) {
	date := "Thu, 03 Dec 2026 12:00:00 GMT"
	for name, tc := range map[string]struct {
		h    http.Header
		want time.Duration
	}{
		"none":              {http.Header{}, jwksDefaultAge},
		"max-age":           {http.Header{"Cache-Control": {"public, max-age=600"}}, 10 * time.Minute},
		"max-age too short": {http.Header{"Cache-Control": {"max-age=5"}}, jwksMinAge},
		"max-age too long":  {http.Header{"Cache-Control": {"max-age=604800"}}, jwksMaxAge},
		"no-cache":          {http.Header{"Cache-Control": {"no-cache"}}, jwksMinAge},
		"expires":           {http.Header{"Date": {date}, "Expires": {"Thu, 03 Dec 2026 14:00:00 GMT"}}, 2 * time.Hour},
		"max-age wins":      {http.Header{"Cache-Control": {"max-age=300"}, "Date": {date}, "Expires": {"Thu, 03 Dec 2026 14:00:00 GMT"}}, 5 * time.Minute},
	} {
		t.Run(name, func(t *testing.T) {
			if got := freshness(tc.h); got != tc.want {
				t.Fatalf("freshness(%v) = %s, want %s", tc.h, got, tc.want)
			}
		})
	}
}

func TestJWKSRefreshFollowsCachingHeaders(t *testing.T) {
	k := testKeys()
	p := newProvider(t)
	p.header.Set("Cache-Control", "max-age=900")
	p.serveKeys(t, jwkOf{kid: "a", pub: &k.rsa.PublicKey})
	s, _ := newJWKS(t, JWKSConfig{URL: p.URL})
	if got := s.refresh(); got != 15*time.Minute {
		t.Fatalf("next refresh in %s, want the provider's max-age of 15m", got)
	}
}

// A provider that was down when the gateway started: the first token
// (here one without kid) refreshes the empty set once it answers.
func TestJWKSEmptySetRefreshesForAToken(t *testing.T) {
	shortUnknownKID(t)
	k := testKeys()
	p := newProvider(t)
	p.serve([]byte("starting"))
	s, _ := newJWKS(t, JWKSConfig{URL: p.URL})
	if st := s.Status(); st.Keys != 0 {
		t.Fatalf("status %+v, want no key yet", st)
	}
	p.serveKeys(t, jwkOf{kid: "a", pub: &k.rsa.PublicKey})
	j := newVerifier(t, JWTConfig{Keys: s})
	if _, err := authenticate(j, "Bearer "+sign(jwt.SigningMethodRS256, k.rsa, claims())); err != nil {
		t.Fatalf("a token once the provider answers: %v", err)
	}
}

// PublicJWKS publishes the keys Signer signs with: a token of either key
// verifies against the document, and a bad key is refused by position.
func TestPublicJWKS(t *testing.T) {
	k := testKeys()
	pems := [][]byte{pkcs8(t, k.rsa), pkcs8(t, k.ec)}
	doc, err := PublicJWKS(pems...)
	if err != nil {
		t.Fatal(err)
	}
	p := newProvider(t)
	p.serve(doc)
	s, _ := newJWKS(t, JWKSConfig{URL: p.URL})
	j := newVerifier(t, JWTConfig{Keys: s})
	for i, pem := range pems {
		signer, err := NewSigner(SignerConfig{PrivateKeyPEM: pem, Audience: DefaultAudience, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		tok, err := signer.Sign(AgentClaims{Subject: "u", WorkspaceID: "w", TaskID: "t"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := authenticate(j, "Bearer "+tok); err != nil {
			t.Fatalf("key %d: %v", i+1, err)
		}
	}
	if _, err := PublicJWKS(pems[0], []byte("not a key")); err == nil || !strings.Contains(err.Error(), "key 2") {
		t.Fatalf("a bad second key: %v, want an error naming key 2", err)
	}
}

// Status (and so /readyz) answers while a refresh waits for a provider
// that does not answer.
func TestJWKSStatusDoesNotWaitForARefresh(t *testing.T) {
	k := testKeys()
	p := newProvider(t)
	p.serveKeys(t, jwkOf{kid: "a", pub: &k.rsa.PublicKey})
	s, _ := newJWKS(t, JWKSConfig{URL: p.URL, Timeout: time.Minute})
	arrived, release := make(chan struct{}), make(chan struct{})
	p.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	refreshed := make(chan struct{})
	go func() { s.refresh(); close(refreshed) }()
	<-arrived
	status := make(chan JWKSStatus)
	go func() { status <- s.Status() }()
	select {
	case st := <-status:
		if st.Keys != 1 {
			t.Errorf("status during a refresh %+v, want the cached key", st)
		}
	case <-time.After(5 * time.Second):
		t.Error("Status waited for the refresh in progress")
	}
	close(release)
	<-refreshed
}
