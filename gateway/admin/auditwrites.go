package admin

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpgate/mcpgate/gateway"
)

// Auditor records the audit events of the admin API (docs/operations.md, "Audit trail"):
// every write, and every refused credential. The server passes its
// auditlog.Log; both methods return at once and never fail the request.
type Auditor interface {
	// Record queues one event (kind admin, token, approval or policy).
	Record(ev *gateway.AuditEvent)
	// RefusedRequest records the refused credential of r (err is the
	// EUnauthenticated refusal) on surface.
	RefusedRequest(surface string, r *http.Request, err error)
}

// AuditSurface is the surface named by the admin API's refused
// credentials.
const AuditSurface = "admin"

// maxAuditBody bounds the before and after an admin write's event keeps
// of each (a larger resource is recorded as truncated, not in part).
const maxAuditBody = 16 << 10

// audited serves a write r (any method but GET and HEAD) of the
// authenticated caller and records it: actor (the admin token, or the
// signed-in person of a console session), the resource (method and
// path), the outcome, and before and after as the API's own GET of the
// path answers them (the event's tool is the method and path; for a POST, the answer minus any secret value:
// a created token's value is never kept).
func (h *handler) audited(w http.ResponseWriter, r *http.Request) {
	before := h.readBack(r)
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	h.router.ServeHTTP(rec, r)
	detail := map[string]any{}
	if before != nil {
		detail["before"] = before
	}
	if rec.status < 300 {
		if r.Method == http.MethodPost {
			if after := withoutSecrets(rec.body.Bytes()); after != nil {
				detail["after"] = after
			}
		} else if after := h.readBack(r); after != nil {
			detail["after"] = after
		}
	}
	args, err := json.Marshal(detail)
	if err != nil {
		args = nil
	}
	status := gateway.AuditAllowed
	switch {
	case rec.status >= 500:
		status = gateway.AuditError
	case rec.status >= 400:
		status = gateway.AuditDenied
	}
	ws, _ := readerWorkspace(r.Context())
	if wa, ok := workspaceAdminOf(r.Context()); ok {
		ws = wa.workspaceID
	}
	if ws == "" {
		ws = pathWorkspace(r.URL.Path)
	}
	if ws == "" {
		// A resource outside /workspaces/{ws} that belongs to one (an API
		// token) names it in its own reply.
		ws = workspaceOf(before)
	}
	ev := &gateway.AuditEvent{Kind: writeKind(r.URL.Path), Actor: actorOf(r), WorkspaceID: ws,
		Tool: r.Method + " " + r.URL.Path, Status: status, Surface: AuditSurface, Arguments: args,
		ReasonCodes: []string{"http." + strconv.Itoa(rec.status)}}
	// The trace the write was made in (traces on, a traceparent or the
	// router's own span), as a tool call's row names its trace.
	if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() {
		ev.TraceID = sc.TraceID().String()
	}
	h.opts.Audit.Record(ev)
}

// workspaceOf is the workspace_id member of the JSON object b, "" when b
// has none.
func workspaceOf(b json.RawMessage) string {
	var v struct {
		WorkspaceID string `json:"workspace_id"`
	}
	if len(b) == 0 || json.Unmarshal(b, &v) != nil {
		return ""
	}
	return v.WorkspaceID
}

// readBack is the API's GET of r's path as the caller would get it (nil
// when the path has no GET, the resource does not exist, or it is larger
// than maxAuditBody).
func (h *handler) readBack(r *http.Request) json.RawMessage {
	get := r.Clone(r.Context())
	get.Method, get.Body, get.ContentLength = http.MethodGet, http.NoBody, 0
	rec := httptest.NewRecorder()
	h.router.ServeHTTP(rec, get)
	if rec.Code != http.StatusOK || rec.Body.Len() > maxAuditBody || !json.Valid(rec.Body.Bytes()) {
		return nil
	}
	return withoutSecrets(rec.Body.Bytes())
}

// secretKeys are the JSON keys whose values an audit event never keeps.
var secretKeys = []string{"token", "value", "secret", "password", "client_secret"}

// withoutSecrets is the JSON b with the values of secretKeys replaced by
// "[redacted]" at any depth; nil for a body that is not JSON or too large.
func withoutSecrets(b []byte) json.RawMessage {
	if len(b) == 0 || len(b) > maxAuditBody {
		return nil
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return nil
	}
	out, err := json.Marshal(redact(v))
	if err != nil {
		return nil
	}
	return out
}

func redact(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if containsFold(secretKeys, k) {
				t[k] = "[redacted]"
			} else {
				t[k] = redact(x)
			}
		}
	case []any:
		for i, x := range t {
			t[i] = redact(x)
		}
	}
	return v
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// writeKind is the audit kind of a write to path: token for API tokens,
// approval for approvals and human gates, policy for the policy reload,
// upstream for decisions on quarantined bridged tools, admin for the rest.
func writeKind(path string) string {
	switch {
	case strings.Contains(path, "/api-tokens"):
		return "token"
	case strings.Contains(path, "/approvals") || strings.Contains(path, "/gates"):
		return "approval"
	case strings.HasPrefix(path, Prefix+"/policy"):
		return "policy"
	case strings.HasPrefix(path, Prefix+"/upstreams"):
		return gateway.AuditKindUpstream
	}
	return "admin"
}

// pathWorkspace is the {ws} of a /workspaces/{ws}/… path, or "".
func pathWorkspace(path string) string {
	rest, ok := strings.CutPrefix(path, Prefix+"/workspaces/")
	if !ok {
		return ""
	}
	ws, _, _ := strings.Cut(rest, "/")
	return ws
}

// actorOf names who made an authenticated request: the signed-in person
// of a console session, "admin-token" for the admin token.
func actorOf(r *http.Request) string {
	if wa, ok := workspaceAdminOf(r.Context()); ok {
		return wa.userID
	}
	return "admin-token"
}

// recorder passes a response through and keeps its status and (up to
// maxAuditBody) its body.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	wrote  bool
}

func (rc *recorder) WriteHeader(code int) {
	if !rc.wrote {
		rc.status, rc.wrote = code, true
	}
	rc.ResponseWriter.WriteHeader(code)
}

func (rc *recorder) Write(b []byte) (int, error) {
	rc.wrote = true
	if rc.body.Len()+len(b) <= maxAuditBody {
		rc.body.Write(b)
	}
	return rc.ResponseWriter.Write(b)
}

// Flush lets a streamed answer through (http.Flusher).
func (rc *recorder) Flush() {
	if f, ok := rc.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
