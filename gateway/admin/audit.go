package admin

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// Audit listing bounds (brief: limit 1..1000; gateway.AuditFilter default).
const (
	defaultAuditLimit = 100
	maxAuditLimit     = 1000
)

// auditParams are the query parameters GET /audit-events accepts.
var auditParams = []string{"workspace_id", "task_id", "tool", "status", "kind", "actor", "limit", "cursor"}

// auditStatuses are the values of gateway.AuditEvent.Status.
var auditStatuses = []string{gateway.AuditAllowed, gateway.AuditDenied, gateway.AuditError,
	gateway.AuditRateLimited, gateway.AuditConfirmationRequired}

// listAuditEvents: GET /audit-events?workspace_id=&task_id=&tool=&status=&kind=&actor=&limit=&cursor=
// → {"events":[…], "next_cursor":"…"} newest first. next_cursor is present
// when the page is full: pass it as cursor, with the same filters, for the
// events after the page. A read-only token caller sees only its own
// workspace.
func (h *handler) listAuditEvents(w http.ResponseWriter, r *http.Request) error {
	f, err := auditFilter(r.URL.Query())
	if err != nil {
		return err
	}
	if ws, ok := readerWorkspace(r.Context()); ok && f.WorkspaceID == "" {
		f.WorkspaceID = ws
	}
	if err := checkReader(r.Context(), f.WorkspaceID); err != nil {
		return err
	}
	events, err := h.store.ListAuditEvents(r.Context(), f)
	if err != nil {
		return err
	}
	if events == nil {
		events = []gateway.AuditEvent{}
	}
	out := map[string]any{"events": events}
	if len(events) == f.Limit {
		out["next_cursor"] = encodeCursor(gateway.PositionOf(&events[len(events)-1]))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// maxCursorMicros is 9999-12-31T23:59:59.999999Z in Unix microseconds: a
// cursor's time lies between 1970 and then, so that no store meets a time
// it cannot represent.
const maxCursorMicros = 253402300799999999

// encodeCursor makes the opaque cursor of a listing position: base64url of
// "<unix microseconds>.<id>" (audit times are kept to the microsecond).
func encodeCursor(p gateway.AuditPosition) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(p.Time.UnixMicro(), 10) + "." + strconv.FormatInt(p.ID, 10)))
}

// decodeCursor reads a cursor of encodeCursor.
func decodeCursor(s string) (gateway.AuditPosition, error) {
	bad := invalid("cursor %q is not one this API returned; pass next_cursor from the previous page unchanged, or leave cursor out to start from the newest event", clip(s))
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return gateway.AuditPosition{}, bad
	}
	us, id, ok := strings.Cut(string(raw), ".")
	t, err1 := strconv.ParseInt(us, 10, 64)
	n, err2 := strconv.ParseInt(id, 10, 64)
	if !ok || err1 != nil || err2 != nil || n <= 0 || t < 0 || t > maxCursorMicros {
		return gateway.AuditPosition{}, bad
	}
	p := gateway.AuditPosition{Time: time.UnixMicro(t).UTC(), ID: n}
	// Only the cursor encodeCursor writes for p is p's cursor: no signs,
	// no leading zeros, no stray bits in the last base64 character.
	if encodeCursor(p) != s {
		return gateway.AuditPosition{}, bad
	}
	return p, nil
}

// auditFilter parses and checks the query; every parameter may appear once.
func auditFilter(q url.Values) (gateway.AuditFilter, error) {
	f := gateway.AuditFilter{Limit: defaultAuditLimit}
	for key, vals := range q {
		if !slices.Contains(auditParams, key) {
			return f, invalid("unknown query parameter %q; accepted: %s", clip(key), strings.Join(auditParams, ", "))
		}
		if len(vals) > 1 {
			return f, invalid("query parameter %q is given %d times; give it once", key, len(vals))
		}
	}
	f.WorkspaceID, f.TaskID, f.Tool, f.Status = q.Get("workspace_id"), q.Get("task_id"), q.Get("tool"), q.Get("status")
	f.Kind, f.Actor = q.Get("kind"), q.Get("actor")
	if err := checkAuditValues(f); err != nil {
		return f, err
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxAuditLimit {
			return f, invalid("limit %q is not valid; use a whole number from 1 to %d", clip(s), maxAuditLimit)
		}
		f.Limit = n
	}
	if s := q.Get("cursor"); s != "" {
		p, err := decodeCursor(s)
		if err != nil {
			return f, err
		}
		f.Before = p
	}
	return f, nil
}

func checkAuditValues(f gateway.AuditFilter) error {
	if f.WorkspaceID != "" {
		if err := checkID("workspace_id", f.WorkspaceID); err != nil {
			return err
		}
	}
	if f.TaskID != "" {
		if err := checkID("task_id", f.TaskID); err != nil {
			return err
		}
	}
	if f.Tool != "" && !toolPattern.MatchString(f.Tool) {
		return invalid("tool %q is not a tool name; use a name such as \"workspace.info\"", clip(f.Tool))
	}
	if f.Status != "" && !slices.Contains(auditStatuses, f.Status) {
		return invalid("status %q is unknown; use one of %s", clip(f.Status), strings.Join(auditStatuses, ", "))
	}
	if f.Kind != "" && !slices.Contains(gateway.AuditKinds, f.Kind) {
		return invalid("kind %q is unknown; use one of %s", clip(f.Kind), strings.Join(gateway.AuditKinds, ", "))
	}
	if f.Actor != "" {
		// The actor as the row holds it: a tool call's is the principal's
		// subject, quoted with Go's escapes when it is not printable.
		return checkText("actor", f.Actor)
	}
	return nil
}
