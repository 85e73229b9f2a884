package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
)

// TestRelayAnswers: an answer is recorded only for a key some replica
// waits for, from the same owner, before its expiry, and once; the
// waiting replica reads it; forgotten and expired records are gone.
func TestRelayAnswers(t *testing.T) {
	s := pgtest.New(t)
	ctx := context.Background()
	now := time.Now()
	for _, err := range []error{
		s.ExpectRelayAnswer(ctx, "k-live", "owner-1", now.Add(time.Minute)),
		s.ExpectRelayAnswer(ctx, "k-old", "owner-1", now.Add(-time.Second)),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := s.RelayAnswer(ctx, "k-live"); ok || err != nil {
		t.Fatalf("k-live before any answer: %v %v, want none", ok, err)
	}
	for _, tc := range []struct{ name, key, owner string }{
		{"unknown key", "k-none", "owner-1"},
		{"expired", "k-old", "owner-1"},
		{"another owner", "k-live", "owner-2"},
	} {
		if ok, err := s.DeliverRelayAnswer(ctx, tc.key, tc.owner, []byte(`{"result":{}}`)); ok || err != nil {
			t.Errorf("%s: delivered %v (err %v), want refused", tc.name, ok, err)
		}
	}
	if ok, err := s.DeliverRelayAnswer(ctx, "k-live", "owner-1", []byte(`{"result":{"action":"accept"}}`)); !ok || err != nil {
		t.Fatalf("the owner's answer: delivered %v (err %v)", ok, err)
	}
	if ok, _ := s.DeliverRelayAnswer(ctx, "k-live", "owner-1", []byte(`{"result":{"action":"decline"}}`)); ok {
		t.Error("a second answer was recorded over the first")
	}
	if got, ok, err := s.RelayAnswer(ctx, "k-live"); !ok || err != nil || string(got) != `{"result":{"action":"accept"}}` {
		t.Errorf("k-live: %s %v %v, want the first answer", got, ok, err)
	}
	if err := s.ForgetRelayAnswer(ctx, "k-live"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.RelayAnswer(ctx, "k-live"); ok {
		t.Error("k-live still answered after it was forgotten")
	}
	if n, err := s.DeleteExpiredRelayAnswers(ctx, now); n != 1 || err != nil {
		t.Errorf("expired records swept: %d %v, want k-old", n, err)
	}
}
