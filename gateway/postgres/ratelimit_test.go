package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/postgres"
	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
	"github.com/mcpgate/mcpgate/gateway/storetest"
)

func TestRateLimits(t *testing.T) {
	pgtest.URL(t)
	storetest.RunRateLimits(t, func(t *testing.T) storetest.Store { return pgtest.New(t) })
}

// Two stores on one schema are two gateway replicas: their reservations
// must share the buckets exactly.
func TestRateLimitsAcrossReplicas(t *testing.T) {
	a, url := pgtest.NewWithURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	b.DB().SetMaxOpenConns(4)
	storetest.ConcurrentReservations(t, []storetest.Store{a, b})
}
