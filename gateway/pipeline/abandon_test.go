package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/sqlite"
)

// lateStore commits a reservation only once the request's context has
// ended, as a database that answered after the client gave up. When
// cancel is set it ends the request itself as the reservation starts, so
// the request ends during the reservation however slow the steps before.
type lateStore struct {
	*sqlite.Store
	cancel context.CancelFunc
}

func (s lateStore) Reserve(ctx context.Context, r gateway.Reservation) (gateway.ReservationResult, error) {
	if s.cancel != nil {
		s.cancel()
	}
	<-ctx.Done()
	return s.Store.Reserve(context.WithoutCancel(ctx), r)
}

// Issue 8, point 4: a call whose client had given up was dispatched when
// the database came back. A reservation that commits after the request
// ended is not dispatched, and its audit row says why.
func TestCallOfAGoneClientIsNotDispatched(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ctx      func() (context.Context, context.CancelFunc)
		byClient bool // the client cancels as the reservation starts
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, true},
		// Long enough for the steps before the reservation on a loaded
		// machine; the reservation then waits it out.
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Second)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx, cancel := tc.ctx()
			defer cancel()
			late := lateStore{Store: f.store}
			if tc.byClient {
				late.cancel = cancel
			}
			f.pl.Store = late
			raw, _ := json.Marshal(pause)
			_, err := f.pl.CallTool(ctx, f.p, &gateway.CallRequest{Name: "schedule.pause", Arguments: pause, RawArguments: raw})
			if n := f.up.calls.Load(); n != 0 {
				t.Fatalf("the adapter ran %d times for a call whose request had ended", n)
			}
			if err == nil || !errors.Is(err, gateway.ErrNotDispatched) {
				t.Errorf("error %v; want one marked not dispatched", err)
			}
			ev := f.last(t)
			if ev.Status != gateway.AuditError || !contains(ev.ReasonCodes, "dispatch.abandoned") {
				t.Errorf("audit row %s %v, want error with dispatch.abandoned", ev.Status, ev.ReasonCodes)
			}
		})
	}
}
