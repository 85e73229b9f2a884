// Package metrics keeps the Prometheus series of the tools/call path. Its
// Metrics is the pipeline's observer (pipeline.Observer): the pipeline
// reports each call once its audit row is settled, and each reservation;
// and the decision log's (decisionlog.Stats): what it dropped, sent and
// failed to send.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpgate/mcpgate/gateway"
)

// Metrics are the Prometheus series of the request path, served on
// /metrics. A nil *Metrics records nothing. It is safe for concurrent use.
type Metrics struct {
	calls       *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	refusals    *prometheus.CounterVec
	reservation *prometheus.HistogramVec

	logDropped, logSent, logFailed *prometheus.CounterVec
	policyRevision                 *prometheus.GaugeVec
	reloads                        *prometheus.CounterVec
	reloadFailures                 *prometheus.CounterVec
	shadowFlips                    *prometheus.CounterVec
}

// Outcomes of a reservation (mcpgate_reservation_duration_seconds).
const (
	reservationOK          = "ok"           // slots taken, audit row written
	reservationRateLimited = "rate_limited" // a bucket was full
	reservationConflict    = "conflict"     // the idempotency key was taken
	reservationFailed      = "error"        // the store failed: call refused
)

// New registers on reg:
//   - mcpgate_tool_calls_total{tool,tier,status}: every tools/call by its
//     audit status;
//   - mcpgate_tool_call_duration_seconds{tier,status}: time to the reply;
//   - mcpgate_rate_limit_refusals_total{bucket}: calls refused by a full
//     bucket (docs/requirements.md#rate-limits), e.g. bucket="workspace_day.ops", to
//     see which cap to raise;
//   - mcpgate_reservation_duration_seconds{outcome}: the audit store's
//     reservation transaction (slots + audit row) by outcome ok,
//     rate_limited, conflict or error; the part of a call's latency the
//     database decides, and "error" counts calls refused fail-closed;
//   - mcpgate_decision_log_dropped_total{reason}: decision log events
//     dropped, by reason (buffer_full, mask_failed, http_buffer_full, …:
//     decisionlog.Drop…);
//   - mcpgate_decision_log_sent_total{sink} and
//     mcpgate_decision_log_failed_total{sink}: events a sink (file, http)
//     delivered, and its failed writes or uploads.
//   - mcpgate_policy_revision_info{surface,revision}: 1 for the policy
//     revision live on each surface (the series of a replaced revision is
//     removed), so each replica shows which revision it runs;
//   - mcpgate_policy_reloads_total{surface} and
//     mcpgate_policy_reload_failures_total{surface}: reload attempts
//     whose candidate passed (went live or was unchanged) and those that
//     were refused (the running revision stayed);
//   - mcpgate_policy_shadow_flips_total{tool,direction}: tools/call
//     decisions the shadow candidate would have flipped, direction
//     allow_to_deny, deny_to_allow, allow_to_approval or approval_to_allow.
func New(reg prometheus.Registerer) *Metrics {
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
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_rate_limit_refusals_total",
			Help: "tools/call requests refused by a full rate-limit bucket, by bucket.",
		}, []string{"bucket"}),
		reservation: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpgate_reservation_duration_seconds",
			Help:    "Time of the audit store's reservation (rate-limit slots and audit row) by outcome.",
			Buckets: prometheus.ExponentialBuckets(100e-6, 2.5, 10),
		}, []string{"outcome"}),
	}
	m.policyRevision = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcpgate_policy_revision_info",
		Help: "1 for the policy bundle revision that decides each surface's calls on this replica.",
	}, []string{"surface", "revision"})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpgate_policy_reloads_total",
		Help: "Policy reload attempts whose candidate passed its checks (went live, or had the live revision), by surface.",
	}, []string{"surface"})
	m.reloadFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpgate_policy_reload_failures_total",
		Help: "Policy reload attempts refused (load, compile, decision rules or the bundle's own tests failed; the running revision stayed), by surface.",
	}, []string{"surface"})
	m.shadowFlips = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpgate_policy_shadow_flips_total",
		Help: "tools/call decisions the shadow policy candidate would have decided otherwise (never enforced), by tool and direction.",
	}, []string{"tool", "direction"})
	m.logDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpgate_decision_log_dropped_total",
		Help: "Decision log events dropped, by reason.",
	}, []string{"reason"})
	m.logSent = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpgate_decision_log_sent_total",
		Help: "Decision log events delivered, by sink (file, http).",
	}, []string{"sink"})
	m.logFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpgate_decision_log_failed_total",
		Help: "Failed decision log writes (file) and uploads (http), by sink.",
	}, []string{"sink"})
	reg.MustRegister(m.calls, m.duration, m.refusals, m.reservation, m.logDropped, m.logSent, m.logFailed,
		m.policyRevision, m.reloads, m.reloadFailures, m.shadowFlips)
	return m
}

// PolicyRevision sets the info series of revision on surface to 1 and
// removes that of any other revision of the surface. The surface's reload
// counters are exported from then on, at 0 until a reload.
func (m *Metrics) PolicyRevision(surface, revision string) {
	if m == nil {
		return
	}
	m.policyRevision.DeletePartialMatch(prometheus.Labels{"surface": surface})
	m.policyRevision.WithLabelValues(surface, revision).Set(1)
	m.reloads.WithLabelValues(surface)
	m.reloadFailures.WithLabelValues(surface)
}

// PolicyReload counts one reload attempt on surface: ok when the
// candidate passed, else a failure.
func (m *Metrics) PolicyReload(surface string, ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.reloads.WithLabelValues(surface).Inc()
	} else {
		m.reloadFailures.WithLabelValues(surface).Inc()
	}
}

// ShadowFlip counts one decision the shadow candidate would have flipped;
// tool is a catalog tool (the decision step runs only for those), so the
// label stays bounded.
func (m *Metrics) ShadowFlip(tool, direction string) {
	if m == nil {
		return
	}
	m.shadowFlips.WithLabelValues(tool, direction).Inc()
}

// ObserveReservation records one reservation that took d and ended with
// err: nil (slots taken, row written), an ERateLimited or EConflict
// *gateway.Error (a full bucket, a claimed idempotency key), or any other
// error (the store failed).
func (m *Metrics) ObserveReservation(d time.Duration, err error) {
	if m == nil {
		return
	}
	outcome := reservationOK
	switch gateway.ErrorCodeOf(err) {
	case "":
	case gateway.ERateLimited:
		outcome = reservationRateLimited
	case gateway.EConflict:
		outcome = reservationConflict
	default:
		outcome = reservationFailed
	}
	m.reservation.WithLabelValues(outcome).Observe(d.Seconds())
}

// ObserveCall records one tools/call by the final state of its audit row
// ev: its tool (or "unknown" when ev.Tier is empty: not in the catalog),
// tier, status, bucket (for a rate-limited call) and latency.
func (m *Metrics) ObserveCall(ev *gateway.AuditEvent) {
	if m == nil {
		return
	}
	tool := ev.Tool
	if ev.Tier == "" {
		tool = "unknown" // keep label cardinality bounded for unknown names
	}
	m.calls.WithLabelValues(tool, string(ev.Tier), ev.Status).Inc()
	if ev.Status == gateway.AuditRateLimited && ev.Bucket != "" {
		m.refusals.WithLabelValues(ev.Bucket).Inc()
	}
	m.duration.WithLabelValues(string(ev.Tier), ev.Status).Observe(float64(ev.LatencyMicros) * float64(time.Microsecond) / float64(time.Second))
}

// DecisionLogDropped counts n decision log events dropped for reason.
func (m *Metrics) DecisionLogDropped(reason string, n int) {
	if m != nil {
		m.logDropped.WithLabelValues(reason).Add(float64(n))
	}
}

// DecisionLogSent counts n decision log events sink delivered.
func (m *Metrics) DecisionLogSent(sink string, n int) {
	if m != nil {
		m.logSent.WithLabelValues(sink).Add(float64(n))
	}
}

// DecisionLogFailed counts one failed write or upload of sink.
func (m *Metrics) DecisionLogFailed(sink string) {
	if m != nil {
		m.logFailed.WithLabelValues(sink).Inc()
	}
}
