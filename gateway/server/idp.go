package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/gateway/metrics"
)

// openKeys starts the identity provider's key set when
// MCPGATE_JWT_JWKS_URL or MCPGATE_JWT_DISCOVERY configure one
// (docs/operations.md, "Identity provider"); the agent and cc_server verifiers share it. nil otherwise.
func (a *App) openKeys(log *zap.Logger, reg prometheus.Registerer) (*auth.JWKS, error) {
	cfg := a.Config
	if cfg.JWTJWKSURL == "" && !cfg.JWTDiscovery {
		return nil, nil
	}
	keys, err := auth.NewJWKS(auth.JWKSConfig{
		URL: cfg.JWTJWKSURL, Issuer: cfg.JWTIssuer, Log: log.Named("jwks"), OnRefresh: metrics.JWKSRefreshes(reg),
	})
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, func() error { keys.Close(); return nil })
	st := keys.Status()
	log.Info("identity provider key set", zap.String("jwks_url", cfg.JWTJWKSURL), zap.Bool("discovery", cfg.JWTDiscovery),
		zap.String("issuer", cfg.JWTIssuer), zap.String("state", st.State), zap.Int("keys", st.Keys))
	return keys, nil
}

// readyKeys is the key set part of /readyz and whether the gateway can
// verify tokens: a degraded set whose cached keys verify leaves it ready;
// a set that never held a key does not.
func readyKeys(k *auth.JWKS) (auth.JWKSStatus, bool) {
	st := k.Status()
	return st, st.Keys > 0
}
