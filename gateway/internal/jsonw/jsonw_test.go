package jsonw

import (
	"encoding/json"
	"strings"
	"testing"
)

// The dialects differ only where the package doc says; each case's want
// is the text, or "refused".
func TestDialects(t *testing.T) {
	plain := func(e *Encoder, b []byte, n json.Number) ([]byte, bool) { return append(b, n...), true }
	for _, tc := range []struct {
		note               string
		v                  any
		marshal, canonical string
	}{
		{"html and line separators", "<a&b>\u2028", `"\u003ca\u0026b\u003e\u2028"`, "\"<a&b>\u2028\""},
		{"control characters", "\x00\t\"\\", `"\u0000\t\"\\"`, `"\u0000\t\"\\"`},
		{"invalid UTF-8", "a\xffb", `"a\ufffdb"`, "refused"},
		{"names by bytes and by UTF-16", map[string]any{"\U0001F600": true, "\uFB01": false}, "{\"\uFB01\":false,\"\U0001F600\":true}", "{\"\U0001F600\":true,\"\uFB01\":false}"},
		{"float64", []any{1e21, 0.5}, `[1e+21,0.5]`, "refused"},
		{"json.Number", json.Number("1.50"), `1.50`, `1.50`},
		{"an invalid json.Number", json.Number("1."), "refused", `1.`},
		{"another Go value", []string{"x"}, `["x"]`, "refused"},
		{"nil containers", []any{map[string]any(nil), []any(nil)}, `[null,null]`, `[null,null]`},
	} {
		t.Run(tc.note, func(t *testing.T) {
			for _, d := range []struct {
				e    Encoder
				want string
			}{{Encoder{}, tc.marshal}, {Encoder{Dialect: Canonical, Number: plain}, tc.canonical}} {
				got := "refused"
				if d.e.Append(tc.v) {
					got = string(d.e.Out)
				}
				if got != d.want {
					t.Errorf("dialect %d: %s, want %s", d.e.Dialect, got, d.want)
				}
			}
		})
	}
}

// Number sees the pointer of the number it writes, escaped (RFC 6901).
func TestPointer(t *testing.T) {
	var at []string
	e := Encoder{Dialect: Canonical, Number: func(e *Encoder, b []byte, n json.Number) ([]byte, bool) {
		at = append(at, string(e.Pointer(nil)))
		return append(b, n...), true
	}}
	if !e.Append(map[string]any{"a/b": []any{json.Number("1"), map[string]any{"~": json.Number("2")}}, "c": json.Number("3")}) {
		t.Fatal("refused")
	}
	if got := strings.Join(at, " "); got != "/a~1b/0 /a~1b/1/~0 /c" {
		t.Errorf("pointers %q", got)
	}
}

// A value nested beyond MaxDepth is refused in both dialects.
func TestDepth(t *testing.T) {
	var v any = "leaf"
	for range MaxDepth + 1 {
		v = []any{v}
	}
	for _, e := range []Encoder{{}, {Dialect: Canonical}} {
		if e.Append(v) {
			t.Errorf("dialect %d took %d levels", e.Dialect, MaxDepth+1)
		}
	}
}
