package auth

import (
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgate/mcpgate/gateway"
)

// maxVerifiedTokens bounds the verified-token cache of one verifier; a
// gateway sees one token per live task session, far fewer than this.
const maxVerifiedTokens = 4096

// verifiedToken is a token that passed the whole verification once: the
// principal it names and the time claims that bound its validity (zero
// when absent).
type verifiedToken struct {
	p             gateway.Principal
	exp, nbf, iat time.Time
	gen           uint64 // the key set generation it verified under
}

// validAt reports whether the time checks the parser made still hold at
// now with leeway: exp not passed, nbf and iat not in the future (the
// same comparisons as jwt/v5's validator).
func (v *verifiedToken) validAt(now time.Time, leeway time.Duration) bool {
	return now.Before(v.exp.Add(leeway)) &&
		!now.Add(leeway).Before(v.nbf) && !now.Add(leeway).Before(v.iat)
}

// verifiedTokens remembers the tokens a verifier accepted, by their exact
// bytes, until they expire: a session sends the same token on every
// request, and the signature, the claims and the key never change for
// those bytes, so only the time claims need checking again. A token that
// differs in any byte is verified afresh; refusals are never cached. It
// is safe for concurrent use.
type verifiedTokens struct {
	mu sync.RWMutex
	m  map[string]*verifiedToken
}

// get returns the principal of raw when raw was verified before, under
// key set generation gen, and its time claims hold at now; a cached token
// that no longer holds is forgotten (the caller verifies it again, which
// explains the refusal): a key the provider removed stops verifying.
func (c *verifiedTokens) get(raw string, now time.Time, leeway time.Duration, gen uint64) (*gateway.Principal, bool) {
	c.mu.RLock()
	v := c.m[raw]
	c.mu.RUnlock()
	if v == nil {
		return nil, false
	}
	if v.gen != gen || !v.validAt(now, leeway) {
		c.mu.Lock()
		if c.m[raw] == v {
			delete(c.m, raw)
		}
		c.mu.Unlock()
		return nil, false
	}
	p := v.p
	return &p, true
}

// put remembers raw, verified at now under key set generation gen, as
// naming p with claims c. When the
// cache is full, the tokens no longer valid are dropped, and if that
// frees nothing the whole cache is, so it never holds more than
// maxVerifiedTokens.
func (c *verifiedTokens) put(raw string, p *gateway.Principal, cl *sessionClaims, now time.Time, leeway time.Duration, gen uint64) {
	v := &verifiedToken{p: *p, exp: numericTime(cl.ExpiresAt), nbf: numericTime(cl.NotBefore), iat: numericTime(cl.IssuedAt), gen: gen}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*verifiedToken)
	}
	if len(c.m) >= maxVerifiedTokens {
		for k, old := range c.m {
			if !old.validAt(now, leeway) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxVerifiedTokens {
			clear(c.m)
		}
	}
	c.m[raw] = v
}

// numericTime is d's time, zero for an absent claim.
func numericTime(d *jwt.NumericDate) time.Time {
	if d == nil {
		return time.Time{}
	}
	return d.Time
}
