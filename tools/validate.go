package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// maxProblems caps how many argument problems one message lists, so a
// hostile argument object cannot make the error (and the audit row) huge.
const maxProblems = 8

// english renders the library's messages for kinds we do not phrase
// ourselves. A Printer is safe for concurrent use.
var english = message.NewPrinter(language.English)

// noArgs stands in for absent arguments: MCP lets a client omit them, which
// means an empty object.
var noArgs = map[string]any{}

// Validate checks args against the input schema of the tool called name.
// args must hold JSON values as encoding/json decodes them (map[string]any,
// []any, string, float64 or json.Number, bool, nil); other Go types are
// re-encoded through JSON first, which is slower. nil args mean {}.
//
// It returns nil when the arguments are valid, and otherwise a
// *gateway.Error with code EInvalid and ToolInput set (an input validation
// error: a tool execution error from protocol 2025-11-25 on, -32602
// before; docs/http.md, Errors) whose message names the tool and every
// failing field by JSON pointer, e.g. "invalid arguments for tool
// project.get: /project_id: missing required property". An unknown tool is
// EInvalid "unknown tool <name>: ..." without ToolInput.
func (c *Catalog) Validate(name string, args map[string]any) error {
	e, ok := c.byName[name]
	if !ok {
		return gateway.Errorf(gateway.EInvalid,
			"unknown tool %s: call tools/list for the tools this session can call", name)
	}
	var v any = args
	if args == nil {
		v = noArgs
	}
	err := e.schema.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) && hasInvalidValue(ve) {
		return e.validateReencoded(args)
	}
	return e.invalid(err)
}

// validateReencoded validates args after a JSON round trip, for callers
// that built the map from Go values ([]string, int structs, ...).
func (e *entry) validateReencoded(args map[string]any) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return inputError("invalid arguments for tool %s: they cannot be encoded as JSON (%v)", e.tool.Name, err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return inputError("invalid arguments for tool %s: they are not valid JSON (%v)", e.tool.Name, err)
	}
	if err := e.schema.Validate(doc); err != nil {
		return e.invalid(err)
	}
	return nil
}

// inputError is an input validation error: EInvalid with ToolInput set.
func inputError(format string, args ...any) *gateway.Error {
	e := gateway.Errorf(gateway.EInvalid, format, args...)
	e.ToolInput = true
	return e
}

// invalid turns a schema validation error into the input validation error
// callers see.
func (e *entry) invalid(err error) *gateway.Error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return inputError("invalid arguments for tool %s: %v", e.tool.Name, err)
	}
	probs := e.problems(ve)
	more := ""
	if len(probs) > maxProblems {
		more = fmt.Sprintf("; and %d more", len(probs)-maxProblems)
		probs = probs[:maxProblems]
	}
	return inputError("invalid arguments for tool %s: %s%s (the tool's inputSchema in tools/list shows what it accepts)",
		e.tool.Name, strings.Join(probs, "; "), more)
}

// problems flattens the error tree into sorted, unique "pointer: what"
// lines, one per failing field.
func (e *entry) problems(ve *jsonschema.ValidationError) []string {
	var out []string
	var walk func(*jsonschema.ValidationError)
	walk = func(n *jsonschema.ValidationError) {
		if len(n.Causes) == 0 {
			out = append(out, e.describe(n)...)
			return
		}
		for _, c := range n.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.Sort(out)
	return slices.Compact(out)
}

// describe phrases one leaf error. Errors about a property that is missing
// or not allowed point at that property, not at its parent object.
func (e *entry) describe(n *jsonschema.ValidationError) []string {
	loc := n.InstanceLocation
	switch k := n.ErrorKind.(type) {
	case *kind.Required:
		return each(loc, k.Missing, func(string) string { return "missing required property" })
	case *kind.DependentRequired:
		return each(loc, k.Missing, func(string) string {
			return fmt.Sprintf("missing property, required when %s is present", k.Prop)
		})
	case *kind.AdditionalProperties:
		return each(loc, k.Properties, func(string) string {
			if len(loc) == 0 && len(e.accepted) > 0 {
				return "unknown property; accepted: " + strings.Join(e.accepted, ", ")
			}
			return "unknown property"
		})
	default:
		return []string{pointer(loc) + ": " + phrase(n.ErrorKind)}
	}
}

// phrase says in plain words what is wrong with one value. Values are
// shortened so a huge argument does not end up in the message.
func phrase(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return "expected " + strings.Join(k.Want, " or ") + ", got " + k.Got
	case *kind.Enum:
		return "must be one of " + jsonList(k.Want) + ", got " + jsonValue(k.Got)
	case *kind.Minimum:
		return "must be at least " + k.Want.RatString() + ", got " + k.Got.RatString()
	case *kind.Maximum:
		return "must be at most " + k.Want.RatString() + ", got " + k.Got.RatString()
	case *kind.ExclusiveMinimum:
		return "must be greater than " + k.Want.RatString() + ", got " + k.Got.RatString()
	case *kind.ExclusiveMaximum:
		return "must be less than " + k.Want.RatString() + ", got " + k.Got.RatString()
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long, got %d", k.Want, k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long, got %d", k.Want, k.Got)
	case *kind.Pattern:
		return fmt.Sprintf("%s does not match the pattern %s", jsonValue(k.Got), k.Want)
	default:
		return k.LocalizedString(english)
	}
}

// each produces one line per named child property of the object at loc.
func each(loc, props []string, what func(string) string) []string {
	out := make([]string, 0, len(props))
	for _, p := range props {
		child := append(append(make([]string, 0, len(loc)+1), loc...), p)
		out = append(out, pointer(child)+": "+what(p))
	}
	return out
}

// pointerEscaper escapes one reference token (RFC 6901, section 3).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// pointer renders an instance location as an RFC 6901 JSON pointer; the
// whole arguments object is "/" for readability.
func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(t))
	}
	return b.String()
}

func jsonList(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = jsonValue(v)
	}
	return strings.Join(parts, ", ")
}

// jsonValue shows a value as JSON, shortened so a huge argument does not
// end up in the message.
func jsonValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	const keep = 60
	if len(b) > keep {
		return string(b[:keep]) + "…"
	}
	return string(b)
}

// hasInvalidValue reports whether validation failed because the arguments
// hold a Go value that is not a decoded JSON value.
func hasInvalidValue(ve *jsonschema.ValidationError) bool {
	if _, ok := ve.ErrorKind.(*kind.InvalidJsonValue); ok {
		return true
	}
	for _, c := range ve.Causes {
		if hasInvalidValue(c) {
			return true
		}
	}
	return false
}
