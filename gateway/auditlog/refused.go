package auditlog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpgate/mcpgate/gateway"
)

// Refusal is one refused credential (docs/operations.md, "Audit trail"): never the token
// itself, only its fingerprint (the first 16 hex characters of its
// SHA-256, as API token listings show) or, for a JWT whose claims are
// readable, its sub and jti.
type Refusal struct {
	// Surface is where it was presented (gateway.SurfaceSupaCloud,
	// gateway.SurfaceCCServer, "admin", "console").
	Surface string
	// Source is the client's address (the host of the request's
	// RemoteAddr): the unit of the flood bound.
	Source string
	// Reason is a stable code (ReasonOf).
	Reason string
	// Fingerprint, Subject and JTI identify the token where they can.
	Fingerprint, Subject, JTI string
	// TraceID is the trace the request belongs to (32 lowercase hex
	// digits), as a tool call's row names its trace: the trace context
	// of its traceparent header, which the server reads into the
	// request's context only when traces are on; "" without one.
	TraceID string
}

// Refused records r, one row each for the first Options.PerSource
// refusals of r.Source in a minute, then counted into one aggregated row
// per source (tool "auth.refused.aggregated") written once the minute
// is over; beyond Options.Sources sources in a minute, the others share
// one aggregated row (source "*"). So a flood writes at most
// Sources × (PerSource + 1) + 1 rows a minute, and every source is named.
func (l *Log) Refused(r Refusal) {
	if l == nil {
		return
	}
	now := l.opt.Now()
	if !l.fl.count(now, r, l.opt.PerSource, l.opt.Sources) {
		return
	}
	args, _ := json.Marshal(map[string]string{"source": r.Source, "jti": r.JTI})
	l.Record(&gateway.AuditEvent{Kind: "auth", Tool: "auth.refused", Time: now, Surface: r.Surface,
		Actor: r.Subject, TokenFP: r.Fingerprint, Status: gateway.AuditDenied,
		ReasonCodes: []string{r.Reason}, Arguments: args, TraceID: r.TraceID})
}

// flood counts refusals per source in the current minute.
type flood struct {
	mu     sync.Mutex
	minute time.Time
	seen   map[string]*tally // source -> this minute's count
	done   []*gateway.AuditEvent
}

// tally is one source's refusals in a minute: all of them (n), those
// beyond the bound (over) by surface and reason.
type tally struct {
	n, over int
	reasons map[string]int
}

// count counts r and reports whether it gets a row of its own.
func (f *flood) count(now time.Time, r Refusal, perSource, sources int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	minute := now.UTC().Truncate(time.Minute)
	if !minute.Equal(f.minute) {
		f.closeMinute()
		f.minute, f.seen = minute, map[string]*tally{}
	}
	src := r.Source
	t := f.seen[src]
	if t == nil {
		if len(f.seen) >= sources {
			src = "*"
			if t = f.seen[src]; t == nil {
				t = &tally{}
				f.seen[src] = t
			}
		} else {
			t = &tally{}
			f.seen[src] = t
		}
	}
	t.n++
	if src != "*" && t.n <= perSource {
		return true
	}
	t.over++
	if t.reasons == nil {
		t.reasons = map[string]int{}
	}
	t.reasons[r.Surface+":"+r.Reason]++
	return false
}

// closeMinute turns the current minute's tallies beyond the bound into
// aggregated rows (in done). f.mu is held.
func (f *flood) closeMinute() {
	srcs := make([]string, 0, len(f.seen))
	for s, t := range f.seen {
		if t.over > 0 {
			srcs = append(srcs, s)
		}
	}
	sort.Strings(srcs)
	for _, s := range srcs {
		t := f.seen[s]
		args, _ := json.Marshal(map[string]any{"source": s, "minute": f.minute, "refused": t.over, "by_reason": t.reasons})
		codes := make([]string, 0, len(t.reasons))
		for k := range t.reasons {
			codes = append(codes, k[strings.IndexByte(k, ':')+1:])
		}
		sort.Strings(codes)
		f.done = append(f.done, &gateway.AuditEvent{Kind: "auth", Tool: "auth.refused.aggregated",
			Time: f.minute.Add(time.Minute), Status: gateway.AuditDenied, ReasonCodes: slices.Compact(codes), Arguments: args})
	}
	f.seen = map[string]*tally{}
}

// ended returns the aggregated rows of the minutes over at now (and of
// the current one too when final).
func (f *flood) ended(now time.Time, final bool) []*gateway.AuditEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	if final || !now.UTC().Truncate(time.Minute).Equal(f.minute) {
		f.closeMinute()
	}
	out := f.done
	f.done = nil
	return out
}

// Authenticator is the surfaces' authenticator (mcp.Authenticator).
type Authenticator interface {
	Authenticate(r *http.Request) (*gateway.Principal, error)
}

// Guard wraps a: each EUnauthenticated refusal it returns is
// recorded (Refused) for surface, with the request's source and what can
// be read of its bearer token; the answer is a's, unchanged.
func (l *Log) Guard(surface string, a Authenticator) Authenticator {
	if l == nil {
		return a
	}
	return guard{l: l, surface: surface, a: a}
}

type guard struct {
	l       *Log
	surface string
	a       Authenticator
}

func (g guard) Authenticate(r *http.Request) (*gateway.Principal, error) {
	p, err := g.a.Authenticate(r)
	if err != nil && gateway.ErrorCodeOf(err) == gateway.EUnauthenticated {
		g.l.RefusedRequest(g.surface, r, err)
	}
	return p, err
}

// Span attributes of a refusal's span (refusalSpan), beside the HTTP or
// MCP ones of what was refused.
const (
	attrErrorType = "error.type"
	attrReason    = "mcpgate.refusal.reason"
	attrSurface   = "mcpgate.surface"
)

// refusalSpan records a refusal that happens before a call's span exists
// as a server span name of its own, a child of ctx's trace context (the
// client's traceparent, when it sent one) or else the root of a new
// trace, with status error, error.type errType, the reason code and
// attrs, and returns ctx with it, so the refusal's audit row names its
// trace. Without Options.Tracer (traces off) it returns ctx.
func (l *Log) refusalSpan(ctx context.Context, name, surface, errType, reason string, attrs ...attribute.KeyValue) context.Context {
	if l == nil || l.opt.Tracer == nil {
		return ctx
	}
	attrs = append(attrs, attribute.String(attrErrorType, errType), attribute.String(attrReason, reason), attribute.String(attrSurface, surface))
	ctx, span := l.opt.Tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	span.SetStatus(codes.Error, reason)
	span.End()
	return ctx
}

// traceOf is the trace id of ctx's span (32 lowercase hex digits), ""
// when it has none.
func traceOf(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return sc.TraceID().String()
	}
	return ""
}

// RefusalOf describes the refusal err of request r on surface: its
// source, reason code (ReasonOf), the trace of r's context when it has
// one, and the bearer token's fingerprint and, when it is a JWT, its
// unverified sub and jti (they identify what was presented; they are not
// trusted for anything).
func RefusalOf(surface string, r *http.Request, err error) Refusal {
	ref := Refusal{Surface: surface, Source: SourceOf(r), Reason: ReasonOf(err), TraceID: traceOf(r.Context())}
	scheme, tok, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if tok = strings.TrimSpace(tok); !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return ref
	}
	sum := sha256.Sum256([]byte(tok))
	ref.Fingerprint = hex.EncodeToString(sum[:])[:16]
	var claims jwt.RegisteredClaims
	if _, _, perr := jwt.NewParser().ParseUnverified(tok, &claims); perr == nil {
		ref.Subject, ref.JTI = clip(claims.Subject), clip(claims.ID)
	}
	return ref
}

// SourceOf is the host of r.RemoteAddr (r.RemoteAddr when it has no port).
func SourceOf(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// ReasonOf is a stable reason code for a refused credential:
// credential.missing (no bearer token), credential.expired,
// credential.malformed, credential.signature, or credential.rejected.
func ReasonOf(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return "credential.expired"
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "credential.malformed"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "credential.signature"
	}
	if m := err.Error(); strings.Contains(m, "missing") || strings.Contains(m, "no bearer") {
		return "credential.missing"
	}
	return "credential.rejected"
}

// clip bounds a claim read from an untrusted token.
func clip(s string) string {
	if len(s) > 128 {
		return s[:128]
	}
	return s
}

// RefusedRequest records the refusal err of request r on surface
// (RefusalOf, then Refused); admin.Auditor. With traces on, the refusal
// is a server span of its own, "{method} {path}" (refusalSpan, with the
// HTTP method, path and status 401), whose trace the row names.
func (l *Log) RefusedRequest(surface string, r *http.Request, err error) {
	if l == nil {
		return
	}
	ctx := l.refusalSpan(r.Context(), r.Method+" "+r.URL.Path, surface, "unauthenticated", ReasonOf(err),
		attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path),
		attribute.Int("http.response.status_code", http.StatusUnauthorized))
	l.Refused(RefusalOf(surface, r.WithContext(ctx), err))
}

// RefusedMethod returns the recorder of the requests surface refuses with
// -32601 before any policy is asked, because the endpoint does not serve
// their method (mcp.Options.RefusedMethod): one event of kind method each,
// with the caller as actor (its subject), its workspace, the method
// (clipped) as tool, status denied, reason method.not_found and, when
// traces are on, the trace of a server span named after the method
// (refusalSpan, a child of the request's trace context). nil for a nil
// Log.
func (l *Log) RefusedMethod(surface string) func(ctx context.Context, p *gateway.Principal, method string) {
	if l == nil {
		return nil
	}
	return func(ctx context.Context, p *gateway.Principal, method string) {
		tool := strings.ToValidUTF8(clip(method), "")
		ctx = l.refusalSpan(ctx, tool, surface, "-32601", "method.not_found", attribute.String("mcp.method.name", tool))
		ev := &gateway.AuditEvent{Kind: "method", Surface: surface, Tool: tool, Status: gateway.AuditDenied,
			ReasonCodes: []string{"method.not_found"}, TraceID: traceOf(ctx)}
		if p != nil {
			ev.Actor, ev.PrincipalKind, ev.WorkspaceID, ev.TaskID = p.Subject, p.Kind, p.WorkspaceID, p.TaskID
		}
		l.Record(ev)
	}
}
