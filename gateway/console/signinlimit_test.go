package console_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/console"
)

// signInFrom posts the sign-in form (its token form in the cookie and the
// csrf field) with token from addr to c and returns the reply a browser
// shows: a refused sign-in's redirect to the sign-in page is followed
// (POST/redirect/GET), so its status and Retry-After are that page's.
func signInFrom(c http.Handler, form, addr, token string) *httptest.ResponseRecorder {
	body := url.Values{"csrf": {form}, "token": {token}}.Encode()
	req := httptest.NewRequest(http.MethodPost, "/console/login", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: console.FormCookieName, Value: form})
	req.RemoteAddr = addr + ":40000"
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, req)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/console/login" {
		return rec
	}
	get := httptest.NewRequest(http.MethodGet, "/console/login", nil)
	get.AddCookie(&http.Cookie{Name: console.FormCookieName, Value: form})
	for _, ck := range rec.Result().Cookies() {
		get.AddCookie(ck)
	}
	get.RemoteAddr = req.RemoteAddr
	shown := httptest.NewRecorder()
	c.ServeHTTP(shown, get)
	return shown
}

// TestSignInLimits: failed sign-ins are limited per client address and
// overall; once an address's limit is reached even the right token waits
// (429 with Retry-After, the token unchecked); past the global limit a
// wrong token is answered 429 and the right one signs in; every outcome is
// counted.
func TestSignInLimits(t *testing.T) {
	g := newGateway(t)
	reg := prometheus.NewRegistry()
	c := console.New(console.Options{Admin: g.admin, AdminPrefix: admin.Prefix, Now: g.clock.now, Registerer: reg,
		SignInLimits: console.SignInLimits{PerAddress: 3, Global: 5, Period: time.Minute}})
	form := strings.Repeat("f", 43) // the sign-in form's cookie, sent back as its csrf field
	signIn := func(addr, token string) *httptest.ResponseRecorder { return signInFrom(c, form, addr, token) }
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
	// Two more failures elsewhere reach the global five: a wrong token is
	// answered 429, the right one still signs in (issue 22, item 10).
	signIn("10.0.0.2", "wrong-a")
	signIn("10.0.0.3", "wrong-b")
	if rec := signIn("10.0.0.4", "wrong-c"); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("a wrong token after the global limit: %d, want 429 with Retry-After\n%s", rec.Code, rec.Body)
	}
	if rec := signIn("10.0.0.4", adminToken); rec.Code != http.StatusSeeOther {
		t.Fatalf("the right token after the global limit: %d, want 303\n%s", rec.Code, rec.Body)
	}

	want := map[string]float64{"signed_in": 2, "refused": 6, "limited": 1}
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

// TestSignInLimitsConcurrent: sign-ins checked at the same time count
// against the limit before their credential is checked, so a burst of
// parallel guesses gets no more checks than the limit allows (each guess
// passed the check before any of them was counted).
func TestSignInLimitsConcurrent(t *testing.T) {
	const burst, perAddress = 12, 3
	var mu sync.Mutex
	checked := 0
	arrived := make(chan struct{}, burst)
	release := make(chan struct{})
	slowAdmin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		checked++
		mu.Unlock()
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"code":"Unauthenticated","message":"admin token not accepted"}}`))
	})
	c := console.New(console.Options{Admin: slowAdmin, AdminPrefix: admin.Prefix, Registerer: prometheus.NewRegistry(),
		SignInLimits: console.SignInLimits{PerAddress: perAddress, Global: 100, Period: time.Minute}})
	form := strings.Repeat("f", 43)
	codes := make(chan int, burst)
	var wg sync.WaitGroup
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- signInFrom(c, form, "10.0.0.9", "guess-"+strconv.Itoa(i)).Code
		}()
	}
	// Hold every credential check until the whole burst is in (or, once
	// the limit holds the rest back, until it plainly is not coming).
	for range burst {
		select {
		case <-arrived:
			continue
		case <-time.After(500 * time.Millisecond):
		}
		break
	}
	close(release)
	wg.Wait()
	close(codes)
	got := map[int]int{}
	for code := range codes {
		got[code]++
	}
	if checked > perAddress || got[http.StatusUnauthorized] > perAddress || got[http.StatusTooManyRequests] != burst-got[http.StatusUnauthorized] {
		t.Fatalf("%d parallel guesses from one address: %d credentials checked, replies %v; want at most %d checked (401), the rest 429",
			burst, checked, got, perAddress)
	}
}

// TestConsoleSignInGlobalLimitNeverRefusesCorrectToken: 100 bad sign-ins
// from 10 addresses (the default limits) locked every operator out for 15
// minutes, the right token included. The global limit never refuses a
// correct token; each address keeps its own limit, and a wrong token past
// the global limit is still answered 429.
func TestConsoleSignInGlobalLimitNeverRefusesCorrectToken(t *testing.T) {
	g := newGateway(t)
	c := console.New(console.Options{Admin: g.admin, AdminPrefix: admin.Prefix, Now: g.clock.now, Registerer: prometheus.NewRegistry()})
	form := strings.Repeat("f", 43)
	signIn := func(addr, token string) *httptest.ResponseRecorder { return signInFrom(c, form, addr, token) }
	for a := range 10 {
		for i := range 10 {
			if rec := signIn("10.1.0."+strconv.Itoa(a), "wrong-"+strconv.Itoa(i)); rec.Code != http.StatusUnauthorized {
				t.Fatalf("attacker %d, guess %d: %d, want 401", a, i, rec.Code)
			}
		}
	}
	if rec := signIn("10.2.0.1", "wrong"); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("a wrong token past the global limit: %d, want 429 with Retry-After\n%s", rec.Code, rec.Body)
	}
	if rec := signIn("10.2.0.1", adminToken); rec.Code != http.StatusSeeOther || rec.Header().Get("Set-Cookie") == "" {
		t.Fatalf("the operator's right token past the global limit: %d, want 303 with a session\n%s", rec.Code, rec.Body)
	}
	if rec := signIn("10.1.0.3", adminToken); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("the right token from an address past its own limit: %d, want 429 (unchecked)", rec.Code)
	}
}
