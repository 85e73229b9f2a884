package mcp

import (
	"testing"
)

// TestSessionsPerPrincipalAreBounded: initialize in a loop keeps the state
// of at most MaxSessionsPerPrincipal sessions of one principal on a
// replica; the least recently used one's state is dropped (its id stays
// valid and is rebuilt on its next request, evicting the next oldest), the
// newest work, and another principal's sessions are untouched.
func TestSessionsPerPrincipalAreBounded(t *testing.T) {
	e := newEnv(t, nil)
	bob := e.initialize(tokBob, Version20250618)
	first := e.initialize(tokAlice, Version20250618)
	var last string
	for range MaxSessionsPerPrincipal {
		last = e.initialize(tokAlice, Version20250618)
	}
	e.tr.mu.Lock()
	n := len(e.tr.sessions)
	e.tr.mu.Unlock()
	if n != MaxSessionsPerPrincipal+1 {
		t.Fatalf("%d sessions open, want %d of alice and 1 of bob", n, MaxSessionsPerPrincipal)
	}
	e.tr.mu.Lock()
	_, held := e.tr.sessions[first]
	e.tr.mu.Unlock()
	if held {
		t.Errorf("alice's oldest session is still held")
	}
	if status, _ := e.rpc(hdr{token: tokAlice, session: first, version: Version20250618}, "ping", ""); status != 200 {
		t.Errorf("alice's oldest session answered %d after its state was dropped, want 200 (rebuilt from its id)", status)
	}
	e.tr.mu.Lock()
	n = len(e.tr.sessions)
	e.tr.mu.Unlock()
	if n != MaxSessionsPerPrincipal+1 {
		t.Fatalf("%d sessions held after the rebuild, want still %d", n, MaxSessionsPerPrincipal+1)
	}
	if status, _ := e.rpc(hdr{token: tokAlice, session: last, version: Version20250618}, "ping", ""); status != 200 {
		t.Errorf("alice's newest session answered %d, want 200", status)
	}
	if status, _ := e.rpc(hdr{token: tokBob, session: bob, version: Version20250618}, "ping", ""); status != 200 {
		t.Errorf("bob's session answered %d, want 200", status)
	}
}
