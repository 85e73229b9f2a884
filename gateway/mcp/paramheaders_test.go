package mcp

import (
	"strings"
	"testing"
)

// TestModernParamHeaders: at 2026-07-28 a tools/call's Mcp-Param-* headers
// are checked against the arguments under the tool's x-mcp-header
// annotations (MCP 2026-07-28, streamable-http, "Server Behavior for
// Custom Headers"): presence, characters, Base64 sentinel, value by type;
// a failure is HTTP 400 with HeaderMismatch naming the header.
func TestModernParamHeaders(t *testing.T) {
	e := newEnv(t, nil)
	tests := []struct {
		name    string
		args    string
		headers map[string]string
		want    string // "" accepted, else a fragment of the -32020 message
	}{
		{"plain value", `{"region":"us-west1"}`, map[string]string{"Mcp-Param-Region": "us-west1"}, ""},
		{"header name in lower case", `{"region":"us-west1"}`, map[string]string{"mcp-param-region": "us-west1"}, ""},
		{"optional whitespace trimmed", `{"region":"us-west1"}`, map[string]string{"Mcp-Param-Region": "  us-west1\t"}, ""},
		{"valid Base64", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8=?="}, ""},
		{"non-ASCII as Base64", `{"region":"Hello, 世界"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8sIOS4lueVjA==?="}, ""},
		{"padded value as Base64", `{"region":" padded "}`, map[string]string{"Mcp-Param-Region": "=?base64?IHBhZGRlZCA=?="}, ""},
		{"without prefix a literal", `{"region":"SGVsbG8="}`, map[string]string{"Mcp-Param-Region": "SGVsbG8="}, ""},
		{"without suffix a literal", `{"region":"=?base64?SGVsbG8="}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8="}, ""},
		{"integer", `{"count":42}`, map[string]string{"Mcp-Param-Count": "42"}, ""},
		{"integer compared numerically", `{"count":42}`, map[string]string{"Mcp-Param-Count": "42.0"}, ""},
		{"boolean", `{"dry":false}`, map[string]string{"Mcp-Param-Dry-Run": "false"}, ""},
		{"nested property", `{"place":{"zone":"b"}}`, map[string]string{"Mcp-Param-Zone": "b"}, ""},
		{"null argument needs no header", `{"place":{"zone":null},"note":"x"}`, nil, ""},
		{"absent arguments need no header", `{"note":"x"}`, nil, ""},
		{"an unannotated header is ignored", `{"note":"x"}`, map[string]string{"Mcp-Param-Other": "anything"}, ""},

		{"missing header", `{"region":"test-value"}`, nil, "missing Mcp-Param-Region header"},
		{"missing nested header", `{"place":{"zone":"b"}}`, nil, "missing Mcp-Param-Zone header"},
		{"different value", `{"region":"us-west1"}`, map[string]string{"Mcp-Param-Region": "eu-west1"}, `header mismatch: Mcp-Param-Region header value "eu-west1"`},
		{"Base64 of a different value", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG9v?="}, "does not match"},
		{"Base64 without padding", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8?="}, "not valid Base64"},
		{"Base64 with foreign characters", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVs!!!bG8=?="}, "not valid Base64"},
		{"raw non-ASCII value", `{"region":"é"}`, map[string]string{"Mcp-Param-Region": "é"}, "invalid characters"},
		{"header without its argument", `{"note":"x"}`, map[string]string{"Mcp-Param-Region": "us-west1"}, "argument \"region\" is absent or null"},
		{"header for a null argument", `{"place":{"zone":null}}`, map[string]string{"Mcp-Param-Zone": "b"}, "absent or null"},
		{"other integer", `{"count":42}`, map[string]string{"Mcp-Param-Count": "43"}, "does not match"},
		{"integer header not a number", `{"count":42}`, map[string]string{"Mcp-Param-Count": "0x2a"}, "does not match"},
		{"boolean in another case", `{"dry":true}`, map[string]string{"Mcp-Param-Dry-Run": "True"}, "does not match"},
		{"a string is not a boolean", `{"dry":"true"}`, map[string]string{"Mcp-Param-Dry-Run": "true"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{headerName: "region"}
			for k, v := range tc.headers {
				h[k] = v
			}
			resp, r := e.modernPost("tools/call", `{"name":"region","arguments":`+tc.args+`,`+modernMeta+`}`, h)
			if tc.want == "" {
				if resp.StatusCode != 200 || r.Error != nil || !strings.Contains(string(r.Result), "called region") {
					t.Fatalf("want the call accepted: %d %s %+v", resp.StatusCode, r.Result, r.Error)
				}
				return
			}
			if resp.StatusCode != 400 || r.Error == nil || r.Error.Code != rpcHeaderMismatch || !strings.Contains(r.Error.Message, tc.want) ||
				string(r.ID) != "9" || r.Error.Data.Class != "Invalid" || r.Error.Data.Status != 400 {
				t.Fatalf("status %d, id %s, error %+v; want 400, id 9, -32020 naming %q", resp.StatusCode, r.ID, r.Error, tc.want)
			}
		})
	}
}

// TestParamHeadersSessionBased: the session-based versions have no
// Mcp-Param-* headers, so none is required there.
func TestParamHeadersSessionBased(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20251125)
	code, r := e.rpc(hdr{token: tokAlice, session: sid}, "tools/call", `{"name":"region","arguments":{"region":"us-west1"}}`)
	if code != 200 || r.Error != nil || !strings.Contains(string(r.Result), "called region") {
		t.Fatalf("2025-11-25 call without Mcp-Param-Region: %d %s %+v", code, r.Result, r.Error)
	}
}
