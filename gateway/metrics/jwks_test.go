package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestJWKSRefreshes(t *testing.T) {
	reg := prometheus.NewRegistry()
	count := JWKSRefreshes(reg)
	count(true)
	count(false)
	count(false)
	mf, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range mf {
		for _, m := range f.GetMetric() {
			got[f.GetName()+"/"+m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	if got["mcpgate_jwks_refreshes_total/ok"] != 1 || got["mcpgate_jwks_refreshes_total/error"] != 2 {
		t.Fatalf("series %v, want ok 1 and error 2", got)
	}
}
