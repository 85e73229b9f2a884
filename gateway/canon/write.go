package canon

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// This file is the fast path of Canonical: the canonical form written
// straight from a decoded value, in one pass, where the definition
// (canonicalByJCS) encodes the value with encoding/json, has jcs parse
// that text again and write it in RFC 8785 form. It takes only the values
// Decode returns (maps, slices, strings, json.Number, bool, nil) within
// plain limits, and reports false for anything else, which the
// definition then canonicalizes, errors included; FuzzCanonical holds the
// two to the same bytes.

// maxWriteDepth bounds the nesting the fast path follows (jcs refuses
// more than 10000 levels); deeper values take the definition.
const maxWriteDepth = 1000

// writer appends the canonical text of one value to out and collects the
// pointers of the inexact numbers, as findInexact does.
type writer struct {
	out     []byte
	ptr     []byte // the JSON pointer of the value being written
	inexact []member
	depth   int
}

var writers = sync.Pool{New: func() any { return new(writer) }}

// canonicalFast returns Canonical(v), or false when v is not one of the
// values it takes.
func canonicalFast(v any) ([]byte, bool) {
	w := getWriter()
	defer putWriter(w)
	if !w.canonical(v) {
		return nil, false
	}
	return slices.Clone(w.out), true
}

func getWriter() *writer {
	w := writers.Get().(*writer)
	w.out, w.ptr, w.inexact, w.depth = w.out[:0], w.ptr[:0], w.inexact[:0], 0
	return w
}

func putWriter(w *writer) {
	if cap(w.out) <= 64<<10 { // a huge value's buffer is left to the collector
		clear(w.inexact)
		writers.Put(w)
	}
}

// canonical writes the canonical form of v to w.out.
func (w *writer) canonical(v any) bool {
	if !w.value(v) {
		return false
	}
	if len(w.inexact) > 0 {
		// The annex: an RFC 8785 object of pointer → exact value.
		slices.SortFunc(w.inexact, func(a, b member) int { return compareUTF16(a.name, b.name) })
		w.out = append(w.out, '\n', '{')
		for i, m := range w.inexact {
			if i > 0 {
				w.out = append(w.out, ',')
			}
			w.out = appendString(w.out, m.name)
			w.out = append(w.out, ':')
			w.out = appendString(w.out, m.value.(string))
		}
		w.out = append(w.out, '}')
	}
	return true
}

func (w *writer) value(v any) bool {
	switch x := v.(type) {
	case nil:
		w.out = append(w.out, "null"...)
	case bool:
		w.out = strconv.AppendBool(w.out, x)
	case string:
		if !utf8.ValidString(x) {
			return false // encoding/json writes U+FFFD for its bytes: the definition's business
		}
		w.out = appendString(w.out, x)
	case json.Number:
		return w.number(x)
	case []any:
		if x == nil {
			w.out = append(w.out, "null"...) // as encoding/json writes it
			return true
		}
		if w.depth++; w.depth > maxWriteDepth {
			return false
		}
		w.out = append(w.out, '[')
		at := len(w.ptr)
		for i, c := range x {
			if i > 0 {
				w.out = append(w.out, ',')
			}
			w.ptr = strconv.AppendInt(append(w.ptr[:at], '/'), int64(i), 10)
			if !w.value(c) {
				return false
			}
		}
		w.ptr = w.ptr[:at]
		w.out = append(w.out, ']')
		w.depth--
	case map[string]any:
		if x == nil {
			w.out = append(w.out, "null"...)
			return true
		}
		if w.depth++; w.depth > maxWriteDepth {
			return false
		}
		var buf [16]string
		keys := buf[:0]
		for k := range x {
			if !utf8.ValidString(k) {
				return false // two keys could become one U+FFFD text
			}
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		w.out = append(w.out, '{')
		at := len(w.ptr)
		for i, k := range keys {
			if i > 0 {
				w.out = append(w.out, ',')
			}
			w.out = appendString(w.out, k)
			w.out = append(w.out, ':')
			w.ptr = appendEscaped(append(w.ptr[:at], '/'), k)
			if !w.value(x[k]) {
				return false
			}
		}
		w.ptr = w.ptr[:at]
		w.out = append(w.out, '}')
		w.depth--
	default:
		return false
	}
	return true
}

// number writes n as RFC 8785 does (ECMAScript's form of its nearest
// double), or 0 and an annex entry when that would lose its value.
func (w *writer) number(n json.Number) bool {
	s := string(n)
	if plainInteger(s) { // exact, and ECMAScript writes it as it is
		if s == "-0" {
			s = "0"
		}
		w.out = append(w.out, s...)
		return true
	}
	if !validNumber(s) {
		return false
	}
	d, err := parseDecimal(s)
	if err != nil {
		return false
	}
	if !d.exactDouble() {
		w.inexact = append(w.inexact, member{string(w.ptr), d.String()})
		w.out = append(w.out, '0')
		return true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return false
	}
	text, err := jcs.NumberToJSON(f)
	if err != nil {
		return false
	}
	w.out = append(w.out, text...)
	return true
}

// plainInteger reports an integer of at most 15 digits without leading
// zeros: a double holds it exactly, and ECMAScript writes its digits.
func plainInteger(s string) bool {
	digits := s
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || len(digits) > 1 && digits[0] == '0' {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// validNumber reports whether s is one JSON number.
func validNumber(s string) bool {
	sc := scanner{data: []byte(s)}
	return len(s) > 0 && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && sc.number() && sc.pos == len(s)
}

// appendString writes s, valid UTF-8, as RFC 8785 does: the two-character
// escapes for \b \t \n \f \r " and \, \u00xx (lower-case hex) for the
// other control characters, every other character as it is.
func appendString(out []byte, s string) []byte {
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		out = append(out, s[start:i]...)
		switch c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\b':
			out = append(out, '\\', 'b')
		case '\t':
			out = append(out, '\\', 't')
		case '\n':
			out = append(out, '\\', 'n')
		case '\f':
			out = append(out, '\\', 'f')
		case '\r':
			out = append(out, '\\', 'r')
		default:
			const hex = "0123456789abcdef"
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}

// appendEscaped appends token escaped as one JSON pointer reference token
// (RFC 6901: ~ as ~0, / as ~1), as escape does.
func appendEscaped(out []byte, token string) []byte {
	for i := 0; i < len(token); i++ {
		switch token[i] {
		case '~':
			out = append(out, '~', '0')
		case '/':
			out = append(out, '~', '1')
		default:
			out = append(out, token[i])
		}
	}
	return out
}

// compareUTF16 orders valid UTF-8 strings by their UTF-16 code units, as
// RFC 8785 sorts member names. It differs from byte order only where a
// character beyond U+FFFF (a surrogate pair, D800–DBFF first) meets one
// from U+E000 to U+FFFF.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return utf16Lead(ra) - utf16Lead(rb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// utf16Lead maps r to a number that orders as r's UTF-16 code units do
// against any other character: below U+D800 a character is its code
// point; one beyond U+FFFF (whose first unit is a surrogate, D800–DBFF)
// comes after those; one from U+E000 to U+FFFF after every other.
func utf16Lead(r rune) int {
	switch {
	case r > 0xFFFF:
		return 0xD800 + int(r)
	case r >= 0xE000:
		return 0x200000 + int(r)
	}
	return int(r)
}
