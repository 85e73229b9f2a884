package console

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/console/consolesession"
)

// TestSealedSessionOpensOnlyWithItsCookie: the stored row holds no trace
// of the credential or the cookie, and its sealed token opens only with
// the cookie value it was sealed for (not with another session's, nor when
// copied into another row).
func TestSealedSessionOpensOnlyWithItsCookie(t *testing.T) {
	store := newMemorySessions(10)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	c := New(Options{Admin: nil, Sessions: store, Now: func() time.Time { return now }})
	const secret = "the-admin-token-value-0123456789"
	a, err := c.startSession(context.Background(), session{token: secret, kind: consolesession.Admin, expires: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.startSession(context.Background(), session{token: "other", kind: consolesession.Admin, expires: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	row := store.byID[idHash(a.id)]
	if bytes.Contains(row.SealedToken, []byte(secret)) || row.IDHash == a.id || bytes.Contains([]byte(row.IDHash), []byte(a.id)) {
		t.Fatalf("the stored row leaks the token or the cookie: %+v", row)
	}
	if got, err := c.loadSession(context.Background(), a.id); err != nil || got == nil || got.token != secret {
		t.Fatalf("loadSession with the right cookie = %+v, %v", got, err)
	}
	if _, err := unseal(b.id, row.SealedToken); err == nil {
		t.Error("another session's cookie opened the sealed token")
	}
	// Copy a's sealed token into b's row: b's cookie still cannot use it.
	rb := store.byID[idHash(b.id)]
	rb.SealedToken = row.SealedToken
	store.byID[idHash(b.id)] = rb
	if got, _ := c.loadSession(context.Background(), b.id); got != nil {
		t.Errorf("a sealed token moved into another row opened: %+v", got)
	}
}
