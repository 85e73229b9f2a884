package mcp

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

func TestRefreshToolsNotifiesOnlyOnChange(t *testing.T) {
	alice := func(p *gateway.Principal) bool { return p.Subject == "user-a" }
	tests := []struct {
		name       string
		listFirst  bool  // the client listed tools before the change
		newTools   int   // the handler's tool count after the change (120 before)
		listErr    error // ListTools fails after the change
		wantNotify bool
	}{
		{"unchanged set is not announced", true, 120, nil, false},
		{"grown set is announced", true, 121, nil, true},
		{"shrunk set is announced", true, 3, nil, true},
		{"client that never listed is told", false, 120, nil, true},
		{"list failure is announced", true, 120, errors.New("store down"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			sid := e.initialize(tokAlice, Version20251125)
			bob := e.initialize(tokBob, Version20251125)
			_, ra := openStream(t, e, tokAlice, sid)
			_, rb := openStream(t, e, tokBob, bob)
			waitFor(t, "streams", func() bool { return e.streamOpen(sid) && e.streamOpen(bob) })
			if tc.listFirst {
				if code, r := e.rpc(hdr{token: tokAlice, session: sid}, "tools/list", ""); code != 200 || r.Error != nil {
					t.Fatalf("tools/list: %d %+v", code, r.Error)
				}
			}
			e.h.setTools(tc.newTools, tc.listErr)
			want := 0
			if tc.wantNotify {
				want = 1
			}
			if n := e.tr.refreshTools(alice); n != want {
				t.Fatalf("refreshTools notified %d sessions, want %d", n, want)
			}
			got := ra.next(300 * time.Millisecond)
			if tc.wantNotify != (got == "event: message") {
				t.Fatalf("alice's stream: %q, want notified=%v", got, tc.wantNotify)
			}
			if l := rb.next(100 * time.Millisecond); l != "" {
				t.Fatalf("bob's stream got %q; the change was for alice only", l)
			}
			// Announced once: a second pass over the same state is silent
			// (a failed list is announced again: the client cannot know it).
			if n := e.tr.refreshTools(alice); tc.listErr == nil && n != 0 {
				t.Fatalf("second pass notified %d sessions, want 0", n)
			}
		})
	}
}

func TestRefreshToolsSkipsSessionsWithoutStream(t *testing.T) {
	e := newEnv(t, nil)
	e.initialize(tokAlice, Version20251125)
	before := e.h.listCalls()
	if n := e.tr.refreshTools(func(*gateway.Principal) bool { return true }); n != 0 || e.h.listCalls() != before {
		t.Fatalf("refreshTools notified %d and listed %d times for a session without a stream", n, e.h.listCalls()-before)
	}
}

func TestRefreshToolsRunsInBackgroundAndCloseWaits(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20251125)
	_, r := openStream(t, e, tokAlice, sid)
	waitFor(t, "stream", func() bool { return e.streamOpen(sid) })
	e.tr.RefreshTools(func(*gateway.Principal) bool { return true })
	if l := r.next(2 * time.Second); l != "event: message" {
		t.Fatalf("stream: %q, want the notification", l)
	}
	e.tr.Close()
	e.tr.RefreshTools(func(*gateway.Principal) bool { t.Error("RefreshTools ran after Close"); return true })
}
