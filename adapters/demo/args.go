package demo

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// request is one tool call as a handler sees it: the gateway's call plus
// the time it runs at (one clock reading per call, so every timestamp a
// write produces agrees).
type request struct {
	gateway.ToolCall
	now time.Time
	// known reports whether a tool name exists (permission.grant checks it).
	known func(tool string) bool
	// catalog lists every tool name, sorted (spec.get mcp_catalog).
	catalog []string
}

// missing returns the first name in required that has no usable value.
func (r *request) missing(required []string) string {
	for _, name := range required {
		v, ok := r.Arguments[name]
		if !ok || v == nil {
			return name
		}
		if s, isString := v.(string); isString && strings.TrimSpace(s) == "" {
			return name
		}
	}
	return ""
}

// str returns a string argument, "" when absent or not a string.
func (r *request) str(name string) string {
	s, _ := r.Arguments[name].(string)
	return strings.TrimSpace(s)
}

// has reports whether the argument is present and not null.
func (r *request) has(name string) bool {
	v, ok := r.Arguments[name]
	return ok && v != nil
}

// boolean returns a boolean argument, false when absent.
func (r *request) boolean(name string) bool {
	b, _ := r.Arguments[name].(bool)
	return b
}

// number returns a numeric argument and whether it was present. JSON
// numbers arrive as json.Number (every digit the client sent); float64 and
// Go integers, from calls built in Go, are accepted too.
func (r *request) number(name string) (float64, bool) {
	switch v := r.Arguments[name].(type) {
	case float64:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

// limit returns the "limit" argument clamped to [1, max], def when absent.
func (r *request) limit(def, max int) int {
	f, ok := r.number("limit")
	if !ok {
		return def
	}
	return int(math.Max(1, math.Min(float64(max), math.Floor(f))))
}

// object returns an object argument, an empty map when absent.
func (r *request) object(name string) map[string]any {
	if m, ok := r.Arguments[name].(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

// toolError is a refusal or a missing record: the caller sees it as an
// isError result whose text is msg, never as a protocol error. code is
// the gateway error code the refusal becomes outside a tool call (the
// human gates of HumanGates): EInvalid unless notFound or conflict made it.
type toolError struct {
	msg  string
	code gateway.ErrorCode
}

func (e *toolError) Error() string { return e.msg }

// refuse returns a toolError with a formatted message. Messages say what
// happened and what to do instead.
func refuse(format string, args ...any) error {
	return &toolError{msg: fmt.Sprintf(format, args...), code: gateway.EInvalid}
}

// conflict is refuse for a record whose state forbids the change (a gate
// already decided).
func conflict(format string, args ...any) error {
	return &toolError{msg: fmt.Sprintf(format, args...), code: gateway.EConflict}
}

// notFound is the answer for an id that does not exist in the caller's
// workspace, whether or not it exists elsewhere.
func notFound(kind, id string) error {
	return &toolError{msg: fmt.Sprintf("%s %s not found in this workspace", kind, id), code: gateway.ENotFound}
}

// list wraps items as {"<key>": items, "count": n}, the shape of every list
// tool.
func list[T any](key string, items []T) map[string]any {
	return map[string]any{key: items, "count": len(items)}
}
