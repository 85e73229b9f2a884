package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// seeds are JSON texts the fuzz targets start from: the shapes tool
// arguments take, every escape, non-UTF-8 bytes, and near misses of
// valid JSON.
var seeds = []string{
	`{"project_id":"p-123","include":["env","budget"],"limit":10}`,
	`{}`, `[]`, `{"a":{}}`, `[[],{}]`, `"x"`, `1`, `-0.5e-3`, `true`, `false`, `null`,
	` { "b" : 1.0 , "a" : [ 1e0 , -0 , 0.1 ] } `,
	`{"n":9007199254740993,"m":1E400,"z":0e999999}`,
	`{"s":"\u00e9\ud83d\ude00\ud800\"\\\/\b\f\n\r\t"}`,
	"{\"s\":\"\xff\xfe\",\"\xed\xa0\x80\":1}",
	`{"a":1,"a":2}`, `{"\u0061":1,"a":2}`, `{"x":[{"k":1,"k":1}]}`,
	`{"n":1e401}`, `{"n":1` + strings.Repeat("0", 100) + `}`,
	`{"a":1} {}`, `{"a":}`, `{"a" 1}`, `{"a":1,}`, `[1,]`, `[01]`, `[1.]`, `[1e]`, `[-]`, `{"a":tru}`,
	"{\"a\":\"\x01\"}", `{"a":"\x"}`, `{"a":"\u12"}`, ``, ` `, `{`, `"`,
	`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"project.get","arguments":{"limit":10}}}`,
}

// FuzzDecode: Decode answers every input exactly as encoding/json's token
// stream (decodeTokens) does, value and error alike, and its fast path
// takes every input that stream accepts.
func FuzzDecode(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, werr := decodeTokens(raw)
		got, err := Decode(raw)
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Fatalf("Decode(%q) error %v, want %v", raw, err, werr)
		}
		var ce, wce *Error
		if errors.As(err, &ce) != errors.As(werr, &wce) {
			t.Fatalf("Decode(%q) error %T, want %T", raw, err, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %#v, want %#v", raw, got, want)
		}
		fast, ok := decodeFast(raw)
		if ok != (werr == nil) {
			t.Fatalf("fast path took %q: %v; the token stream says %v", raw, ok, werr)
		}
		if ok && !reflect.DeepEqual(fast, want) {
			t.Fatalf("fast path decoded %q as %#v, want %#v", raw, fast, want)
		}
	})
}

// FuzzMembers: Members reads an object as encoding/json reads it into a
// map of raw values (the last of repeated names wins there), and refuses
// whatever encoding/json refuses or is not an object.
func FuzzMembers(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want map[string]json.RawMessage
		werr := json.Unmarshal(raw, &want)
		got := map[string]json.RawMessage{}
		ok := Members(raw, func(name, value []byte) {
			got[string(name)] = bytes.Clone(value)
		})
		if isObject := werr == nil && want != nil; ok != isObject {
			t.Fatalf("Members(%q) = %v; encoding/json: %v, %v", raw, ok, want, werr)
		}
		if !ok {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Members(%q) gave %q, want %q", raw, got, want)
		}
	})
}
