package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestParamHeaders: the x-mcp-header annotations of a schema and the rules
// of MCP 2026-07-28 (server/tools, "x-mcp-header") that make one invalid.
func TestParamHeaders(t *testing.T) {
	got, err := ParamHeaders(json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region","default":{"x-mcp-header":"data"}},
		"a":{"type":"object","properties":{"b":{"type":["integer","null"],"x-mcp-header":"B"}}},
		"x-mcp-header":{"type":"boolean"},
		"q":{"type":"string"}}}`))
	want := []ParamHeader{{Name: "B", Path: []string{"a", "b"}}, {Name: "Region", Path: []string{"region"}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParamHeaders = %+v, %v; want %+v", got, err, want)
	}
	if got[1].Header() != "Mcp-Param-Region" {
		t.Fatalf("Header() = %q", got[1].Header())
	}
	for _, empty := range []string{``, `{"type":"object"}`, `{"type":"object","properties":{"q":{"type":"string"}}}`} {
		if got, err := ParamHeaders(json.RawMessage(empty)); got != nil || err != nil {
			t.Fatalf("ParamHeaders(%s) = %+v, %v; want none", empty, got, err)
		}
	}
	invalid := map[string]string{
		"empty name":         `{"properties":{"r":{"type":"string","x-mcp-header":""}}}`,
		"not a token":        `{"properties":{"r":{"type":"string","x-mcp-header":"Re gion"}}}`,
		"control character":  `{"properties":{"r":{"type":"string","x-mcp-header":"R\r\nX: y"}}}`,
		"not a string":       `{"properties":{"r":{"type":"string","x-mcp-header":7}}}`,
		"repeated any case":  `{"properties":{"r":{"type":"string","x-mcp-header":"Region"},"s":{"type":"string","x-mcp-header":"REGION"}}}`,
		"number type":        `{"properties":{"r":{"type":"number","x-mcp-header":"R"}}}`,
		"object type":        `{"properties":{"r":{"type":"object","x-mcp-header":"R"}}}`,
		"no type":            `{"properties":{"r":{"x-mcp-header":"R"}}}`,
		"under items":        `{"properties":{"r":{"type":"array","items":{"type":"string","x-mcp-header":"R"}}}}`,
		"under anyOf":        `{"anyOf":[{"properties":{"r":{"type":"string","x-mcp-header":"R"}}}]}`,
		"under $defs":        `{"$defs":{"r":{"type":"string","x-mcp-header":"R"}},"properties":{"r":{"$ref":"#/$defs/r"}}}`,
		"under then":         `{"if":{},"then":{"properties":{"r":{"type":"string","x-mcp-header":"R"}}}}`,
		"on the schema root": `{"type":"string","x-mcp-header":"R"}`,
		"not JSON":           `{"properties":{"r":{"x-mcp-header":"R"`,
	}
	for name, schema := range invalid {
		if got, err := ParamHeaders(json.RawMessage(schema)); err == nil {
			t.Errorf("%s: ParamHeaders = %+v, want an error", name, got)
		} else if !strings.Contains(err.Error(), "x-mcp-header") && name != "not JSON" {
			t.Errorf("%s: error %q does not name x-mcp-header", name, err)
		}
	}
}

// TestEncodeParamValue: the encoding examples of MCP 2026-07-28
// (streamable-http, "Value Encoding"), and ParamValueMatches reading them
// back.
func TestEncodeParamValue(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{"us-west1", "us-west1"},
		{"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{" padded ", "=?base64?IHBhZGRlZCA=?="},
		{"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
		{"=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
		{"inner space", "inner space"},
		{json.Number("42"), "42"},
		{json.Number("-7"), "-7"},
		{json.Number("42.0"), "42"},
		{true, "true"},
		{false, "false"},
	} {
		got, ok := EncodeParamValue(tc.v)
		if !ok || got != tc.want {
			t.Errorf("EncodeParamValue(%#v) = %q, %v; want %q", tc.v, got, ok, tc.want)
		}
	}
	for _, v := range []any{json.Number("1.5"), json.Number("9007199254740993"), map[string]any{}, []any{"a"}, nil} {
		if got, ok := EncodeParamValue(v); ok {
			t.Errorf("EncodeParamValue(%#v) = %q; want no header value", v, got)
		}
	}
	if !ParamValueMatches("42.0", json.Number("42")) || ParamValueMatches("4.2e1x", json.Number("42")) ||
		ParamValueMatches("Inf", json.Number("1e999")) || !ParamValueMatches("false", false) || ParamValueMatches("False", false) {
		t.Fatal("ParamValueMatches compares numbers by value, booleans as true/false")
	}
}

// TestParamHeaderArgument: the value at an annotation's path, none for
// an absent or null one.
func TestParamHeaderArgument(t *testing.T) {
	h := ParamHeader{Name: "Zone", Path: []string{"place", "zone"}}
	if v, ok := h.Argument(map[string]any{"place": map[string]any{"zone": "b"}}); !ok || v != "b" {
		t.Fatalf("Argument = %v, %v", v, ok)
	}
	for _, args := range []map[string]any{{}, {"place": "flat"}, {"place": map[string]any{"zone": nil}}} {
		if v, ok := h.Argument(args); ok {
			t.Fatalf("Argument(%v) = %v, want none", args, v)
		}
	}
}
