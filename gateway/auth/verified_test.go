package auth

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// movingVerifier is an HS256 verifier whose clock the test sets.
func movingVerifier(t *testing.T) (*JWT, *atomic.Int64) {
	t.Helper()
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	j, err := NewJWT(JWTConfig{Secret: hsSecret, Leeway: testLeeway, Now: func() time.Time { return time.Unix(0, clock.Load()).UTC() }})
	if err != nil {
		t.Fatal(err)
	}
	return j, &clock
}

func checkToken(j *JWT, tok string) error {
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set("Authorization", bearer(tok))
	_, err := j.Authenticate(r)
	return err
}

// TestVerifiedTokenTimesCheckedAgain: a token accepted once is refused,
// with the verifier's own explanation, once its exp (plus leeway) has
// passed, or when the clock stands before its nbf again.
func TestVerifiedTokenTimesCheckedAgain(t *testing.T) {
	j, clock := movingVerifier(t)
	tok := sign(jwt.SigningMethodHS256, hsSecret, claims(set("exp", now.Add(time.Minute).Unix()), set("nbf", now.Unix())))
	for i := range 2 { // the second is answered from the cache
		if err := checkToken(j, tok); err != nil {
			t.Fatalf("call %d within exp: %v", i+1, err)
		}
	}
	clock.Store(now.Add(time.Minute + testLeeway - time.Second).UnixNano())
	if err := checkToken(j, tok); err != nil {
		t.Fatalf("within the leeway after exp: %v", err)
	}
	clock.Store(now.Add(time.Minute + testLeeway).UnixNano())
	assertUnauthenticated(t, checkToken(j, tok), "expired at 2026-11-30T14:01:00Z", "")

	j, clock = movingVerifier(t)
	if err := checkToken(j, tok); err != nil {
		t.Fatal(err)
	}
	clock.Store(now.Add(-time.Minute).UnixNano())
	assertUnauthenticated(t, checkToken(j, tok), "not valid before 2026-11-30T14:00:00Z", "")
}

// TestVerifiedTokenOtherBytes: a token that differs from an accepted one
// in its signature is verified afresh and refused.
func TestVerifiedTokenOtherBytes(t *testing.T) {
	j, _ := movingVerifier(t)
	tok := sign(jwt.SigningMethodHS256, hsSecret, claims())
	if err := checkToken(j, tok); err != nil {
		t.Fatal(err)
	}
	forged := sign(jwt.SigningMethodHS256, otherSecret, claims())
	assertUnauthenticated(t, checkToken(j, forged), "signature does not verify", "")
	b := []byte(tok)
	i := len(b) - 10 // inside the signature, clear of the last character's padding bits
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	assertUnauthenticated(t, checkToken(j, string(b)), "signature does not verify", "")
}

// TestVerifiedTokensBounded: the cache never holds more than
// maxVerifiedTokens tokens, and still answers for the newest.
func TestVerifiedTokensBounded(t *testing.T) {
	j, _ := movingVerifier(t)
	var tok string
	for i := range maxVerifiedTokens + 10 {
		tok = sign(jwt.SigningMethodHS256, hsSecret, claims(set("task_id", fmt.Sprint("task-", i))))
		if err := checkToken(j, tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(j.verified.m); n > maxVerifiedTokens {
		t.Fatalf("cache holds %d tokens, want at most %d", n, maxVerifiedTokens)
	}
	if _, ok := j.verified.get(tok, now, j.leeway, 0); !ok {
		t.Fatal("the newest token is not cached")
	}
}
