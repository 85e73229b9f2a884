package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/canon"
	"github.com/mcpgate/mcpgate/gateway/mcp/jsonrpc"
	"github.com/mcpgate/mcpgate/gateway/mcp/sessionid"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// Tool is one tool as tools/list shows it (MCP Tool: name, title,
// description, inputSchema, annotations): a gateway.ListedTool in its wire
// shape (the same fields, so one converts to the other). An empty
// InputSchema is sent as {"type":"object"} because the field is required.
type Tool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations map[string]any  `json:"annotations,omitempty"`
}

// MarshalJSON encodes t in its MCP shape, defaulting an empty InputSchema.
func (t Tool) MarshalJSON() ([]byte, error) {
	type plain Tool
	if len(t.InputSchema) == 0 {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	return json.Marshal(plain(t))
}

// initializeResult is the InitializeResult of MCP basic/lifecycle.
type initializeResult struct {
	ProtocolVersion string         `json:"protocolVersion"`
	Capabilities    map[string]any `json:"capabilities"`
	ServerInfo      implementation `json:"serverInfo"`
	Instructions    string         `json:"instructions,omitempty"`
}

type implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type listToolsResult struct {
	Tools      []Tool `json:"tools"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// initialize validates the params of an initialize request and returns the
// result with the version negotiated among supported, and the client
// capabilities the gateway acts on.
func (t *Transport) initialize(params json.RawMessage, supported []string) (*initializeResult, sessionid.Caps, error) {
	var in struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
	}
	if err := decodeParams(params, &in); err != nil {
		return nil, 0, gateway.Errorf(gateway.EInvalid,
			`initialize params must be an object with a string "protocolVersion"%s`, typeProblem(err))
	}
	return &initializeResult{
		ProtocolVersion: negotiate(in.ProtocolVersion, supported),
		Capabilities:    map[string]any{"tools": map[string]any{"listChanged": true}, "logging": map[string]any{}},
		ServerInfo:      implementation{Name: t.opts.ServerName, Version: t.opts.ServerVersion},
		Instructions:    t.opts.Instructions,
	}, capsOf(in.Capabilities), nil
}

// capsOf reads the client capabilities the gateway acts on from an
// initialize request's capabilities object (wire.ElicitationModesOf:
// an empty elicitation object means form mode, the 2025-06-18 form; one
// naming only url does not). Capabilities it cannot read count as not
// declared: they never fail initialize, which they did not before the
// gateway used any.
func capsOf(raw json.RawMessage) sessionid.Caps {
	if form, _ := wire.ElicitationModesOf(raw); form {
		return sessionid.CapElicitForm
	}
	return 0
}

// listTools serves one page of the handler's tools (MCP server/utilities/
// pagination: opaque cursor, nextCursor while more remain, -32602 for an
// invalid cursor).
func (t *Transport) listTools(ctx context.Context, s *session, p *gateway.Principal, params json.RawMessage) (any, error) {
	var in struct {
		Cursor string `json:"cursor"`
	}
	if err := decodeParams(params, &in); err != nil {
		return nil, gateway.Errorf(gateway.EInvalid, `tools/list params must be an object with an optional string "cursor"%s`, typeProblem(err))
	}
	start, err := decodeCursor(in.Cursor)
	if err != nil {
		return nil, err
	}
	tools, err := t.opts.Handler.ListTools(ctx, p)
	if err != nil {
		return nil, err
	}
	if s != nil { // nil: a stateless request, whose client is told of changes by subscriptions/listen
		s.sawTools(toolSetHash(tools))
	}
	if start > len(tools) {
		return nil, errBadCursor
	}
	end := min(start+t.opts.PageSize, len(tools))
	res := &listToolsResult{Tools: make([]Tool, 0, end-start)}
	for _, tool := range tools[start:end] {
		res.Tools = append(res.Tools, Tool(tool))
	}
	if end < len(tools) {
		res.NextCursor = encodeCursor(end)
	}
	return res, nil
}

const cursorPrefix = "tools:"

var errBadCursor = gateway.Errorf(gateway.EInvalid,
	"invalid tools/list cursor; pass a nextCursor from an earlier tools/list, or no cursor to start over")

// encodeCursor makes the opaque cursor for the page starting at offset.
func encodeCursor(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.Itoa(offset)))
}

// decodeCursor returns the offset of a cursor; "" is the first page.
func decodeCursor(c string) (int, error) {
	if c == "" {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, errBadCursor
	}
	n, ok := strings.CutPrefix(string(raw), cursorPrefix)
	off, err := strconv.Atoi(n)
	// Only the cursor encodeCursor makes for off is off's cursor: no sign,
	// no leading zeros, no stray bits in the last base64 character.
	if !ok || err != nil || off < 0 || encodeCursor(off) != c {
		return 0, errBadCursor
	}
	return off, nil
}

// callTool parses tools/call params once and hands them to the handler,
// with the call's server-to-client paths (wire.Relay, wire.Elicitor)
// in its context: on a session its callRelay, on a stateless request its
// modernRelay. A refusal of the handler that the model should read
// becomes a tool execution error at the request's version (ToolError); any
// other error is returned, to be answered as a JSON-RPC error.
func (t *Transport) callTool(ctx context.Context, rq request) (any, error) {
	params := rq.m.Params
	var call *gateway.CallRequest
	var err error
	if mr := &rq.modern; mr.hasSplit { // a 2026-07-28 request, whose members checkModern has found
		call, err = buildCallParams(callParamsFrom(mr.split.Name, mr.split.Arguments, mr.split.Meta))
		if err == nil {
			call.Header = mr.header
		}
	} else {
		call, err = parseCallParams(params)
	}
	switch {
	case err != nil:
		// Still a tools/call: the handler audits it, then refuses it with err.
		call = &gateway.CallRequest{Name: readableName(params), Arguments: map[string]any{},
			RawArguments: json.RawMessage(`{}`), ArgumentsErr: err}
	case rq.s != nil:
		ctx = t.withCallRelay(ctx, rq.s, call, rq.stream)
	case rq.modern.version != "":
		ctx = wire.WithRelay(ctx, newModernRelay(&rq.modern, rq.stream))
	}
	res, err := t.opts.Handler.CallTool(ctx, rq.p, call)
	if err != nil {
		if te := ToolError(err, rq.version()); te != nil {
			t.log.Debug("mcp: tools/call refused", zap.String("request_id", gateway.RequestIDFrom(ctx)),
				zap.String("class", te.Meta[DenialMetaKey].Class), zap.String("code", te.Meta[DenialMetaKey].Code),
				zap.String("message", te.Content[0].Text))
			return te, nil
		}
		return nil, err
	}
	if res == nil {
		return nil, gateway.Errorf(gateway.EInternal, "tool %q returned no result", call.Name)
	}
	return normalizeResult(res)
}

// readableName returns params.name when params is an object with one
// string name, else "" (for the audit row of a malformed tools/call).
func readableName(params json.RawMessage) string {
	var v [1][]byte
	var name string
	if ok, repeated := jsonrpc.ReadMembers(params, []string{"name"}, v[:]); !ok || repeated != "" || json.Unmarshal(v[0], &name) != nil {
		return ""
	}
	return name
}

// parseCallParams reads {"name", "arguments", "_meta"}; anything malformed
// is -32602 naming the problem.
func parseCallParams(params json.RawMessage) (*gateway.CallRequest, error) {
	var in callParams
	return buildCallParams(in, decodeParams(params, &in))
}

// callParams are the members of tools/call params that parseCallParams
// reads.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      json.RawMessage `json:"_meta"`
}

// callParamsFrom is what decodeParams reads into callParams from params
// whose name, arguments and _meta members (raw, nil when absent) an
// earlier pass found, with its error for a name that is not a string.
func callParamsFrom(name, arguments, meta json.RawMessage) (in callParams, err error) {
	in.Arguments, in.Meta = arguments, meta
	if name == nil {
		return in, nil
	}
	var ok bool
	if in.Name, ok = jsonrpc.PlainString(name); ok { // decodeMember's fast path
		return in, nil
	}
	var slow string // a variable of its own: &slow escapes, in does not
	if err = json.Unmarshal(name, &slow); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			te.Field = strings.TrimSuffix("name."+te.Field, ".")
		}
	}
	in.Name = slow
	return in, err
}

// buildCallParams is parseCallParams after the members are read (err:
// decodeParams' error).
func buildCallParams(in callParams, err error) (*gateway.CallRequest, error) {
	if err == nil {
		err = checkMetaObject(in.Meta)
	}
	if err != nil {
		return nil, gateway.Errorf(gateway.EInvalid,
			`tools/call params must be an object with a string "name", an object "arguments" and an optional object "_meta"%s`, typeProblem(err))
	}
	if in.Name == "" {
		return nil, gateway.Errorf(gateway.EInvalid, `tools/call needs "name": the tool to call (see tools/list)`)
	}
	call := &gateway.CallRequest{Name: in.Name}
	if string(in.Meta) != "null" {
		call.Meta = in.Meta
	}
	raw := bytes.TrimSpace(in.Arguments)
	if len(raw) == 0 || string(raw) == "null" {
		call.Arguments, call.RawArguments = map[string]any{}, json.RawMessage(`{}`)
		return call, nil
	}
	// Malformed arguments still reach the handler (with ArgumentsErr set) so
	// that the call is audited like every other tools/call.
	call.RawArguments = raw
	if raw[0] != '{' {
		call.Arguments = map[string]any{}
		call.ArgumentsErr = gateway.Errorf(gateway.EInvalid, `arguments of tool %q must be a JSON object, got %s`, in.Name, jsonKind(raw[0]))
		return call, nil
	}
	v, err := canon.Decode(raw)
	var ce *canon.Error
	switch {
	case errors.As(err, &ce):
		call.ArgumentsErr = gateway.Errorf(gateway.EInvalid, "arguments of tool %q: %s", in.Name, ce)
	case err != nil:
		call.ArgumentsErr = gateway.Errorf(gateway.EInvalid, "arguments of tool %q are not a valid JSON object%s", in.Name, typeProblem(err))
	case !utf8.Valid(raw):
		call.ArgumentsErr = gateway.Errorf(gateway.EInvalid, "arguments of tool %q are not valid UTF-8; send JSON text in UTF-8", in.Name)
	default:
		call.Arguments = v.(map[string]any) // raw starts with '{'
	}
	if call.Arguments == nil {
		call.Arguments = map[string]any{}
	}
	return call, nil
}

// checkMetaObject accepts a "_meta" member that is absent, null or an
// object, and refuses any other JSON value with the error json.Unmarshal
// reports for it into a map (Field "_meta"), so that typeProblem names it.
func checkMetaObject(raw json.RawMessage) error {
	if len(raw) == 0 || raw[0] == '{' || string(raw) == "null" {
		return nil
	}
	var m map[string]json.RawMessage
	err := json.Unmarshal(raw, &m)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		te.Field = "_meta"
	}
	return err
}

// metaMember returns the value of member key of meta, a JSON object such
// as gateway.CallRequest.Meta (the last of repeated members, as encoding/json
// reads them), nil when meta has no such member or is not an object. The
// value shares meta's memory.
func metaMember(meta json.RawMessage, key string) json.RawMessage {
	var v json.RawMessage
	if len(meta) == 0 || meta[0] != '{' {
		return nil
	}
	canon.Members(meta, func(name, value []byte) {
		if string(name) == key {
			v = value
		}
	})
	return v
}

// decodeParams decodes optional params into v, a pointer to a struct whose
// fields are tagged with their member names; absent or null params leave v
// at its zero value. Member names are matched exactly, as MCP defines them
// (json.Unmarshal into the struct would also fill "name" from "NAME"), and
// a member named more than once is refused (jsonrpc.RepeatedMember).
func decodeParams(params json.RawMessage, v any) error {
	if len(params) == 0 || string(params) == "null" {
		return nil
	}
	if params[0] != '{' {
		return notObject(jsonKind(params[0]))
	}
	rv := reflect.ValueOf(v).Elem()
	names := paramNames(rv.Type())
	var buf [8][]byte // the member values, by field; on the stack
	values := buf[:0]
	if len(names) <= len(buf) {
		values = buf[:len(names)]
	} else {
		values = make([][]byte, len(names))
	}
	ok, repeated := jsonrpc.ReadMembers(params, names, values)
	if ok && repeated != "" {
		// Only for a whole object: bytes that are not JSON get the
		// syntax error, whichever member repeats before the defect.
		return jsonrpc.RepeatedMember(repeated)
	}
	if !ok {
		// Not one JSON object: encoding/json says why (or, should it take
		// what Members did not, reads the members).
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(params, &obj); err != nil {
			return err
		}
		for i, n := range names {
			values[i] = nil
			if raw, ok := obj[n]; ok && n != "" {
				values[i] = raw
			}
		}
	}
	for i, raw := range values {
		if raw == nil {
			continue
		}
		if err := decodeMember(raw, rv.Field(i)); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				te.Field = strings.TrimSuffix(names[i]+"."+te.Field, ".")
			}
			return err
		}
	}
	return nil
}

// paramTypes caches paramNames: reflect.Type → []string.
var paramTypes sync.Map

// paramNames returns the member name of each field of the struct type t,
// from its json tag; "" for a field no member fills.
func paramNames(t reflect.Type) []string {
	if names, ok := paramTypes.Load(t); ok {
		return names.([]string)
	}
	names := make([]string, t.NumField())
	for i := range names {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "-" {
			names[i] = name
		}
	}
	paramTypes.Store(t, names)
	return names
}

// decodeMember decodes one member's value raw into field as json.Unmarshal
// does, without its work for the common cases: a json.RawMessage field
// takes raw itself (which shares the request body's memory; nothing
// writes to either), a string field a JSON string without escapes.
func decodeMember(raw []byte, field reflect.Value) error {
	switch p := field.Addr().Interface().(type) {
	case *json.RawMessage:
		*p = raw
		return nil
	case *string:
		if s, ok := jsonrpc.PlainString(raw); ok {
			*p = s
			return nil
		}
	}
	return json.Unmarshal(raw, field.Addr().Interface())
}

// stringValue returns the value of raw when it is a JSON string (jsonrpc.PlainString
// without decoding when it can); ok is false for any other value.
func stringValue(raw []byte) (string, bool) {
	if s, ok := jsonrpc.PlainString(raw); ok {
		return s, true
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// typeProblem says, for a JSON decoding error, which field had which JSON
// type (": \"name\" is a number"), without Go's type names; "" when err
// says nothing a client can act on.
func typeProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if field := strings.TrimPrefix(te.Field, "."); field != "" {
			return fmt.Sprintf(": %q is %s", field, jsonValueKind(te.Value))
		}
		return fmt.Sprintf(": got %s", jsonValueKind(te.Value))
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf(": %s at byte %d", syn.Error(), syn.Offset)
	}
	var rep jsonrpc.RepeatedMember
	if errors.As(err, &rep) {
		return ": " + rep.Error()
	}
	var kind notObject
	if errors.As(err, &kind) {
		return ": " + kind.Error()
	}
	return ""
}

// notObject is decodeParams' error for params that are not an object; it
// holds the JSON kind they are.
type notObject string

func (k notObject) Error() string { return "got " + string(k) }

// jsonValueKind names the JSON kind in a json.UnmarshalTypeError's Value
// ("number", "string", "array", "object", "bool", "number 5").
func jsonValueKind(v string) string {
	switch {
	case strings.HasPrefix(v, "number"):
		return "a number"
	case v == "bool":
		return "a boolean"
	case v == "array" || v == "object":
		return "an " + v
	case v == "string":
		return "a string"
	}
	return v
}

// jsonKind names the JSON type that starts with b, for error messages.
func jsonKind(b byte) string {
	switch b {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// normalizeResult makes a handler's result valid MCP: content is always an
// array, and a result with only structuredContent also carries it as one
// text block (MCP 2025-06-18, server/tools, "Structured Content": servers
// SHOULD also return the serialized JSON in a TextContent block).
func normalizeResult(res *gateway.ToolResult) (*gateway.ToolResult, error) {
	if len(res.Content) > 0 {
		return res, nil
	}
	out := *res
	out.Content = []map[string]any{}
	if res.StructuredContent != nil {
		text, err := out.StructuredJSON()
		if err != nil {
			return nil, gateway.Wrap(gateway.EInternal, err, "tool result is not encodable as JSON")
		}
		out.Content = []map[string]any{{"type": "text", "text": string(text)}}
	}
	return &out, nil
}
