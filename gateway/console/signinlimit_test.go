package console_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/console"
)

// TestSignInLimits: failed sign-ins are limited per client address and
// overall; once a limit is reached even the right token waits (429 with
// Retry-After, the token unchecked), and every outcome is counted.
func TestSignInLimits(t *testing.T) {
	g := newGateway(t)
	reg := prometheus.NewRegistry()
	c := console.New(console.Options{Admin: g.admin, AdminPrefix: admin.Prefix, Now: g.clock.now, Registerer: reg,
		SignInLimits: console.SignInLimits{PerAddress: 3, Global: 5, Period: time.Minute}})
	form := strings.Repeat("f", 43) // the sign-in form's cookie, sent back as its csrf field
	signIn := func(addr, token string) *httptest.ResponseRecorder {
		t.Helper()
		body := url.Values{"csrf": {form}, "token": {token}}.Encode()
		req := httptest.NewRequest(http.MethodPost, "/console/login", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: console.FormCookieName, Value: form})
		req.RemoteAddr = addr + ":40000"
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, req)
		return rec
	}
	limited := func(rec *httptest.ResponseRecorder, who string) {
		t.Helper()
		if rec.Code != http.StatusTooManyRequests {
			t.Fatalf("%s: %d, want 429\n%s", who, rec.Code, rec.Body)
		}
		if s, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || s < 1 || s > 60 {
			t.Errorf("%s: Retry-After %q, want 1..60 seconds", who, rec.Header().Get("Retry-After"))
		}
		if !strings.Contains(rec.Body.String(), "Too many failed sign-ins") || rec.Header().Get("Set-Cookie") != "" {
			t.Errorf("%s: a limited sign-in must say so and set no cookie\n%v\n%s", who, rec.Header(), rec.Body)
		}
	}
	for i := range 3 {
		if rec := signIn("10.0.0.1", "wrong-"+strconv.Itoa(i)); rec.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i, rec.Code)
		}
	}
	// The address has used its three: the right token now waits too (no oracle).
	limited(signIn("10.0.0.1", adminToken), "the right token after the per-address limit")
	// Another address is not held back by the first one's failures.
	if rec := signIn("10.0.0.2", adminToken); rec.Code != http.StatusSeeOther {
		t.Fatalf("the right token from another address: %d, want 303\n%s", rec.Code, rec.Body)
	}
	// Two more failures elsewhere reach the global five: everyone waits.
	signIn("10.0.0.2", "wrong-a")
	signIn("10.0.0.3", "wrong-b")
	limited(signIn("10.0.0.4", adminToken), "the right token after the global limit")

	want := map[string]float64{"signed_in": 1, "refused": 5, "limited": 2}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "mcpgate_console_signins_total" {
			for _, m := range mf.GetMetric() {
				got[label(m, "outcome")] = m.GetCounter().GetValue()
			}
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("mcpgate_console_signins_total{outcome=%q} = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
