package mcp

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestToolCallRefusals holds the one mapping of a tools/call handler's
// error to its reply (ToolError) at every protocol version of the
// Streamable HTTP endpoint: a refusal the model should read is HTTP 200
// with a result whose isError is true, whose only text is the gateway's
// message verbatim and whose _meta carries the denial; everything else
// stays a JSON-RPC error. The HTTP+SSE transport: TestLegacySSEMessages.
func TestToolCallRefusals(t *testing.T) {
	const (
		denyText   = "tool deny needs grant supacloud.ops.*"
		limitText  = "Rate limit exceeded for tool 'limit'"
		schemaText = "invalid arguments for tool schema: /project_id: missing required property"
		denyMeta   = `{"class":"Forbidden","status":403,"code":"allowlist_missing","decision_id":"dec-1","reasons":[{"code":"allowlist_missing","message":"profile lacks supacloud.ops.*"}]}`
		limitMeta  = `{"class":"Forbidden","status":403,"code":"rate_limit.exceeded","reasons":[{"code":"rate_limit.exceeded","message":"Rate limit exceeded for tool 'limit'"}],"bucket":"task"}`
		downText   = `upstream_down was not run: upstream "forge", which serves it, could not take the call (connection refused); try again later`
		downMeta   = `{"class":"Internal","status":503,"code":"upstream.unreachable","reasons":[{"code":"upstream.unreachable","message":"upstream_down was not run: upstream \"forge\", which serves it, could not take the call (connection refused); try again later"}]}`
		schemaMeta = `{"class":"Invalid","status":400,"code":"arguments.invalid","decision_id":"dec-2","reasons":[{"code":"arguments.invalid","message":"invalid arguments for tool schema: /project_id: missing required property"}]}`
	)
	type want struct {
		code       int    // JSON-RPC error code; 0: a tool execution error
		text, meta string // of the tool execution error
	}
	deny, limit := want{text: denyText, meta: denyMeta}, want{text: limitText, meta: limitMeta}
	down := want{text: downText, meta: downMeta}
	schemaResult, schemaRPC := want{text: schemaText, meta: schemaMeta}, want{code: -32602}
	tests := []struct {
		tool string
		want map[string]want // by protocol version
	}{
		{"deny", map[string]want{Version20250326: deny, Version20250618: deny, Version20251125: deny, Version20260728: deny}},
		{"limit", map[string]want{Version20250326: limit, Version20250618: limit, Version20251125: limit, Version20260728: limit}},
		{"schema", map[string]want{Version20250326: schemaRPC, Version20250618: schemaRPC, Version20251125: schemaResult, Version20260728: schemaResult}},
		{"invalid", map[string]want{Version20250326: {code: -32602}, Version20250618: {code: -32602}, Version20251125: {code: -32602}, Version20260728: {code: -32602}}},
		{"unknown", map[string]want{Version20250326: {code: -32601}, Version20250618: {code: -32601}, Version20251125: {code: -32601}, Version20260728: {code: -32601}}},
		{"upstream_down", map[string]want{Version20250326: down, Version20250618: down, Version20251125: down, Version20260728: down}},
		{"unavailable_unmarked", map[string]want{Version20250326: {code: -32603}, Version20250618: {code: -32603}, Version20251125: {code: -32603}, Version20260728: {code: -32603}}},
		{"internal", map[string]want{Version20250326: {code: -32603}, Version20250618: {code: -32603}, Version20251125: {code: -32603}, Version20260728: {code: -32603}}},
	}
	e := newEnv(t, nil)
	sessions := map[string]string{}
	for _, v := range []string{Version20250326, Version20250618, Version20251125} {
		sessions[v] = e.initialize(tokAlice, v)
	}
	for _, tc := range tests {
		for version, w := range tc.want {
			t.Run(tc.tool+"@"+version, func(t *testing.T) {
				var status int
				var r wireResp
				if version == Version20260728 {
					resp, mr := e.modernPost("tools/call", fmt.Sprintf(`{"name":%q,%s}`, tc.tool, modernMeta), map[string]string{headerName: tc.tool})
					status, r = resp.StatusCode, mr
				} else {
					status, r = e.rpc(hdr{token: tokAlice, session: sessions[version], version: version}, "tools/call", fmt.Sprintf(`{"name":%q}`, tc.tool))
				}
				if status != 200 {
					t.Fatalf("HTTP %d, want 200", status)
				}
				if w.code != 0 {
					if r.Error == nil || r.Error.Code != w.code || r.Result != nil {
						t.Fatalf("result %s error %+v, want JSON-RPC error %d", r.Result, r.Error, w.code)
					}
					return
				}
				if r.Error != nil {
					t.Fatalf("JSON-RPC error %+v, want a tool execution error", r.Error)
				}
				checkToolError(t, r.Result, w.text, w.meta)
			})
		}
	}
}

// checkToolError asserts that result is a tool execution error with one
// text block, text, and _meta["io.mcpgate/denial"] equal to meta.
func checkToolError(t *testing.T, result json.RawMessage, text, meta string) {
	t.Helper()
	var res struct {
		Content []struct{ Type, Text string } `json:"content"`
		IsError bool                          `json:"isError"`
		Meta    map[string]json.RawMessage    `json:"_meta"`
	}
	if err := json.Unmarshal(result, &res); err != nil {
		t.Fatalf("result %s: %v", result, err)
	}
	if !res.IsError || len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text != text {
		t.Fatalf("result %s, want isError true and the one text %q", result, text)
	}
	if got := string(res.Meta[DenialMetaKey]); got != meta {
		t.Fatalf("_meta[%q] = %s\nwant %s", DenialMetaKey, got, meta)
	}
}

func TestInputErrorsAreResults(t *testing.T) {
	for v, want := range map[string]bool{
		Version20241105: false, Version20250326: false, Version20250618: false,
		Version20251125: true, Version20260728: true, "": false,
	} {
		if got := versionOf(v).InputErrorsAsResults; got != want {
			t.Errorf("versionOf(%q).InputErrorsAsResults = %v, want %v", v, got, want)
		}
	}
}
