package replica

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/postgres"
)

// Feed is how the replicas of one store hear each other: PostgreSQL's
// LISTEN/NOTIFY (Postgres) for replicas on a shared database, or Local
// for the embedded store, which one process serves. The wiring picks it
// with the store, so nothing asks the store what it is.
type Feed interface {
	// Listen starts delivering the announcements of every replica to c
	// until the returned Listening is closed. It returns once it
	// listens, or with an error and a Listening that keeps trying in the
	// background (nil when it cannot try at all).
	Listen(ctx context.Context, c *Coordinator) (Listening, error)
	// AnnouncePolicy asks every replica to reload its policy folder.
	AnnouncePolicy(ctx context.Context, r gateway.PolicyRequest) error
	// Shared reports whether other processes share the store: their
	// ends of sessions are announced only once the feed listens.
	Shared() bool
	// Relay is the store's table of relayed requests awaiting the
	// client's answer, through which replicas pass those answers; nil
	// when one process serves the store.
	Relay() RelayAnswerStore
}

// Listening is a running Feed: its health for the metrics and /readyz.
type Listening interface {
	// Connected reports whether changes are announced now; while false,
	// the replica falls back to bounded staleness (docs/architecture.md,
	// "Replicas").
	Connected() bool
	// Received counts the announcements received.
	Received() uint64
	// Close stops the feed.
	Close() error
}

// Postgres is the Feed of replicas on one PostgreSQL database: the
// store's LISTEN/NOTIFY channels and its table of relayed answers.
type Postgres struct{ Store *postgres.Store }

// listenWait bounds how long Listen waits for the first LISTEN; past it
// the gateway starts anyway, degraded, and the listener keeps trying.
const listenWait = 5 * time.Second

// Listen implements Feed with a postgres.Listener on the store's schema.
func (f Postgres) Listen(ctx context.Context, c *Coordinator) (Listening, error) {
	ctx, cancel := context.WithTimeout(ctx, listenWait)
	defer cancel()
	l, err := f.Store.Listen(ctx, c, postgres.ListenOptions{})
	if l == nil {
		return nil, err
	}
	return l, err
}

// AnnouncePolicy implements Feed on the store's policy channel.
func (f Postgres) AnnouncePolicy(ctx context.Context, r gateway.PolicyRequest) error {
	return f.Store.AnnouncePolicy(ctx, r)
}

// Shared implements Feed: replicas share the database.
func (Postgres) Shared() bool { return true }

// Relay implements Feed: the table of migration 00013.
func (f Postgres) Relay() RelayAnswerStore { return f.Store }

// Local is the Feed of the embedded store, which one process serves: the
// admin API's writes reach this process's caches and streams directly
// (Coordinator.Announce), so it is always connected, counts those
// announcements, and has nothing to tell other replicas.
type Local struct{}

// Listen implements Feed.
func (Local) Listen(_ context.Context, c *Coordinator) (Listening, error) {
	return localListening{c}, nil
}

// AnnouncePolicy implements Feed: there is no other replica to ask.
func (Local) AnnouncePolicy(context.Context, gateway.PolicyRequest) error { return nil }

// Shared implements Feed.
func (Local) Shared() bool { return false }

// Relay implements Feed: a response reaches only this process's
// requests, which wait in memory.
func (Local) Relay() RelayAnswerStore { return nil }

type localListening struct{ c *Coordinator }

func (l localListening) Connected() bool  { return true }
func (l localListening) Received() uint64 { return l.c.Announced() }
func (l localListening) Close() error     { return nil }

var (
	_ Feed      = Postgres{}
	_ Feed      = Local{}
	_ Listening = (*postgres.Listener)(nil)
)

// RegisterMetrics exposes the feed's health on reg:
// mcpgate_store_notify_connected (1 while changes are announced, 0 in the
// degraded fallback) and mcpgate_store_notifications_received_total.
func RegisterMetrics(reg prometheus.Registerer, l Listening) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "mcpgate_store_notify_connected",
			Help: "1 while this replica hears the changes made through other replicas (PostgreSQL LISTEN/NOTIFY; always 1 on the embedded store), 0 while it falls back to bounded staleness.",
		}, func() float64 {
			if l.Connected() {
				return 1
			}
			return 0
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "mcpgate_store_notifications_received_total",
			Help: "Change announcements received by this replica (PostgreSQL notifications of its schema; on the embedded store, this process's admin changes).",
		}, func() float64 { return float64(l.Received()) }),
	)
}
