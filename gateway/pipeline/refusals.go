package pipeline

import (
	"sync"
	"time"
)

// RefusalBucket is the name of the per-principal bucket of refused calls,
// in the error data, the audit-less refusal and the metrics.
const RefusalBucket = "principal.refusals"

// DefaultRefusalsPerSecond is the default of MCPGATE_REFUSED_CALLS_PER_SECOND.
const DefaultRefusalsPerSecond = 5

// refusalBurstFactor: a principal may have this many seconds' worth of
// refusals audited at once before the rate applies.
const refusalBurstFactor = 4

// RefusalLimiter bounds how fast one principal (workspace, task, subject
// and token) can make the gateway write audit rows for calls it refuses
// before dispatch (policy denials, invalid calls, unknown tools, full
// rate-limit buckets): a token bucket of perSecond tokens a second and
// refusalBurstFactor × perSecond at most, in process memory. Allowed calls
// are bounded by their rate-limit slots already. It is safe for
// concurrent use.
type RefusalLimiter struct {
	perSecond float64
	burst     float64

	mu        sync.Mutex
	buckets   map[string]*refusalBucket
	lastSweep time.Time
}

type refusalBucket struct {
	tokens   float64
	at       time.Time // when tokens was last brought up to date
	dropped  int64     // refusals not audited since the last warning
	warnedAt time.Time
}

// NewRefusalLimiter returns a limiter of perSecond audited refusals a
// second per principal (burst 4 × perSecond); perSecond <= 0 means
// DefaultRefusalsPerSecond.
func NewRefusalLimiter(perSecond int) *RefusalLimiter {
	if perSecond <= 0 {
		perSecond = DefaultRefusalsPerSecond
	}
	return &RefusalLimiter{perSecond: float64(perSecond), burst: float64(perSecond * refusalBurstFactor),
		buckets: map[string]*refusalBucket{}}
}

// sweepAbove is the number of principals kept before full buckets (idle
// principals) are forgotten.
const sweepAbove = 4096

// refusalWarnEvery is how often, per principal, a warning says how many
// refusals went unaudited.
const refusalWarnEvery = 10 * time.Second

// take takes one token of key's bucket at now. ok false: the refusal is
// not to be audited; then warn is the number of unaudited refusals to
// report in a log line now (0: not yet).
func (l *RefusalLimiter) take(key string, now time.Time) (ok bool, warn int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		l.sweep(now)
		b = &refusalBucket{tokens: l.burst, at: now}
		l.buckets[key] = b
	}
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(l.burst, b.tokens+d.Seconds()*l.perSecond)
		b.at = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	b.dropped++
	if now.Sub(b.warnedAt) >= refusalWarnEvery {
		warn, b.dropped, b.warnedAt = b.dropped, 0, now
	}
	return false, warn
}

// sweep forgets, at most once a minute and only above sweepAbove
// principals, the buckets that have refilled: their principals are idle.
func (l *RefusalLimiter) sweep(now time.Time) {
	if len(l.buckets) < sweepAbove || now.Sub(l.lastSweep) < time.Minute {
		return
	}
	l.lastSweep = now
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.perSecond >= l.burst {
			delete(l.buckets, k)
		}
	}
}
