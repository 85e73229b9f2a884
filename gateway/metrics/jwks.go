package metrics

import "github.com/prometheus/client_golang/prometheus"

// JWKSRefreshes registers mcpgate_jwks_refreshes_total{outcome} on reg
// (outcome ok or error: refreshes of the identity provider's key set,
// docs/operations.md, "Identity provider"; a rising error count with /readyz "degraded" means the
// cached keys are verifying while the provider does not answer) and
// returns the function that counts one refresh (auth.JWKSConfig.OnRefresh).
func JWKSRefreshes(reg prometheus.Registerer) func(ok bool) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpgate_jwks_refreshes_total",
		Help: "Refreshes of the identity provider's key set (JWKS), by outcome ok or error.",
	}, []string{"outcome"})
	reg.MustRegister(c)
	ok, failed := c.WithLabelValues("ok"), c.WithLabelValues("error")
	return func(success bool) {
		if success {
			ok.Inc()
		} else {
			failed.Inc()
		}
	}
}
