package storetest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/console/consolesession"
)

// consoleSession returns a session row expiring an hour after now.
func consoleSession(id string, now time.Time) *consolesession.Session {
	return &consolesession.Session{IDHash: id, Kind: consolesession.WorkspaceAdmin, WorkspaceID: "ws-a", Subject: "u-1",
		Operator: "Ada", CSRF: "csrf-" + id, SealedToken: []byte{0, 1, 2, 0xff}, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
}

var consoleTests = []test{
	{"a console session reads back until it expires, then is swept", func(t *testing.T, s Store) {
		now := time.Now().UTC().Truncate(time.Microsecond)
		in := consoleSession("h1", now)
		must(t, s.CreateConsoleSession(ctx(t), in), "CreateConsoleSession")
		got, err := s.ConsoleSession(ctx(t), "h1", now)
		must(t, err, "ConsoleSession")
		if got.Kind != in.Kind || got.WorkspaceID != "ws-a" || got.Subject != "u-1" || got.Operator != "Ada" ||
			got.CSRF != "csrf-h1" || !bytes.Equal(got.SealedToken, in.SealedToken) || got.Flash != nil ||
			!got.ExpiresAt.Equal(in.ExpiresAt) || !got.CreatedAt.Equal(now) {
			t.Errorf("ConsoleSession = %+v, want %+v", got, in)
		}
		_, err = s.ConsoleSession(ctx(t), "h1", in.ExpiresAt)
		wantCode(t, err, gateway.ENotFound, "ConsoleSession at its expiry")
		_, err = s.ConsoleSession(ctx(t), "nope", now)
		wantCode(t, err, gateway.ENotFound, "ConsoleSession of an unknown id")
		wantCode(t, s.CreateConsoleSession(ctx(t), consoleSession("h1", now)), gateway.EConflict, "CreateConsoleSession with a taken id")

		must(t, s.CreateConsoleSession(ctx(t), consoleSession("h2", now.Add(2*time.Hour))), "CreateConsoleSession h2")
		n, err := s.DeleteExpiredConsoleSessions(ctx(t), in.ExpiresAt)
		must(t, err, "DeleteExpiredConsoleSessions")
		if n != 1 {
			t.Errorf("DeleteExpiredConsoleSessions = %d, want 1 (only h1)", n)
		}
		if _, err := s.ConsoleSession(ctx(t), "h2", now); err != nil {
			t.Errorf("h2 after the sweep: %v", err)
		}
	}},
	{"a principal keeps its newest console sessions only", func(t *testing.T, s Store) {
		now := time.Now().UTC().Truncate(time.Microsecond)
		other := consoleSession("other", now)
		other.Subject = "u-2"
		must(t, s.CreateConsoleSession(ctx(t), other), "CreateConsoleSession of another member")
		const max = consolesession.MaxPerPrincipal
		for i := range max + 2 {
			must(t, s.CreateConsoleSession(ctx(t), consoleSession(fmt.Sprintf("h%03d", i), now.Add(time.Duration(i)*time.Second))), "CreateConsoleSession")
		}
		for i, want := range map[int]bool{0: false, 1: false, 2: true, max + 1: true} {
			_, err := s.ConsoleSession(ctx(t), fmt.Sprintf("h%03d", i), now)
			if (err == nil) != want {
				t.Errorf("session %d of %d: found = %v, want %v (%v)", i, max+2, err == nil, want, err)
			}
		}
		if _, err := s.ConsoleSession(ctx(t), "other", now); err != nil {
			t.Errorf("another member's session was ended: %v", err)
		}
	}},
	{"sign-out deletes a console session", func(t *testing.T, s Store) {
		now := time.Now().UTC().Truncate(time.Microsecond)
		must(t, s.CreateConsoleSession(ctx(t), consoleSession("h1", now)), "CreateConsoleSession")
		must(t, s.DeleteConsoleSession(ctx(t), "h1"), "DeleteConsoleSession")
		_, err := s.ConsoleSession(ctx(t), "h1", now)
		wantCode(t, err, gateway.ENotFound, "ConsoleSession after DeleteConsoleSession")
		must(t, s.DeleteConsoleSession(ctx(t), "h1"), "DeleteConsoleSession again")
	}},
	{"a console flash is taken once, by one of concurrent takers", func(t *testing.T, s Store) {
		now := time.Now().UTC().Truncate(time.Microsecond)
		must(t, s.CreateConsoleSession(ctx(t), consoleSession("h1", now)), "CreateConsoleSession")
		wantCode(t, s.SetConsoleFlash(ctx(t), "nope", []byte("x")), gateway.ENotFound, "SetConsoleFlash of an unknown session")
		if f, err := s.TakeConsoleFlash(ctx(t), "h1"); err != nil || f != nil {
			t.Fatalf("TakeConsoleFlash with none set = %q, %v; want nil", f, err)
		}
		must(t, s.SetConsoleFlash(ctx(t), "h1", []byte("sealed")), "SetConsoleFlash")
		var mu sync.Mutex
		var got [][]byte
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f, err := s.TakeConsoleFlash(ctx(t), "h1")
				if err != nil {
					t.Errorf("TakeConsoleFlash: %v", err)
				}
				if f != nil {
					mu.Lock()
					got = append(got, f)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(got) != 1 || string(got[0]) != "sealed" {
			t.Errorf("concurrent takes got %q; want exactly one \"sealed\"", got)
		}
	}},
}
