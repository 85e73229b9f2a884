package canon

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := Decode([]byte(s))
	if err != nil {
		t.Fatalf("Decode(%s): %v", s, err)
	}
	return v
}

func canonical(t *testing.T, s string) string {
	t.Helper()
	b, err := Canonical(mustDecode(t, s))
	if err != nil {
		t.Fatalf("Canonical(%s): %v", s, err)
	}
	return string(b)
}

// TestRFC8785 checks plain RFC 8785 output where every number is exact: the
// RFC's own sample (section 3.2.2, numbers it writes with their value),
// member order by UTF-16 code units, and number forms.
func TestRFC8785(t *testing.T) {
	for in, want := range map[string]string{
		`{"numbers":[333333333.3333333,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`: `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		`{"\u20ac":1,"\ud83d\ude00":2,"\ufb33":3}`:         "{\"\u20ac\":1,\"\U0001F600\":2,\"\uFB33\":3}", // U+1F600 is D83D DE00 in UTF-16: before U+FB33
		` { "b" : 1.0 , "a" : [ 1e0 , -0 , 0.1 ] } `:       `{"a":[1,0,0.1],"b":1}`,
		`{"big":9007199254740992,"neg":-9007199254740992}`: `{"big":9007199254740992,"neg":-9007199254740992}`,
	} {
		if got := canonical(t, in); got != want {
			t.Errorf("Canonical(%s)\n got %s\nwant %s", in, got, want)
		}
	}
}

// TestEveryDigitCounts: numbers RFC 8785 alone would merge keep apart;
// equal values in other spellings stay together.
func TestEveryDigitCounts(t *testing.T) {
	hash := func(s string) string {
		h, err := Hash(mustDecode(t, s))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	for _, pair := range [][2]string{
		{`{"n":9007199254740993}`, `{"n":9007199254740992}`},
		{`{"n":[1,9007199254740993]}`, `{"n":[1,9007199254740992]}`},
		{`{"n":0.1000000000000000000001}`, `{"n":0.1}`},
		{`{"n":9007199254740993}`, `{"n":0}`},
		{`{"n":9007199254740993}`, `{"n":"9007199254740993"}`},
		{`{"a":{"b":9007199254740993}}`, `{"a/b":9007199254740993}`},
	} {
		if hash(pair[0]) == hash(pair[1]) {
			t.Errorf("%s and %s hash alike", pair[0], pair[1])
		}
	}
	for _, pair := range [][2]string{
		{`{"n":9007199254740993}`, `{"n":9007199254740993.000}`},
		{`{"n":9007199254740993}`, `{"n":9.007199254740993e15}`},
		{`{"n":-1e400}`, `{"n":-10e399}`},
		{`{"a":1,"n":[9007199254740993]}`, `{"n":[90071992547409930e-1],"a":1.0}`},
	} {
		if hash(pair[0]) != hash(pair[1]) {
			t.Errorf("%s and %s hash differently", pair[0], pair[1])
		}
	}
	// Where every number is exact the hash is SHA-256 of plain RFC 8785.
	sum := sha256.Sum256([]byte(`{"a":1,"b":"x"}`))
	if got := hash(`{"b":"x","a":1.0}`); got != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("hash %s is not SHA-256 of the RFC 8785 text", got)
	}
	if got := canonical(t, `{"b":1,"n":[9007199254740993]}`); got != `{"b":1,"n":[0]}`+"\n"+`{"/n/0":"0.9007199254740993e16"}` {
		t.Errorf("extended form %q", got)
	}
}

func TestDecodeRefuses(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1,"a":2}`:         `/a: the member name "a" appears twice`,
		`{"x":[{"k":1,"k":1}]}`: `/x/0/k: the member name "k" appears twice`,
		`{"n":1e401}`:           "/n: the number 1e401 is out of range",
		`{"n":1e-401}`:          "/n: the number 1e-401 is out of range",
		`{"n":1` + strings.Repeat("0", 100) + `}`: "/n: a number of 101 characters",
	} {
		_, err := Decode([]byte(in))
		var ce *Error
		if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Decode(%s) = %v, want %q", in, err, want)
		}
	}
	for _, in := range []string{`{"a":1} {}`, `{"a":}`, ``} {
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("Decode(%q) accepted", in)
		}
	}
	if _, err := Decode([]byte(`{"n":0e999999, "m":1e400, "s":"\ud800"}`)); err != nil {
		t.Errorf("Decode refused a zero with a huge exponent or 1e400: %v", err)
	}
}

func TestWithoutMembers(t *testing.T) {
	raw := []byte(`{"n": 9007199254740993, "t":"tok", "s":"<&>", "x":1.50}`)
	got, err := WithoutMembers(raw, "t")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"n":9007199254740993,"s":"<&>","x":1.50}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if same, _ := WithoutMembers(raw, "absent"); string(same) != string(raw) {
		t.Errorf("without an absent member: %s", same)
	}
}

// TestCanonicalOfBuiltValues: values built in Go rather than decoded
// (nil containers, invalid UTF-8, Go numbers, other types) canonicalize
// as the definition (encoding/json, then jcs) does, whichever path takes
// them.
func TestCanonicalOfBuiltValues(t *testing.T) {
	for _, v := range []any{
		map[string]any(nil), []any(nil), map[string]any{"x": []any(nil), "y": map[string]any(nil)},
		map[string]any{"s": "a\xffb", "n": json.Number("1 ")}, map[string]any{"\xff": 1, "\xfe": 2},
		map[string]any{"f": 1.5, "i": 2, "u": uint8(3)}, []string{"b", "a"}, json.Number("-0"), "x",
		map[string]any{"deep": nest(maxWriteDepth + 5)},
	} {
		got, err := Canonical(v)
		want, werr := canonicalByJCS(v)
		if string(got) != string(want) || (err == nil) != (werr == nil) {
			t.Errorf("Canonical(%#v) = %q, %v; the definition says %q, %v", v, got, err, want, werr)
		}
	}
	if _, ok := canonicalFast(map[string]any{"f": 1.5}); ok {
		t.Error("the fast path took a float64, which only the definition writes")
	}
}

func nest(n int) any {
	var v any = json.Number("1")
	for range n {
		v = []any{v}
	}
	return v
}
