// Package jsontest holds the reference readings of JSON that the
// transport's fuzz tests (gateway/mcp and gateway/mcp/jsonrpc) hold the
// code under test to: JSON objects decoded with exact member names through
// encoding/json, never through the structs the code under test uses. For
// tests only.
package jsontest

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// ParseSeeds are the seeds of the FuzzParseUnchanged targets: envelopes
// and params, the first a tools/call as the benchmarks send it.
var ParseSeeds = []string{
	`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"project.get","arguments":{"project_id":"p-123","include":["env","budget"],"limit":10}}}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list","\u0069d":2}`, `{"jsonrpc":"2.0","id":null,"method":"p\u0069ng"}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping"`, `[]`, `null`, `"x"`, ``, `{"jsonrpc":"2.0","id":7,"result":{}}`,
	`{"name":"x","arguments":{"a":1},"_meta":{"progressToken":1}}`, `{"name":7}`, `{"name":"\u00e9","Skipped":"s","-":"d","":"e"}`,
	`{"name":"x","arguments":[1],"_meta":[]}`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"requestId":3}`,
	"{\"name\":\"\xff\",\"method\":\"\xfe\"}", `{"name":"a","n\u0061me":"b","arguments":{}}`, `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{},"params":{}}`,
}

// Members decodes raw as a JSON object with exact member names (the last
// of duplicate names wins, as in encoding/json). ok is false when raw is
// not an object.
func Members(raw []byte) (map[string]json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil, false
	}
	return obj, true
}

// JSONString decodes raw as a JSON string.
func JSONString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// RepeatedMember returns the first of names that the JSON object raw
// holds more than once ("" when none, or when raw is not an object).
func RepeatedMember(raw []byte, names []string) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	seen := map[string]bool{}
	first := ""
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return ""
		}
		for _, n := range names {
			if n == name && n != "" && seen[n] && first == "" {
				first = n
			}
		}
		seen[name] = true
	}
	return first
}

// SameError reports whether a and b are both nil, or errors of one type
// with one text.
func SameError(a, b error) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error() && reflect.TypeOf(a) == reflect.TypeOf(b))
}
