package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/mcpgate/mcpgate/gateway/storetest"
)

func TestRateLimitsInMemory(t *testing.T) {
	storetest.RunRateLimits(t, func(t *testing.T) storetest.Store { return newStore(t, ":memory:") })
}

func TestRateLimitsFile(t *testing.T) {
	storetest.RunRateLimits(t, func(t *testing.T) storetest.Store {
		return newStore(t, filepath.Join(t.TempDir(), "mcpgate.db"))
	})
}

// The embedded store serves one process, but two stores on one file (two
// processes, say) must still share the buckets exactly: BEGIN IMMEDIATE
// takes the file's write lock for the whole reservation.
func TestRateLimitsTwoStoresOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgate.db")
	a := newStore(t, path)
	b := newStore(t, path)
	storetest.ConcurrentReservations(t, []storetest.Store{a, b})
}
