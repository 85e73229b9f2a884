package wire

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/gateway"
)

// CheckParamHeaders checks a 2026-07-28 tools/call's Mcp-Param-* headers
// (call.Header) against its arguments under the x-mcp-header annotations
// of inputSchema, the called tool's (MCP 2026-07-28, basic/transports/
// streamable-http, "Server Behavior for Custom Headers" and "Server
// Validation"). For each annotation:
//   - an argument that is present and not null needs its header
//     (Mcp-Param-<name>, the name compared regardless of case);
//   - the header must hold visible ASCII, spaces and tabs only, be sent
//     once (or repeated with one value), and a =?base64?…?= value must be
//     valid padded Base64 of UTF-8 text, decoded before it is compared;
//   - the value must equal the argument: the same text for a string,
//     true or false for a boolean, the same number for an integer (42.0
//     matches 42);
//   - a header whose argument is absent or null is refused as well.
//
// Headers that no annotation names are ignored (and never forwarded as
// such: the upstream adapter writes its own from the arguments).
//
// It returns nil for a call of the session-based versions, which have no
// such headers (call.Header nil), and for a call whose params the
// transport could not parse (ArgumentsErr refuses it). A failure is a
// *gateway.Error of class EInvalid (the audit row's error class) that the
// transport answers with HTTP 400 and JSON-RPC HeaderMismatch (-32020),
// its message naming the header and what to send. An inputSchema whose
// annotations break the specification's rules fails closed, as an
// internal error: such a tool is not one a 2026-07-28 client may call.
//
// The pipeline calls it once the caller may call the tool, before it
// validates the arguments: a caller the policy refuses learns nothing of
// the tool's schema, its annotations included.
func CheckParamHeaders(call *gateway.CallRequest, inputSchema json.RawMessage) error {
	if call == nil || call.Header == nil || call.ArgumentsErr != nil {
		return nil
	}
	bindings, err := ParamHeaders(inputSchema)
	if err != nil {
		return gateway.Wrap(gateway.EInternal, err, "tool "+Quote(call.Name)+" has an inputSchema whose x-mcp-header annotations are invalid, so it cannot be called at protocol 2026-07-28; the gateway logged the cause")
	}
	for _, b := range bindings {
		if err := checkParamHeader(http.Header(call.Header), b, call.Arguments); err != nil {
			return err
		}
	}
	return nil
}

// checkParamHeader checks the header of one annotation b against args.
func checkParamHeader(h http.Header, b ParamHeader, args map[string]any) error {
	name, arg := b.Header(), strings.Join(b.Path, ".")
	value := h.Values(name) // matched regardless of case, as net/http canonicalizes names
	v, hasArg := b.Argument(args)
	if len(value) == 0 {
		if _, encodable := EncodeParamValue(v); hasArg && encodable {
			return errParamHeader("missing %s header; the tool mirrors argument %q into it (x-mcp-header in its inputSchema, see tools/list), so a tools/call at protocol 2026-07-28 that sets the argument must send it", name, arg)
		}
		return nil // an argument no header can carry is the schema's to refuse
	}
	raw, ok := TrimmedValue(value)
	if !ok {
		return errParamHeader("header %s has invalid characters or is repeated with different values; send the argument once, Base64-encoded as =?base64?…?= when it is not plain ASCII", name)
	}
	decoded, ok := DecodeSentinel(raw)
	if !ok {
		return errParamHeader("header %s %q is not valid Base64 (=?base64?…?=, with padding) of UTF-8 text", name, raw)
	}
	if !hasArg {
		return errParamHeader("header mismatch: %s header is sent but argument %q is absent or null; omit the header, or send the argument", name, arg)
	}
	if !ParamValueMatches(decoded, v) {
		body, _ := json.Marshal(v)
		return errParamHeader("header mismatch: %s header value %q does not match argument %q %s", name, decoded, arg, body)
	}
	return nil
}

// TrimmedValue is the rule for a standard header's values (RFC 9110 §5.5):
// optional whitespace trimmed; false for characters outside visible
// ASCII, space and tab, or for repeats with different values. vals must
// not be empty.
func TrimmedValue(vals []string) (string, bool) {
	v := strings.Trim(vals[0], " \t")
	for _, other := range vals[1:] {
		if strings.Trim(other, " \t") != v {
			return "", false
		}
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c > 0x7e {
			return "", false
		}
	}
	return v, true
}

// DecodeSentinel decodes "=?base64?<Base64>?=" (MCP 2026-07-28,
// streamable-http, "Value Encoding"); any other value is itself. ok is
// false for a sentinel that is not padded Base64 of UTF-8 text.
func DecodeSentinel(v string) (string, bool) {
	inner, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, true
	}
	inner, ok = strings.CutSuffix(inner, "?=")
	if !ok {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(inner)
	if err != nil || !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}

// errParamHeader is the refusal of a call's Mcp-Param-* header: EInvalid
// for the pipeline and the audit row, answered as HTTP 400 with
// HeaderMismatch (-32020).
func errParamHeader(format string, args ...any) error {
	pe := ErrHeaderMismatch(format, args...)
	return &gateway.Error{Code: gateway.EInvalid, Message: pe.Msg, Err: pe}
}

// Quote is s as a JSON string.
func Quote(s string) string { b, _ := json.Marshal(s); return string(b) }
