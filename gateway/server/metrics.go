package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpgate/mcpgate/gateway"
)

// Metrics are the Prometheus series of the request path, served on /metrics.
type Metrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics registers mcpgate_tool_calls_total{tool,tier,status} and
// mcpgate_tool_call_duration_seconds{tier,status} on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_tool_calls_total",
			Help: "tools/call requests by tool, tier and audit status.",
		}, []string{"tool", "tier", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpgate_tool_call_duration_seconds",
			Help:    "Time from receiving a tools/call to its reply, by tier and audit status.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2.5, 12),
		}, []string{"tier", "status"}),
	}
	reg.MustRegister(m.calls, m.duration)
	return m
}

func (m *Metrics) observe(ev *gateway.AuditEvent) {
	if m == nil {
		return
	}
	tool := ev.Tool
	if ev.Tier == "" {
		tool = "unknown" // keep label cardinality bounded for unknown names
	}
	m.calls.WithLabelValues(tool, string(ev.Tier), ev.Status).Inc()
	m.duration.WithLabelValues(string(ev.Tier), ev.Status).Observe(float64(ev.LatencyMicros) * float64(time.Microsecond) / float64(time.Second))
}
