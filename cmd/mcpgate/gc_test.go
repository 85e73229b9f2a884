package main

import (
	"runtime/debug"
	"testing"
)

// serve raises the collector's target to defaultGCPercent only when the
// operator set neither GOGC nor GOMEMLIMIT.
func TestSetDefaultGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	for _, c := range []struct {
		env  map[string]string
		want int
	}{
		{map[string]string{}, defaultGCPercent},
		{map[string]string{"GOGC": "50"}, 100},
		{map[string]string{"GOGC": "off"}, 100},
		{map[string]string{"GOMEMLIMIT": "512MiB"}, 100},
	} {
		debug.SetGCPercent(100)
		changed := setDefaultGC(func(k string) string { return c.env[k] })
		if got := debug.SetGCPercent(100); got != c.want || changed != (c.want != 100) {
			t.Errorf("environment %v: GOGC now %d (changed %v), want %d", c.env, got, changed, c.want)
		}
	}
}
