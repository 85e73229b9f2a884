package console

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"
)

// SignInLimits bounds failed sign-ins, so the admin token and API tokens
// cannot be guessed through the sign-in form. While a limit is reached
// every sign-in from the address (per-address limit) or from everyone
// (global limit) is answered 429 with Retry-After, a correct token too:
// the reply says nothing about the token. Signed-in sessions are not
// affected. The counts are kept in this process (each replica counts its
// own).
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
type signInLimiter struct {
	store   limiter.Store
	address limiter.Rate
	global  limiter.Rate
	signins *prometheus.CounterVec
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
		store:   memory.NewStoreWithOptions(limiter.StoreOptions{Prefix: "console-signin", CleanUpInterval: time.Minute}),
		address: limiter.Rate{Period: l.Period, Limit: int64(l.PerAddress)},
		global:  limiter.Rate{Period: l.Period, Limit: int64(l.Global)},
		signins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_console_signins_total",
			Help: "Console sign-in attempts by outcome: signed_in, refused (a wrong credential or workspace), limited (answered 429 by the failed sign-in limits).",
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

// wait returns how long a sign-in from addr must wait, 0 when it may go
// ahead. A limiter failure waits a whole period (fail closed).
func (s *signInLimiter) wait(ctx context.Context, addr string) time.Duration {
	var longest time.Duration
	for _, k := range []struct {
		key  string
		rate limiter.Rate
	}{{"a:" + addr, s.address}, {"global", s.global}} {
		lc, err := s.store.Peek(ctx, k.key, k.rate)
		if err != nil {
			return k.rate.Period
		}
		if lc.Remaining <= 0 {
			longest = max(longest, max(time.Until(time.Unix(lc.Reset, 0)), time.Second))
		}
	}
	return longest
}

// failed counts one failed sign-in from addr.
func (s *signInLimiter) failed(ctx context.Context, addr string) {
	_, _ = s.store.Increment(ctx, "a:"+addr, 1, s.address)
	_, _ = s.store.Increment(ctx, "global", 1, s.global)
	s.signins.WithLabelValues(outcomeRefused).Inc()
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
