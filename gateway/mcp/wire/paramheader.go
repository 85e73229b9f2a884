package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ParamHeaderPrefix starts the header a tools/call carries for each
// x-mcp-header annotation of the tool's inputSchema (MCP 2026-07-28,
// basic/transports/streamable-http, "Custom Headers from Tool
// Parameters").
const ParamHeaderPrefix = "Mcp-Param-"

// ParamHeader is one x-mcp-header annotation of a tool's inputSchema: at
// protocol 2026-07-28 the argument at Path is mirrored into the HTTP
// header Mcp-Param-<Name> of every tools/call of the tool.
type ParamHeader struct {
	// Name is the annotation's value, e.g. "Region" for Mcp-Param-Region.
	Name string
	// Path is the chain of property names from the arguments object to
	// the mirrored value (one name for a top-level argument).
	Path []string
}

// Header is the HTTP header name of h: ParamHeaderPrefix + Name.
func (h ParamHeader) Header() string { return ParamHeaderPrefix + h.Name }

// Argument returns the value at h.Path in args (a tools/call's decoded
// arguments), false when it is absent or null: the header is then omitted
// (streamable-http: "If no value is present at that path in the call
// arguments, the header is omitted"; a null value counts as none).
func (h ParamHeader) Argument(args map[string]any) (any, bool) {
	var v any = args
	for _, name := range h.Path {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = obj[name]; !ok {
			return nil, false
		}
	}
	return v, v != nil
}

// ParamHeaders returns the x-mcp-header annotations of inputSchema, ordered
// by path; nil when it has none (also for an empty schema). It fails,
// naming the property, when an annotation breaks a rule of MCP 2026-07-28
// (server/tools, "x-mcp-header"): its value must be a non-empty HTTP token
// (RFC 9110 §5.1), unique among the schema's annotations regardless of
// case, on a property of type string, integer or boolean, reached from the
// schema root through "properties" keys only (never items, anyOf, $ref,
// ...). A client must leave a tool whose annotations fail out of its tool
// list; a schema that is not JSON fails too.
func ParamHeaders(inputSchema json.RawMessage) ([]ParamHeader, error) {
	if len(bytes.TrimSpace(inputSchema)) == 0 || !bytes.Contains(inputSchema, []byte(`"x-mcp-header"`)) {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(inputSchema))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("inputSchema is not JSON: %v", err)
	}
	w := &headerWalk{seen: map[string]string{}}
	w.schema(root, nil, true)
	if w.err != nil {
		return nil, w.err
	}
	slices.SortFunc(w.out, func(a, b ParamHeader) int { return slices.Compare(a.Path, b.Path) })
	return w.out, nil
}

// headerWalk finds the annotations of one schema.
type headerWalk struct {
	out  []ParamHeader
	seen map[string]string // lower-case name → the property that has it
	err  error
}

// dataKeywords hold JSON values, not schemas: an "x-mcp-header" member
// inside them is data.
var dataKeywords = map[string]bool{"const": true, "enum": true, "default": true, "examples": true}

// schema visits a schema node at path; reachable is false once the chain
// from the root left "properties" keys.
func (w *headerWalk) schema(node any, path []string, reachable bool) {
	switch n := node.(type) {
	case []any:
		for _, v := range n {
			w.schema(v, path, false)
		}
	case map[string]any:
		if raw, ok := n["x-mcp-header"]; ok {
			w.annotation(n, raw, path, reachable)
		}
		for k, v := range n {
			switch {
			case w.err != nil:
				return
			case dataKeywords[k] || k == "x-mcp-header":
			case k == "properties":
				props, ok := v.(map[string]any)
				if !ok {
					continue
				}
				for name, sub := range props {
					w.schema(sub, append(slices.Clip(path), name), reachable)
				}
			default:
				w.schema(v, path, false)
			}
		}
	}
}

// annotation checks one x-mcp-header member (raw) of the property schema
// prop at path.
func (w *headerWalk) annotation(prop map[string]any, raw any, path []string, reachable bool) {
	where := "the schema root"
	if len(path) > 0 {
		where = "property " + strings.Join(path, ".")
	}
	name, _ := raw.(string)
	switch {
	case !reachable || len(path) == 0:
		w.err = fmt.Errorf("x-mcp-header at %s is not reached from the schema root through properties keys only (not items, anyOf, oneOf, allOf, not, if/then/else or $ref)", where)
	case name == "" || !isToken(name):
		w.err = fmt.Errorf("x-mcp-header of %s must be a non-empty HTTP token (letters, digits and !#$%%&'*+-.^_`|~), got %v", where, raw)
	case !primitiveType(prop["type"]):
		w.err = fmt.Errorf("x-mcp-header of %s is on a property of type %v; only string, integer and boolean properties may be mirrored into a header", where, prop["type"])
	case w.seen[strings.ToLower(name)] != "":
		w.err = fmt.Errorf("x-mcp-header %q of %s repeats the one of property %s (names are compared regardless of case)", name, where, w.seen[strings.ToLower(name)])
	default:
		w.seen[strings.ToLower(name)] = strings.Join(path, ".")
		w.out = append(w.out, ParamHeader{Name: name, Path: slices.Clone(path)})
	}
}

// primitiveType reports whether a schema's "type" is string, integer or
// boolean, alone or with "null" (a nullable argument, whose null omits
// the header).
func primitiveType(t any) bool {
	ok := func(s any) bool { return s == "string" || s == "integer" || s == "boolean" }
	switch v := t.(type) {
	case string:
		return ok(v)
	case []any:
		n := 0
		for _, s := range v {
			if s == "null" {
				continue
			}
			if !ok(s) {
				return false
			}
			n++
		}
		return n == 1
	}
	return false
}

// isToken reports whether s is an HTTP token (RFC 9110 §5.6.2: 1*tchar).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// EncodeParamValue is the header value of an argument (string, bool or
// json.Number, as arguments decode) by the rules of MCP 2026-07-28
// (streamable-http, "Value Encoding"): a string as it is, an integer in
// decimal, a boolean as true or false; a value that is not plain visible
// ASCII with inner spaces and tabs, or that looks like the sentinel, as
// =?base64?<Base64 of its UTF-8>?=. ok is false for any other value
// (objects, arrays, numbers with a fraction), which no header carries.
func EncodeParamValue(v any) (string, bool) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case bool:
		s = fmt.Sprint(x)
	case json.Number:
		f, ok := parseNumber(string(x))
		if !ok || f != math.Trunc(f) || math.Abs(f) > maxSafeInteger {
			return "", false
		}
		return strconv.FormatInt(int64(f), 10), true
	default:
		return "", false
	}
	if needsSentinel(s) {
		return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=", true
	}
	return s, true
}

// needsSentinel reports whether s cannot be a plain header value: it has
// a character outside visible ASCII, space and tab, leading or trailing
// whitespace, or the shape of the sentinel itself.
func needsSentinel(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' {
		return true
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c > 0x7e {
			return true
		}
	}
	return strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?=")
}

// ParamValueMatches reports whether header, a decoded Mcp-Param-* value,
// stands for the argument v: equal text for a string, true or false for a
// boolean, and for a number the same value compared numerically (42.0
// matches 42; streamable-http, "Server Validation").
func ParamValueMatches(header string, v any) bool {
	switch x := v.(type) {
	case string:
		return header == x
	case bool:
		return header == fmt.Sprint(x)
	case json.Number:
		a, ok1 := parseNumber(string(x))
		b, ok2 := parseNumber(header)
		return ok1 && ok2 && a == b
	}
	return false
}

// maxSafeInteger is 2^53-1, the largest integer an x-mcp-header argument
// may hold (server/tools, "x-mcp-header"): every integer up to it is
// exact as a float64, so comparing float64 values compares the integers.
const maxSafeInteger = 1<<53 - 1

// parseNumber reads s, a JSON number or a header value standing for one
// (digits, sign, point, exponent only: no hexadecimal, Inf or NaN, which
// strconv.ParseFloat would also take).
func parseNumber(s string) (float64, bool) {
	if s == "" || strings.Trim(s, "0123456789+-.eE") != "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}
