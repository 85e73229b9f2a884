package console

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"
)

// SignInLimits bounds failed sign-ins, so the admin token and API tokens
// cannot be guessed through the sign-in form. While a limit is reached
// every sign-in from the address (per-address limit) or from everyone
// (global limit) is answered 429 with Retry-After. The per-address limit
// refuses every sign-in from the address unchecked, a correct token too
// (the reply says nothing about the token). The global limit never
// refuses a correct token: failures from many addresses must not lock
// every operator out, so past it the credential is still checked (each
// address stays under its own limit), a correct one signs in and a wrong
// one is answered 429 instead of 401. A sign-in whose credential is
// being checked counts as failed until it ends, so parallel sign-ins get
// no more checks than the limit. Signed-in sessions are not affected.
// The counts are kept in this process (each replica counts its own).
type SignInLimits struct {
	// PerAddress is the number of failed sign-ins one client address
	// (the connection's remote address) may make per Period.
	PerAddress int
	// Global is the number of failed sign-ins all addresses together may
	// make per Period.
	Global int
	// Period is the window the counts are kept for.
	Period time.Duration
}

// DefaultSignInLimits are the limits of Options.SignInLimits left zero:
// 10 failed sign-ins per client address and 100 overall per 15 minutes.
var DefaultSignInLimits = SignInLimits{PerAddress: 10, Global: 100, Period: 15 * time.Minute}

// Outcomes of a sign-in, the outcome label of mcpgate_console_signins_total.
const (
	outcomeSignedIn = "signed_in"
	outcomeRefused  = "refused"
	outcomeLimited  = "limited"
)

// signInLimiter counts failed sign-ins with ulule/limiter's memory store.
// A sign-in whose credential is being checked counts as a failure until it
// ends (inflight), so parallel sign-ins cannot all pass the limit before
// the first of them is counted.
type signInLimiter struct {
	store   limiter.Store
	address limiter.Rate
	global  limiter.Rate
	signins *prometheus.CounterVec

	mu       sync.Mutex     // one begin or end at a time
	inflight map[string]int // sign-ins begun and not ended, by limiter key
}

func newSignInLimiter(l SignInLimits, reg prometheus.Registerer) *signInLimiter {
	d := DefaultSignInLimits
	if l.PerAddress <= 0 {
		l.PerAddress = d.PerAddress
	}
	if l.Global <= 0 {
		l.Global = d.Global
	}
	if l.Period <= 0 {
		l.Period = d.Period
	}
	s := &signInLimiter{
		inflight: map[string]int{},
		store:    memory.NewStoreWithOptions(limiter.StoreOptions{Prefix: "console-signin", CleanUpInterval: time.Minute}),
		address:  limiter.Rate{Period: l.Period, Limit: int64(l.PerAddress)},
		global:   limiter.Rate{Period: l.Period, Limit: int64(l.Global)},
		signins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_console_signins_total",
			Help: "Console sign-in attempts by outcome: signed_in, refused (a wrong credential or workspace, checked), limited (answered 429 unchecked by the per-address failed sign-in limit, or because the limiter failed).",
		}, []string{"outcome"}),
	}
	for _, o := range []string{outcomeSignedIn, outcomeRefused, outcomeLimited} {
		s.signins.WithLabelValues(o)
	}
	if reg != nil {
		if err := reg.Register(s.signins); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
					s.signins = existing
				}
			}
		}
	}
	return s
}

// begin decides whether a sign-in from addr may have its credential
// checked. wait > 0 refuses it unchecked: the address has used its
// failed sign-ins (or the limiter failed: a whole period, fail closed).
// globalWait > 0 says the global limit is reached: the credential is
// still checked, so that a correct one signs in however many others
// failed (the global count only says how many failures there were, it
// cannot tell an operator from a guesser), and a wrong one is answered
// as limited (429 with Retry-After globalWait). A sign-in that goes ahead
// counts against both limits until end.
func (s *signInLimiter) begin(ctx context.Context, addr string) (wait, globalWait time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := s.keys(addr)
	for i, k := range keys {
		lc, err := s.store.Peek(ctx, k.key, k.rate)
		if err != nil {
			return k.rate.Period, 0
		}
		if lc.Remaining-int64(s.inflight[k.key]) > 0 {
			continue
		}
		d := max(time.Until(time.Unix(lc.Reset, 0)), time.Second)
		if i == 0 {
			wait = d
		} else {
			globalWait = d
		}
	}
	if wait > 0 {
		return wait, 0
	}
	for _, k := range keys {
		s.inflight[k.key]++
	}
	return 0, globalWait
}

// end ends a sign-in that begin let go ahead, counting it as a failed one
// when failed.
func (s *signInLimiter) end(ctx context.Context, addr string, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.keys(addr) {
		if failed {
			_, _ = s.store.Increment(ctx, k.key, 1, k.rate)
		}
		if s.inflight[k.key]--; s.inflight[k.key] <= 0 {
			delete(s.inflight, k.key)
		}
	}
	if failed {
		s.signins.WithLabelValues(outcomeRefused).Inc()
	}
}

// limitKey is one limit's key in the store and its rate.
type limitKey struct {
	key  string
	rate limiter.Rate
}

// keys are the limits a sign-in from addr counts against.
func (s *signInLimiter) keys(addr string) [2]limitKey {
	return [2]limitKey{{"a:" + addr, s.address}, {"global", s.global}}
}

// retryAfter is the Retry-After value of d: whole seconds, rounded up.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(int((d + time.Second - 1) / time.Second))
}

// clientAddress is the connection's remote host: behind a reverse proxy
// every visitor has the proxy's address, so the per-address limit then
// counts them together.
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
