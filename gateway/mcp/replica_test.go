package mcp

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/mcp/sessionid"
)

var testSessionSecret = []byte("0123456789abcdef0123456789abcdef-replicas")

// replicas starts two transports ("replicas") that share the session key
// and one SessionEnds, as replicas behind one load balancer do.
func replicas(t *testing.T) (a, b *env) {
	t.Helper()
	ends := NewMemorySessionEnds()
	shared := func(o *Options) { o.SessionSecret, o.SessionEnds = testSessionSecret, ends }
	return newEnv(t, shared), newEnv(t, shared)
}

// TestSessionServedByAnyReplica: a session opened on replica A is served by
// replica B, which never saw it (tools/list and tools/call, at the version
// negotiated on A); DELETE on B ends it on A too.
func TestSessionServedByAnyReplica(t *testing.T) {
	a, b := replicas(t)
	sid := a.initialize(tokAlice, Version20250618)
	h := hdr{token: tokAlice, session: sid, version: Version20250618}
	if code, r := b.rpc(h, "tools/call", `{"name":"echo","arguments":{"n":1}}`); code != 200 || r.Error != nil || !strings.Contains(string(r.Result), "called echo") {
		t.Fatalf("tools/call on B with A's session: %d %s %+v", code, r.Result, r.Error)
	}
	if code, r := b.rpc(h, "tools/list", ""); code != 200 || r.Error != nil {
		t.Fatalf("tools/list on B: %d %+v", code, r.Error)
	}
	// The version comes from the id: B holds A's session at 2025-06-18.
	if code, r := b.rpc(hdr{token: tokAlice, session: sid, version: Version20251125}, "ping", ""); code != 400 || !strings.Contains(r.Error.Message, Version20250618) {
		t.Fatalf("B with another version header: %d %+v, want 400 naming %s", code, r.Error, Version20250618)
	}
	if code, _ := a.rpc(h, "ping", ""); code != 200 {
		t.Fatalf("A still serves its session: %d", code)
	}
	resp := b.do("DELETE", h, "")
	readAll(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("DELETE on B: %d", resp.StatusCode)
	}
	for name, e := range map[string]*env{"A": a, "B": b} {
		if code, _ := e.rpc(h, "ping", ""); code != 404 {
			t.Errorf("%s after DELETE on B: status %d, want 404", name, code)
		}
	}
}

// TestSessionEndsNotShared: without a shared SessionEnds, DELETE on B does
// not reach A; the seam is the only thing that carries ends.
func TestSessionEndsNotShared(t *testing.T) {
	key := func(o *Options) { o.SessionSecret = testSessionSecret }
	a, b := newEnv(t, key), newEnv(t, key)
	sid := a.initialize(tokAlice, Version20251125)
	h := hdr{token: tokAlice, session: sid}
	readAll(t, b.do("DELETE", h, ""))
	if code, _ := b.rpc(h, "ping", ""); code != 404 {
		t.Fatalf("B after its own DELETE: %d, want 404", code)
	}
	if code, _ := a.rpc(h, "ping", ""); code != 200 {
		t.Fatalf("A with its own SessionEnds: %d, want 200 (ends are not shared)", code)
	}
}

// TestSessionIDForgedOrForeign: ids that do not verify are unknown (404) on
// POST, GET and DELETE: tampered in any byte, signed with another key,
// random, bound to another credential, or a legacy (HTTP+SSE) id.
func TestSessionIDForgedOrForeign(t *testing.T) {
	a, _ := replicas(t)
	other := newEnv(t, func(o *Options) { o.SessionSecret = []byte(strings.Repeat("k", 32)) })
	sid := a.initialize(tokAlice, Version20251125)
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(sid, sessionid.Prefix))
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for i := range raw {
		c := append([]byte(nil), raw...)
		c[i] ^= 0x01
		bad = append(bad, sessionid.Prefix+base64.RawURLEncoding.EncodeToString(c))
	}
	bad = append(bad,
		other.initialize(tokAlice, Version20251125), // another key
		"s1.AAAA", "garbage", sid+"A", strings.ToUpper(sid))
	for _, id := range bad {
		for _, m := range []string{"POST", "GET", "DELETE"} {
			h := hdr{token: tokAlice, session: id}
			var code int
			if m == "POST" {
				code, _ = a.rpc(h, "ping", "")
			} else {
				if m == "GET" {
					h.accept = "text/event-stream"
				}
				resp := a.do(m, h, "")
				readAll(t, resp)
				code = resp.StatusCode
			}
			if code != 404 {
				t.Fatalf("%s with forged id %q: status %d, want 404", m, id, code)
			}
		}
	}
	// Bound to Alice's credential: Bob gets 404 on the replica that never
	// saw the session as well as on the one that did.
	b := newEnv(t, func(o *Options) { o.SessionSecret = testSessionSecret })
	for name, e := range map[string]*env{"A": a, "B": b} {
		if code, _ := e.rpc(hdr{token: tokBob, session: sid}, "ping", ""); code != 404 {
			t.Errorf("Bob with Alice's id on %s: status %d, want 404", name, code)
		}
	}
	if code, _ := b.rpc(hdr{token: tokAlice, session: sid}, "ping", ""); code != 200 {
		t.Errorf("Alice on B: %d, want 200", code)
	}
}

// failingEnds is a SessionEnds whose store is down.
type failingEnds struct{}

func (failingEnds) End(context.Context, string, time.Time) error {
	return errors.New("pq: connection refused")
}
func (failingEnds) Ended(context.Context, string) (bool, error) {
	return false, errors.New("pq: connection refused")
}

// TestSessionEndsDown: when ended sessions cannot be checked, requests of a
// session fail with 503 (never served as if not ended) and say to retry.
func TestSessionEndsDown(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.SessionEnds = failingEnds{} })
	sid := e.initialize(tokAlice, Version20251125)
	code, r := e.rpc(hdr{token: tokAlice, session: sid}, "ping", "")
	if code != 503 || !strings.Contains(r.Error.Message, "retry") {
		t.Fatalf("ping with SessionEnds down: %d %+v, want 503 saying to retry", code, r.Error)
	}
}

// TestSessionSecretTooShort: NewHandler refuses a key under 32 bytes and
// names the variable.
func TestSessionSecretTooShort(t *testing.T) {
	_, err := NewHandler(Options{Authenticator: fakeAuth{}, Handler: &fakeHandler{}, SessionSecret: []byte("short")})
	if err == nil || !strings.Contains(err.Error(), "MCPGATE_SESSION_SECRET") {
		t.Fatalf("err = %v, want a refusal naming MCPGATE_SESSION_SECRET", err)
	}
}

func TestMemorySessionEndsExpire(t *testing.T) {
	m := NewMemorySessionEnds()
	now := time.Now()
	m.now = func() time.Time { return now }
	_ = m.End(context.Background(), "x", now.Add(time.Minute))
	if ended, _ := m.Ended(context.Background(), "x"); !ended {
		t.Fatal("x not ended")
	}
	now = now.Add(2 * time.Minute)
	if ended, _ := m.Ended(context.Background(), "x"); ended {
		t.Fatal("x still ended after until")
	}
}
