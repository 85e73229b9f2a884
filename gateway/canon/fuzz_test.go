package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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

// FuzzCanonical: the canonical form written straight from a decoded value
// is, byte for byte, the definition's (encoding/json, then jcs), which
// also decides every value the fast path does not take; and the fast
// path takes every value Decode returns.
func FuzzCanonical(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"\ue000":1,"\ud83d\ude00":2,"\ufb33":3,"z":[9007199254740993,{"~/":1e400}],"a/b":-0.0}`,
		`[1e21,1e-7,123456789012345,1234567890123456,-0,0.000001,5e-324,1.7976931348623157e308]`,
		`{"c":"\u0000\u001f\u007f\u2028<&>\"\\"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := Decode(raw)
		if err != nil {
			return
		}
		want, werr := canonicalByJCS(v)
		got, ok := canonicalFast(v)
		if !ok {
			t.Fatalf("fast path refused the decoded %q (definition: %v)", raw, werr)
		}
		if werr != nil || !bytes.Equal(got, want) {
			t.Fatalf("canonical form of %q\n got %q\nwant %q (%v)", raw, got, want, werr)
		}
		if h, err := Hash(v); err != nil || h != "sha256:"+hexSum(want) {
			t.Fatalf("Hash(%q) = %s, %v; want SHA-256 of %q", raw, h, err, want)
		}
	})
}

func hexSum(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
