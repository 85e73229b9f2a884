package sqlite_test

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/storetest"
)

// BenchmarkSealerCost (storetest.BenchSealerCost): cpu-us/op is this
// process's CPU time (user+system, from getrusage) per call: the embedded
// store runs in the process, so it is the store's whole cost, sealing
// included.
func BenchmarkSealerCost(b *testing.B) {
	storetest.BenchSealerCost(b, storetest.SealerCost{
		Open: func(b *testing.B, _ int) storetest.Store {
			return newStore(b, filepath.Join(b.TempDir(), "seal.db"))
		},
		CPU: func(b *testing.B, _ storetest.Store) time.Duration {
			var ru syscall.Rusage
			if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
				b.Fatal(err)
			}
			return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		},
		Metric: "cpu-us/op",
	})
}
