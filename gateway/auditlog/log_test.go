package auditlog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.opentelemetry.io/otel/propagation"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auditlog"
)

// memory is a Writer keeping what it was given; fail makes the next
// writes fail.
type memory struct {
	mu   sync.Mutex
	rows []*gateway.AuditEvent
	fail error
}

func (m *memory) RecordEvents(_ context.Context, evs []*gateway.AuditEvent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.rows = append(m.rows, evs...)
	return nil
}

func (m *memory) all() []*gateway.AuditEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*gateway.AuditEvent(nil), m.rows...)
}

// A flood of 10,000 bad tokens from 7 sources, within a minute and
// across the next, writes a bounded number of rows, names every source,
// and never the token.
func TestFloodOfRefusedCredentialsIsBounded(t *testing.T) {
	mem := &memory{}
	clock := time.Date(2026, 12, 3, 18, 0, 10, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	log := auditlog.New(mem, auditlog.Options{Queue: 20000, PerSource: 10, Sources: 5, Now: now})
	auth := log.Guard(gateway.SurfaceSupaCloud, denyAll{})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { log.Run(ctx); close(done) }()
	const bad = 10_000
	secret := "not-a-real-token-0123456789"
	for i := range bad {
		if i == bad/2 {
			mu.Lock()
			clock = clock.Add(time.Minute) // the next minute: each source gets its own rows again
			mu.Unlock()
		}
		r := httptest.NewRequest("POST", "/api/mcp", nil)
		r.RemoteAddr = fmt.Sprintf("10.0.0.%d:4000", i%7)
		r.Header.Set("Authorization", "Bearer "+secret+fmt.Sprint(i%3))
		if _, err := auth.Authenticate(r); gateway.ErrorCodeOf(err) != gateway.EUnauthenticated {
			t.Fatalf("the guard changed the answer: %v", err)
		}
	}
	stop()
	<-done
	rows := mem.all()
	// Per minute: 5 sources tracked one by one (10 rows + 1 aggregate
	// each), the other 2 in one aggregate "*".
	if max := 2 * (5*(10+1) + 1); len(rows) > max || len(rows) < 2*5*10 {
		t.Fatalf("%d rows for %d refused credentials; want between %d and %d", len(rows), bad, 2*5*10, max)
	}
	sources := map[string]int{}
	total := 0
	for _, ev := range rows {
		if ev.Kind != "auth" || ev.Status != gateway.AuditDenied || ev.Surface == "" && ev.Tool == "auth.refused" {
			t.Fatalf("row %+v: want kind auth, denied, with its surface", ev)
		}
		if strings.Contains(string(ev.Arguments), secret) || strings.Contains(ev.TokenFP, secret) {
			t.Fatalf("row %+v holds the token", ev)
		}
		var a struct {
			Source  string `json:"source"`
			Refused int    `json:"refused"`
		}
		if err := json.Unmarshal(ev.Arguments, &a); err != nil || a.Source == "" {
			t.Fatalf("row %+v names no source (%v)", ev, err)
		}
		switch ev.Tool {
		case "auth.refused":
			if len(ev.TokenFP) != 16 || ev.ReasonCodes[0] != "credential.rejected" {
				t.Fatalf("row %+v: want the token's fingerprint and reason", ev)
			}
			sources[a.Source]++
			total++
		case "auth.refused.aggregated":
			sources[a.Source] += a.Refused
			total += a.Refused
		default:
			t.Fatalf("unexpected row %+v", ev)
		}
	}
	if total != bad {
		t.Errorf("the rows account for %d refusals; want %d", total, bad)
	}
	for i := range 5 {
		if sources[fmt.Sprintf("10.0.0.%d", i)] == 0 {
			t.Errorf("source 10.0.0.%d is not named: %v", i, sources)
		}
	}
	if sources["*"] == 0 {
		t.Errorf("the sources beyond the bound have no row: %v", sources)
	}
}

// denyAll refuses every credential.
type denyAll struct{}

func (denyAll) Authenticate(*http.Request) (*gateway.Principal, error) {
	return nil, gateway.Errorf(gateway.EUnauthenticated, "API token not recognized")
}

// A refused JWT is named by its (unverified) sub and jti, an expired one
// gets its own reason code; a missing header has no fingerprint.
func TestRefusalOfNamesTheTokenNotItsValue(t *testing.T) {
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: "agent-7", ID: "jti-42"}).SignedString([]byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/api/mcp", nil)
	r.RemoteAddr = "192.0.2.9:5555"
	r.Header.Set("Authorization", "bearer "+tok)
	ref := auditlog.RefusalOf("cc_server", r, fmt.Errorf("session token: %w", jwt.ErrTokenExpired))
	if ref.Subject != "agent-7" || ref.JTI != "jti-42" || len(ref.Fingerprint) != 16 || ref.Source != "192.0.2.9" ||
		ref.Reason != "credential.expired" || ref.Surface != "cc_server" {
		t.Fatalf("refusal %+v", ref)
	}
	r.Header.Del("Authorization")
	ref = auditlog.RefusalOf("admin", r, errors.New("missing Authorization: Bearer header"))
	if ref.Fingerprint != "" || ref.Reason != "credential.missing" {
		t.Fatalf("refusal without a token %+v", ref)
	}
}

// A refused credential's row names the trace of its request, as a tool
// call's row does: the trace context the server read from the request's
// traceparent header into its context (the row's trace_id); a request
// without one gets a row without.
func TestRefusedCredentialNamesItsTrace(t *testing.T) {
	mem := &memory{}
	log := auditlog.New(mem, auditlog.Options{Queue: 10, PerSource: 10, Sources: 5})
	auth := log.Guard(gateway.SurfaceCCServer, denyAll{})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { log.Run(ctx); close(done) }()
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	traced := httptest.NewRequest("POST", "/mcp", nil)
	traced.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	traced = traced.WithContext(propagation.TraceContext{}.Extract(traced.Context(), propagation.HeaderCarrier(traced.Header)))
	for _, r := range []*http.Request{traced, httptest.NewRequest("POST", "/mcp", nil)} {
		if _, err := auth.Authenticate(r); gateway.ErrorCodeOf(err) != gateway.EUnauthenticated {
			t.Fatalf("the guard changed the answer: %v", err)
		}
	}
	stop()
	<-done
	rows := mem.all()
	if len(rows) != 2 || rows[0].TraceID != traceID || rows[1].TraceID != "" {
		t.Fatalf("rows %+v; want the traced refusal's with trace %s, then one without", rows, traceID)
	}
}

// Recording never blocks: events that find the queue full are counted
// into one row of their kind; a failed write is tried again.
func TestFullQueueIsCountedAndFailedWritesRetried(t *testing.T) {
	mem := &memory{fail: errors.New("database down")}
	failed := make(chan error, 100)
	log := auditlog.New(mem, auditlog.Options{Queue: 4, Failed: func(err error) {
		select {
		case failed <- err:
		default:
		}
	}})
	for i := range 10 {
		log.Record(&gateway.AuditEvent{Kind: "admin", Tool: fmt.Sprintf("profile.update.%d", i), Status: gateway.AuditAllowed})
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { log.Run(ctx); close(done) }()
	<-failed // the first write failed: the batch is kept
	mem.mu.Lock()
	mem.fail = nil
	mem.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for len(mem.all()) < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	<-done
	rows := mem.all()
	var kept, dropped int
	for _, ev := range rows {
		switch ev.Tool {
		case "audit.dropped":
			var a struct{ Dropped int }
			_ = json.Unmarshal(ev.Arguments, &a)
			dropped += a.Dropped
			if ev.Kind != "admin" {
				t.Errorf("dropped row of kind %q; want admin", ev.Kind)
			}
		default:
			kept++
		}
	}
	// The queue held 4; while the store failed, what waited was bounded
	// by the queue too (the oldest counted as dropped): every event is
	// either written or counted.
	if kept+dropped != 10 || dropped < 6 || kept < 3 {
		t.Fatalf("%d rows kept, %d counted as dropped (%d rows); want 10 in all, at least 6 dropped", kept, dropped, len(rows))
	}
}
