package pipeline_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpgate/mcpgate/gateway/metrics"
)

// The rate-limit series count refusals by bucket and time reservations by
// outcome, so that an operator sees which cap bites and when the store
// refuses calls (fail closed).
func TestRateLimitMetrics(t *testing.T) {
	f := newFixture(t) // ops: 2 per task, 3 per workspace day
	reg := prometheus.NewPedanticRegistry()
	f.pl.Metrics = metrics.New(reg)
	for _, task := range []string{"t1", "t1", "t1", "t2", "t3"} { // ok, ok, task full, ok, workspace full
		_ = f.call(task, "schedule.pause", pause)
	}
	_ = f.call("t1", "app.pause", map[string]any{"app_id": "a1"}) // denied by policy: no reservation
	f.pl.Store = brokenReservations{f.store}
	_ = f.call("t4", "schedule.pause", pause) // store down: refused fail-closed
	f.pl.Store = f.store

	refusals := series(t, reg, "mcpgate_rate_limit_refusals_total")
	if len(refusals) != 2 || refusals["task.ops"] != 1 || refusals["workspace_day.ops"] != 1 {
		t.Errorf("refusals by bucket %v, want task.ops 1 and workspace_day.ops 1", refusals)
	}
	reservations := series(t, reg, "mcpgate_reservation_duration_seconds")
	if len(reservations) != 3 || reservations["ok"] != 3 || reservations["rate_limited"] != 2 || reservations["error"] != 1 {
		t.Errorf("reservations by outcome %v, want ok 3, rate_limited 2, error 1 (none for the denied call)", reservations)
	}
}

// series returns the value of each series of the one-label metric name:
// a counter's value, a histogram's sample count.
func series(t *testing.T, reg prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			v := m.GetCounter().GetValue()
			if h := m.GetHistogram(); h != nil {
				v = float64(h.GetSampleCount())
			}
			out[m.GetLabel()[0].GetValue()] = v
		}
	}
	return out
}
