package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/callercache"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
	"github.com/mcpgate/mcpgate/gateway/server"
	"github.com/mcpgate/mcpgate/gateway/sqlite"
	"github.com/mcpgate/mcpgate/gateway/storetest"
)

// cachedStore is a store whose LoadCaller goes through a caller cache.
type cachedStore struct {
	storetest.Store
	cache *callercache.Cache
}

func (s cachedStore) LoadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error) {
	return s.cache.LoadCaller(ctx, p)
}

// benchStore is what both benchmarks need of a store.
type benchStore interface {
	storetest.Store
	Close() error
}

// benchStores are the stores the benchmarks run on; PostgreSQL needs
// MCPGATE_TEST_DATABASE_URL (skipped without it).
var benchStores = []struct {
	name string
	open func(b *testing.B) benchStore
}{
	{"postgres", func(b *testing.B) benchStore { return pgtest.New(b) }},
	{"sqlite", func(b *testing.B) benchStore {
		s, err := sqlite.Open(context.Background(), b.TempDir()+"/bench.db")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		if err := s.Migrate(context.Background()); err != nil {
			b.Fatal(err)
		}
		return s
	}},
}

// BenchmarkCallerCache compares the request path's caller read with and
// without the caller cache (TTL 1 s, every iteration a hit after the
// first): LoadCaller alone, and a whole allowed tools/call (caller, policy
// decision, rate-limit reservation and audit row, a no-op adapter).
//
//	go test -run '^$' -bench BenchmarkCallerCache -benchtime 2s ./gateway/server/
func BenchmarkCallerCache(b *testing.B) {
	for _, st := range benchStores {
		b.Run("LoadCaller/"+st.name+"/store", func(b *testing.B) {
			storetest.BenchLoadCaller(b, st.open(b))
		})
		b.Run("LoadCaller/"+st.name+"/cached", func(b *testing.B) {
			s := st.open(b)
			storetest.BenchLoadCaller(b, cachedStore{Store: s, cache: callercache.New(s, callercache.Options{TTL: time.Second})})
		})
		for _, mode := range []struct {
			name string
			ttl  time.Duration
		}{{"store", 0}, {"cached", time.Second}} {
			b.Run("CallTool/"+st.name+"/"+mode.name, func(b *testing.B) {
				limits := config.DefaultLimits()
				limits.ToolPerTask = 1 << 30 // measure calls, not refusals
				g := newCachedGatewayOn(b, st.open(b), mode.ttl, limits)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if _, err := g.call(b, "workspace.info"); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(g.store.loads.Load())/float64(b.N), "store-reads/op")
			})
		}
	}
}

var _ server.FullStore = benchStore(nil)
