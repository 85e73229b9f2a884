package mcp

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A client that reuses the id of a running request must not hide the first
// request from the session's end: DELETE cancels both, so neither reaches
// its tool afterwards.
func TestDeleteCancelsEveryRequestOfAReusedID(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20251125)
	h := hdr{token: tokAlice, session: sid}
	t.Cleanup(func() { e.h.release("g0"); e.h.release("g1") }) // a call left running must not hang the test
	got := make(chan wireResp, 2)
	for i := range 2 {
		go func() {
			resp := e.do("POST", h, fmt.Sprintf(`{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"wait","arguments":{"gate":"g%d"}}}`, i))
			got <- decodeResp(t, readAll(t, resp))
		}()
	}
	waitFor(t, "both calls to run", func() bool {
		e.h.mu.Lock()
		defer e.h.mu.Unlock()
		return len(e.h.calls) == 2
	})
	readAll(t, e.do("DELETE", h, ""))
	for range 2 {
		select {
		case r := <-got:
			if r.Error == nil {
				t.Fatalf("a call of the deleted session completed: %+v", r)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("DELETE left a call with a reused id running")
		}
	}
}

// notifications/cancelled for a reused id cancels every running request
// with that id, not only the latest.
func TestCancelReachesEveryRequestOfAReusedID(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20251125)
	h := hdr{token: tokAlice, session: sid}
	t.Cleanup(func() { e.h.release("c0"); e.h.release("c1") })
	got := make(chan wireResp, 2)
	for i := range 2 {
		go func() {
			resp := e.do("POST", h, fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait","arguments":{"gate":"c%d"}}}`, i))
			got <- decodeResp(t, readAll(t, resp))
		}()
	}
	waitFor(t, "both calls to run", func() bool {
		e.h.mu.Lock()
		defer e.h.mu.Unlock()
		return len(e.h.calls) == 2
	})
	readAll(t, e.do("POST", h, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`))
	for range 2 {
		select {
		case r := <-got:
			if r.Error == nil {
				t.Fatalf("a cancelled call completed: %+v", r)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("notifications/cancelled left a call with a reused id running")
		}
	}
}

// The bodies of requests still running count against MaxHeldBodyBytes,
// across sessions: once they fill it, the next POST is refused with 503
// and Retry-After, and it is admitted again when a running request ends.
func TestHeldBodiesAreBounded(t *testing.T) {
	const budget = 4 << 10
	e := newEnv(t, func(o *Options) { o.MaxHeldBodyBytes = budget })
	sid := e.initialize(tokAlice, Version20251125)
	h := hdr{token: tokAlice, session: sid}
	pad := strings.Repeat("x", 1500)
	body := func(gate string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"wait","arguments":{"gate":%q,"pad":%q}}}`, gate, gate, pad)
	}
	done := make(chan int, 2)
	for _, g := range []string{"a", "b"} {
		go func() {
			resp := e.do("POST", h, body(g))
			readAll(t, resp)
			done <- resp.StatusCode
		}()
	}
	waitFor(t, "two calls to hold their bodies", func() bool {
		e.h.mu.Lock()
		defer e.h.mu.Unlock()
		return len(e.h.calls) == 2
	})
	resp := e.do("POST", h, body("c"))
	r := decodeResp(t, readAll(t, resp))
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || r.Error == nil ||
		!strings.Contains(r.Error.Message, "MCPGATE_MAX_HELD_BODY_BYTES") {
		t.Fatalf("third body over the budget: status %d, Retry-After %q, error %+v; want 503 naming the limit",
			resp.StatusCode, resp.Header.Get("Retry-After"), r.Error)
	}
	e.h.release("a")
	if code := <-done; code != 200 {
		t.Fatalf("released call: status %d", code)
	}
	e.h.release("c")
	if resp := e.do("POST", h, body("c")); resp.StatusCode != 200 {
		t.Fatalf("after a call ended, a new body: status %d, want 200", resp.StatusCode)
	}
	e.h.release("b")
	<-done
}

// A legacy POST holds its body until its background work ends, under the
// same MaxHeldBodyBytes: with the budget full of running calls the next
// POST is refused with 503, and the budget comes back when they end.
func TestLegacyHeldBodiesAreBounded(t *testing.T) {
	const budget = 4 << 10
	e, srv := legacyEnv(t, func(o *Options) { o.MaxHeldBodyBytes = budget })
	ls := openLegacy(t, srv, tokAlice)
	t.Cleanup(func() { e.h.release("a"); e.h.release("b") })
	pad := strings.Repeat("x", 1500)
	body := func(id int, gate string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"wait","arguments":{"gate":%q,"pad":%q}}}`, id, gate, pad)
	}
	for i, g := range []string{"a", "b"} {
		if code, b := post(t, srv, ls.endpoint, tokAlice, body(i, g)); code != 202 {
			t.Fatalf("POST %d: %d %s", i, code, b)
		}
	}
	if code, b := post(t, srv, ls.endpoint, tokAlice, body(3, "c")); code != 503 || !strings.Contains(string(b), "MCPGATE_MAX_HELD_BODY_BYTES") {
		t.Fatalf("POST over the budget: %d %s, want 503 naming the limit", code, b)
	}
	e.h.release("a")
	ls.next(t) // the released call's response: its body is no longer held
	waitFor(t, "the budget to come back", func() bool {
		code, _ := post(t, srv, ls.endpoint, tokAlice, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
		return code == 202
	})
}
