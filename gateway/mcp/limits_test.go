package mcp

import (
	"testing"
)

// TestSessionsPerPrincipalAreBounded: initialize in a loop keeps at most
// MaxSessionsPerPrincipal sessions of one principal; the least recently
// used one ends (404, so its client re-initializes), the newest work, and
// another principal's sessions are untouched.
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
	if status, _ := e.rpc(hdr{token: tokAlice, session: first, version: Version20250618}, "ping", ""); status != 404 {
		t.Errorf("alice's oldest session answered %d, want 404", status)
	}
	if status, _ := e.rpc(hdr{token: tokAlice, session: last, version: Version20250618}, "ping", ""); status != 200 {
		t.Errorf("alice's newest session answered %d, want 200", status)
	}
	if status, _ := e.rpc(hdr{token: tokBob, session: bob, version: Version20250618}, "ping", ""); status != 200 {
		t.Errorf("bob's session answered %d, want 200", status)
	}
}
