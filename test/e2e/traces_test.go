package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcpgate/mcpgate/gateway"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes the real
// protobuf export requests and keeps every span with its service name.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []receivedSpan
}

type receivedSpan struct {
	service string
	*tracepb.Span
}

func newReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var export collectortrace.ExportTraceServiceRequest
		if req.URL.Path != "/v1/traces" || proto.Unmarshal(body, &export) != nil {
			http.Error(w, "want an OTLP/HTTP protobuf trace export on /v1/traces", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range export.ResourceSpans {
			service := ""
			for _, a := range rs.Resource.GetAttributes() {
				if a.Key == "service.name" {
					service = a.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					r.spans = append(r.spans, receivedSpan{service, s})
				}
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

// trace waits until the spans of traceID include one named name and
// returns them all.
func (r *otlpReceiver) trace(t *testing.T, traceID, name string) []receivedSpan {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var out []receivedSpan
		found := false
		r.mu.Lock()
		for _, s := range r.spans {
			if hex.EncodeToString(s.TraceId) == traceID {
				out = append(out, s)
				found = found || s.Name == name
			}
		}
		r.mu.Unlock()
		if found {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span %q of trace %s received within 10 s; got %d spans of it", name, traceID, len(out))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// span returns the span of spans named name.
func span(t *testing.T, spans []receivedSpan, name string) receivedSpan {
	t.Helper()
	for _, s := range spans {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no span %q among %v", name, names(spans))
	return receivedSpan{}
}

func names(spans []receivedSpan) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}

// children are the names of the spans of spans whose parent is p.
func children(spans []receivedSpan, p receivedSpan) []string {
	var out []string
	for _, s := range spans {
		if string(s.ParentSpanId) == string(p.SpanId) {
			out = append(out, s.Name)
		}
	}
	return out
}

// attrs are a span's string, bool and integer attributes as text.
func attrs(s receivedSpan) map[string]string {
	out := map[string]string{}
	for _, a := range s.Attributes {
		switch v := a.Value.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[a.Key] = v.StringValue
		case *commonpb.AnyValue_BoolValue:
			out[a.Key] = strconv.FormatBool(v.BoolValue)
		case *commonpb.AnyValue_IntValue:
			out[a.Key] = strconv.FormatInt(v.IntValue, 10)
		}
	}
	return out
}

// tracedPost posts body on s with header traceparent (none when "").
func tracedPost(t *testing.T, s *rawSession, traceparent, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Mcp-Session-Id", s.sid)
	req.Header.Set("MCP-Protocol-Version", s.version)
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	_, _ = io.ReadAll(resp.Body)
	return resp.StatusCode
}

// Trace contexts the client sends: 4bf92f… is the W3C example's trace.
const (
	allowedTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	refusedTrace  = "5bf92f3577b34da6a3ce929d0e0e4736"
	upstreamTrace = "6bf92f3577b34da6a3ce929d0e0e4736"
	listTrace     = "7bf92f3577b34da6a3ce929d0e0e4736"
	clientSpan    = "00f067aa0ba902b7"
)

func traceparent(traceID string) string { return "00-" + traceID + "-" + clientSpan + "-01" }

// TestTraces: with OTEL_EXPORTER_OTLP_ENDPOINT set, each tools/call is a
// server span named after the MCP semantic conventions, a child of the
// client's trace context (the HTTP traceparent, or params._meta's), with
// a child span per pipeline step and the decision as attributes; the
// decision log names the trace; an upstream receives the context in its
// headers and _meta, so its span is a child of the gateway's dispatch
// (docs/operations.md, "Traces"). Spans are sent as OTLP/HTTP protobuf to a receiver here.
func TestTraces(t *testing.T) {
	recv := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
	logFile := filepath.Join(t.TempDir(), "decisions.jsonl")
	g := startGateway(t, "sqlite:"+filepath.Join(t.TempDir(), "traces.db"), map[string]string{"MCPGATE_DECISION_LOG_FILE": logFile})
	seedFixtures(t, g)
	s := g.raw(t, g.token(t, "ws-a", "mia", "task-ws-a", "reader"))

	// An allowed call, its context in the HTTP header.
	if code := tracedPost(t, s, traceparent(allowedTrace), callBody("projects.list", `{}`)); code != http.StatusOK {
		t.Fatalf("allowed call: HTTP %d", code)
	}
	spans := recv.trace(t, allowedTrace, "tools/call projects.list")
	call := span(t, spans, "tools/call projects.list")
	a := attrs(call)
	if call.Kind != tracepb.Span_SPAN_KIND_SERVER || hex.EncodeToString(call.ParentSpanId) != clientSpan ||
		a["mcp.method.name"] != "tools/call" || a["gen_ai.tool.name"] != "projects.list" || a["mcp.session.id"] != s.sid ||
		a["mcp.protocol.version"] != protocolVersion || a["mcpgate.decision.allowed"] != "true" ||
		a["mcpgate.decision.id"] == "" || a["mcpgate.policy.revision"] == "" || a["mcpgate.audit.status"] != "allowed" {
		t.Fatalf("allowed call's span: kind %v parent %x attributes %v", call.Kind, call.ParentSpanId, a)
	}
	// The decision, the reservation and the dispatch are child spans; the
	// checks in memory are not, and neither is the approval step of a
	// call that needs no person.
	kids := children(spans, call)
	slices.Sort(kids)
	steps := strings.Join(kids, " ")
	if want := "mcpgate.confirmOrReserve mcpgate.decide mcpgate.dispatch"; steps != want {
		t.Errorf("allowed call's step spans %q; want %q", steps, want)
	}

	// A refused call, its context in params._meta (SEP-414) only.
	refused := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"app.deploy","arguments":{"app_id":"x"},"_meta":{"traceparent":"` + traceparent(refusedTrace) + `"}}}`
	if code := tracedPost(t, s, "", refused); code != http.StatusOK {
		t.Fatalf("refused call: HTTP %d", code)
	}
	spans = recv.trace(t, refusedTrace, "tools/call app.deploy")
	call = span(t, spans, "tools/call app.deploy")
	a = attrs(call)
	if hex.EncodeToString(call.ParentSpanId) != clientSpan || a["mcpgate.decision.allowed"] != "false" || a["mcpgate.decision.reason"] == "" ||
		a["mcpgate.audit.status"] != "denied" || call.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Fatalf("refused call's span: parent %x status %v attributes %v", call.ParentSpanId, call.Status, a)
	}
	steps = strings.Join(children(spans, call), " ")
	if !strings.Contains(steps, "mcpgate.decide") || strings.Contains(steps, "mcpgate.dispatch") {
		t.Errorf("refused call's step spans %q: want the decision and no dispatch", steps)
	}

	// tools/list is a server span too.
	if code := tracedPost(t, s, traceparent(listTrace), `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`); code != http.StatusOK {
		t.Fatalf("tools/list: HTTP %d", code)
	}
	list := span(t, recv.trace(t, listTrace, "tools/list"), "tools/list")
	if a := attrs(list); list.Kind != tracepb.Span_SPAN_KIND_SERVER || a["mcp.method.name"] != "tools/list" || a["mcp.session.id"] != s.sid {
		t.Fatalf("tools/list span: kind %v attributes %v", list.Kind, a)
	}

	// The decision log names each call's trace.
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(logFile)
		if strings.Contains(string(b), `"trace_id":"`+allowedTrace+`"`) && strings.Contains(string(b), `"trace_id":"`+refusedTrace+`"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("decision log without the calls' trace ids: %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// An upstream call: the upstream's span is a child of the dispatch.
	up, metaSeen := tracedUpstream(t, recv.URL)
	gu := startGateway(t, "sqlite:"+filepath.Join(t.TempDir(), "upstream.db"), map[string]string{
		"MCPGATE_UPSTREAM_URL": up, "MCPGATE_UPSTREAM_TIER": "read",
	})
	st, ctx := gu.app.Store, context.Background()
	must(t, st.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-a", Name: "Workspace ws-a", Slug: "ws-a"}))
	must(t, st.PutTask(ctx, &gateway.Task{WorkspaceID: "ws-a", ID: "task-ws-a", Status: gateway.TaskRunning}))
	must(t, st.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-a", UserID: "mia", Role: "member"}))
	must(t, st.PutProfile(ctx, &gateway.Profile{WorkspaceID: "ws-a", ID: "reader", Name: "reader", Allowlist: []string{"supacloud.read.*"}}))
	su := gu.raw(t, gu.token(t, "ws-a", "mia", "task-ws-a", "reader"))
	if code := tracedPost(t, su, traceparent(upstreamTrace), callBody("echo", `{}`)); code != http.StatusOK {
		t.Fatalf("upstream call: HTTP %d", code)
	}
	recv.trace(t, upstreamTrace, "upstream tools/call")
	spans = recv.trace(t, upstreamTrace, "tools/call echo") // the gateway's span ends last
	call = span(t, spans, "tools/call echo")
	dispatch, upstream := span(t, spans, "mcpgate.dispatch"), span(t, spans, "upstream tools/call")
	if string(dispatch.ParentSpanId) != string(call.SpanId) || string(upstream.ParentSpanId) != string(dispatch.SpanId) ||
		call.service != "mcpgate" || upstream.service != "upstream" {
		t.Fatalf("upstream trace: call %x, dispatch %x (parent %x), upstream span parent %x; services %s, %s",
			call.SpanId, dispatch.SpanId, dispatch.ParentSpanId, upstream.ParentSpanId, call.service, upstream.service)
	}
	if got := <-metaSeen; !strings.Contains(got, hex.EncodeToString(dispatch.SpanId)) || !strings.Contains(got, upstreamTrace) {
		t.Fatalf("the upstream's params._meta traceparent %q: want the dispatch span %x of trace %s", got, dispatch.SpanId, upstreamTrace)
	}
}

// tracedUpstream is an upstream MCP server (the official SDK) whose tool
// "echo" reports the traceparent of its params._meta, and whose HTTP
// handler records a span "upstream tools/call" for each tools/call,
// child of the traceparent header, exported to the receiver at otlp.
func tracedUpstream(t *testing.T, otlp string) (string, <-chan string) {
	t.Helper()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(otlp+"/v1/traces"))
	must(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("upstream"))))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tracer := tp.Tracer("upstream")
	meta := make(chan string, 1)
	s := sdk.NewServer(&sdk.Implementation{Name: "traced", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "echo", InputSchema: &jsonschema.Schema{Type: "object"}}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		tp, _ := req.Params.Meta["traceparent"].(string)
		select {
		case meta <- tp:
		default:
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo"}}}, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("traceparent") == "" { // the adapter's own requests (initialize, tools/list)
			h.ServeHTTP(w, r)
			return
		}
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, "upstream tools/call", trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		h.ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, meta
}

// auditTraces returns the trace_id of each audit row of tool in ws-a,
// newest first, as GET /admin/v1/audit-events lists them.
func auditTraces(t *testing.T, g *gatewayUnderTest, tool string) []string {
	t.Helper()
	return auditTracesOf(t, g, "workspace_id=ws-a&tool="+tool)
}

// auditTracesOf returns the trace_id of each audit row GET
// /admin/v1/audit-events lists for query, newest first.
func auditTracesOf(t *testing.T, g *gatewayUnderTest, query string) []string {
	t.Helper()
	status, body := adminDo(t, g, http.MethodGet, "/audit-events?"+query, "e2e-admin-token", "")
	var page struct{ Events []gateway.AuditEvent }
	if status != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil {
		t.Fatalf("GET /admin/v1/audit-events: HTTP %d %s", status, body)
	}
	out := make([]string, len(page.Events))
	for i, ev := range page.Events {
		out[i] = ev.TraceID
	}
	return out
}

// TestTracesInTheAuditTrail: with traces on, a call's audit row names the
// trace of the server span the gateway exported (trace_id in GET
// /admin/v1/audit-events), for a call the client traced in its HTTP
// header, one traced in params._meta and refused, and one the client did
// not trace (the gateway's span starts the trace), and a refused
// credential's row names the trace of its traceparent header, on both
// stores; with traces off a row has no trace id, whatever the client
// sent (docs/operations.md, "Traces").
func TestTracesInTheAuditTrail(t *testing.T) {
	recv := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			g := startGateway(t, dbURL(t), nil)
			seedFixtures(t, g)
			s := g.raw(t, g.token(t, "ws-a", "mia", "task-ws-a", "reader"))
			headerTrace, metaTrace := randomTrace(t), randomTrace(t)

			if code := tracedPost(t, s, traceparent(headerTrace), callBody("projects.list", `{}`)); code != http.StatusOK {
				t.Fatalf("allowed call: HTTP %d", code)
			}
			refused := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"app.deploy","arguments":{"app_id":"x"},"_meta":{"traceparent":"` + traceparent(metaTrace) + `"}}}`
			if code := tracedPost(t, s, "", refused); code != http.StatusOK {
				t.Fatalf("refused call: HTTP %d", code)
			}
			if code := tracedPost(t, s, "", callBody("projects.list", `{}`)); code != http.StatusOK {
				t.Fatalf("untraced call: HTTP %d", code)
			}

			lists := auditTraces(t, g, "projects.list")
			deploys := auditTraces(t, g, "app.deploy")
			if len(lists) != 2 || len(deploys) != 1 {
				t.Fatalf("audit rows: %d of projects.list, %d of app.deploy; want 2 and 1", len(lists), len(deploys))
			}
			for _, tc := range []struct{ note, audit, span string }{
				{"the header's trace", lists[1], "tools/call projects.list"},
				{"params._meta's trace", deploys[0], "tools/call app.deploy"},
				{"the gateway's own trace", lists[0], "tools/call projects.list"},
			} {
				if len(tc.audit) != 32 {
					t.Fatalf("%s: audit row trace_id %q, want 32 hex digits", tc.note, tc.audit)
				}
				call := span(t, recv.trace(t, tc.audit, tc.span), tc.span)
				if got := hex.EncodeToString(call.TraceId); got != tc.audit {
					t.Errorf("%s: the exported span's trace %s, the audit row's %s", tc.note, got, tc.audit)
				}
			}
			if lists[1] != headerTrace || deploys[0] != metaTrace || lists[0] == headerTrace || lists[0] == metaTrace {
				t.Errorf("audit trace ids %v %v: want %s (header), %s (_meta) and a new one", lists, deploys, headerTrace, metaTrace)
			}

			refusedTrace := refuseTraced(t, s)
			if refused := refusedTraces(t, g); len(refused) != 1 || refused[0] != refusedTrace {
				t.Errorf("refused credentials' audit trace ids %q; want one, %s (its header's)", refused, refusedTrace)
			}
			// Refused before a call's span exists, without a traceparent:
			// the refusal is a span of its own, which its row names.
			bad := *s
			bad.token = "not-a-token"
			if code := tracedPost(t, &bad, "", callBody("projects.list", `{}`)); code != http.StatusUnauthorized {
				t.Fatalf("a call with an unknown token: HTTP %d, want 401", code)
			}
			var auths []string
			waitFor(t, "the second refused credential's audit row", func() bool {
				auths = auditTracesOf(t, g, "kind=auth&tool=auth.refused")
				return len(auths) == 2
			})
			own := span(t, recv.trace(t, auths[0], "POST /mcp"), "POST /mcp")
			if a := attrs(own); own.Kind != tracepb.Span_SPAN_KIND_SERVER || len(own.ParentSpanId) != 0 || a["error.type"] != "unauthenticated" ||
				a["mcpgate.refusal.reason"] == "" || a["http.response.status_code"] != "401" {
				t.Errorf("the untraced refused credential's span: kind %v parent %x attributes %v", own.Kind, own.ParentSpanId, a)
			}
			if code := tracedPost(t, s, "", `{"jsonrpc":"2.0","id":10,"method":"prompts/list"}`); code != http.StatusOK {
				t.Fatalf("prompts/list: HTTP %d", code)
			}
			var methods []string
			waitFor(t, "the refused method's audit row", func() bool {
				methods = auditTracesOf(t, g, "kind=method")
				return len(methods) == 1
			})
			if len(methods[0]) != 32 {
				t.Fatalf("the refused method's audit row has trace_id %q, want 32 hex digits", methods[0])
			}
			if m := span(t, recv.trace(t, methods[0], "prompts/list"), "prompts/list"); attrs(m)["mcp.method.name"] != "prompts/list" || attrs(m)["error.type"] != "-32601" {
				t.Errorf("the refused method's span: attributes %v", attrs(m))
			}
		})
	}

	t.Run("off", func(t *testing.T) {
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
		g := startGateway(t, "sqlite:"+filepath.Join(t.TempDir(), "off.db"), nil)
		seedFixtures(t, g)
		s := g.raw(t, g.token(t, "ws-a", "mia", "task-ws-a", "reader"))
		if code := tracedPost(t, s, traceparent(randomTrace(t)), callBody("projects.list", `{}`)); code != http.StatusOK {
			t.Fatalf("call: HTTP %d", code)
		}
		if got := auditTraces(t, g, "projects.list"); len(got) != 1 || got[0] != "" {
			t.Fatalf("audit trace ids with traces off: %q, want one row without", got)
		}
		refuseTraced(t, s)
		if refused := refusedTraces(t, g); len(refused) != 1 || refused[0] != "" {
			t.Fatalf("refused credentials' audit trace ids with traces off: %q, want one row without", refused)
		}
	})
}

// refuseTraced posts a tools/call of s's session with a token the
// gateway does not know and a fresh traceparent header, which it must
// refuse (HTTP 401); it returns the header's trace id.
func refuseTraced(t *testing.T, s *rawSession) string {
	t.Helper()
	bad := *s
	bad.token = "not-a-token"
	id := randomTrace(t)
	if code := tracedPost(t, &bad, traceparent(id), callBody("projects.list", `{}`)); code != http.StatusUnauthorized {
		t.Fatalf("a call with an unknown token: HTTP %d, want 401", code)
	}
	return id
}

// refusedTraces waits for the refused credentials' audit rows (written
// off the request path) and returns their trace ids, newest first.
func refusedTraces(t *testing.T, g *gatewayUnderTest) []string {
	t.Helper()
	var out []string
	waitFor(t, "the refused credential's audit row", func() bool {
		out = auditTracesOf(t, g, "kind=auth&tool=auth.refused")
		return len(out) > 0
	})
	return out
}

// randomTrace is a fresh W3C trace id (32 hex digits).
func randomTrace(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	_, err := rand.Read(b)
	must(t, err)
	return hex.EncodeToString(b)
}
