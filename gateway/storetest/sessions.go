package storetest

import (
	"testing"
	"time"
)

var sessionTests = []test{
	{"an ended session is ended until its until, on the store", func(t *testing.T, s Store) {
		now := time.Now().UTC().Truncate(time.Microsecond)
		until := now.Add(time.Hour)
		ended, err := s.SessionEnded(ctx(t), "s1.a", now)
		must(t, err, "SessionEnded before EndSession")
		if ended {
			t.Fatal("SessionEnded = true for a session never ended")
		}
		must(t, s.EndSession(ctx(t), "s1.a", until), "EndSession")
		for _, tc := range []struct {
			id   string
			at   time.Time
			want bool
		}{
			{"s1.a", now, true},
			{"s1.a", until.Add(-time.Millisecond), true},
			{"s1.a", until, false}, // the id no longer verifies: the record says nothing more
			{"s1.b", now, false},
		} {
			got, err := s.SessionEnded(ctx(t), tc.id, tc.at)
			must(t, err, "SessionEnded "+tc.id)
			if got != tc.want {
				t.Errorf("SessionEnded(%s, until%+v) = %v, want %v", tc.id, tc.at.Sub(until), got, tc.want)
			}
		}
	}},
	{"ending a session again keeps the later until", func(t *testing.T, s Store) {
		now := time.Now().UTC().Truncate(time.Microsecond)
		must(t, s.EndSession(ctx(t), "s1.a", now.Add(2*time.Hour)), "EndSession")
		must(t, s.EndSession(ctx(t), "s1.a", now.Add(time.Hour)), "EndSession again, earlier")
		if got, err := s.SessionEnded(ctx(t), "s1.a", now.Add(90*time.Minute)); err != nil || !got {
			t.Errorf("SessionEnded 90 min later = %v, %v; want true (the later until kept)", got, err)
		}
	}},
	{"the sweep deletes only the records past their until", func(t *testing.T, s Store) {
		now := time.Now().UTC().Truncate(time.Microsecond)
		must(t, s.EndSession(ctx(t), "s1.old", now.Add(-time.Minute)), "EndSession old")
		must(t, s.EndSession(ctx(t), "s1.new", now.Add(time.Hour)), "EndSession new")
		n, err := s.DeleteEndedSessions(ctx(t), now)
		must(t, err, "DeleteEndedSessions")
		if n != 1 {
			t.Errorf("DeleteEndedSessions = %d, want 1 (only s1.old)", n)
		}
		if got, err := s.SessionEnded(ctx(t), "s1.new", now); err != nil || !got {
			t.Errorf("SessionEnded(s1.new) after the sweep = %v, %v; want true", got, err)
		}
	}},
}
