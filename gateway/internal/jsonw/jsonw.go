// Package jsonw writes decoded JSON values (maps, slices, strings,
// numbers, bools and nil: what encoding/json and canon.Decode return) as
// JSON text in one pass and without reflection, in one of two dialects:
// the bytes encoding/json.Marshal writes (the tool results the gateway
// relays) and RFC 8785's canonical form (gateway/canon's arguments hash).
//
// The dialects share the walk, the depth bound and the pooled buffers;
// they differ in how strings are escaped, how member names are sorted, how
// numbers are written and which values they take. A value the encoder does
// not take is reported, never guessed at: the caller then encodes it by
// its definition (json.Marshal, jcs), so the bytes and the errors are
// always the definition's. The tests of the callers hold the two to the
// same bytes (FuzzMarshalValue in gateway, FuzzCanonical in gateway/canon).
package jsonw

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Dialect is the kind of JSON text an Encoder writes.
type Dialect uint8

const (
	// Marshal writes what encoding/json.Marshal writes: member names
	// sorted by their bytes; <, >, &, U+2028 and U+2029 escaped and each
	// byte that is not UTF-8 written as \ufffd; float64 in encoding/json's
	// format; a json.Number as its text, once it is checked to be one
	// number; any other Go value by json.Marshal itself.
	Marshal Dialect = iota
	// Canonical writes RFC 8785: member names sorted by their UTF-16 code
	// units, strings with only the escapes RFC 8785 asks for, each
	// json.Number by the Encoder's Number function. It takes only what
	// canon.Decode returns (strings and names of valid UTF-8, json.Number,
	// bool, nil, maps and slices of them) and refuses any other value.
	Canonical
)

// MaxDepth bounds the nesting an Encoder follows; a deeper value (or a
// cycle) is refused, for the definition to encode or refuse (encoding/json
// follows 1000 levels before it checks for a cycle, jcs refuses more than
// 10000).
const MaxDepth = 1000

// Encoder appends JSON values to Out. The zero value writes Marshal.
type Encoder struct {
	// Dialect is what Append writes.
	Dialect Dialect
	// Number appends json.Number n to b in the Canonical dialect, or
	// reports false to refuse the value; Pointer says where n is. The
	// Canonical dialect needs it (gateway/canon writes a number RFC 8785
	// would round as 0 and keeps its exact value aside); Marshal ignores
	// it.
	Number func(e *Encoder, b []byte, n json.Number) ([]byte, bool)
	// Out is the text written so far.
	Out []byte

	// path is where the value being written is (Canonical only): one
	// step per container entered.
	path []step
}

// step is one reference of a JSON pointer: a member name, or an array
// index when index is not negative.
type step struct {
	name  string
	index int
}

// Append writes v after Out. It reports false for a value the dialect does
// not take; Out then ends with part of v, which the caller drops.
func (e *Encoder) Append(v any) bool {
	var ok bool
	e.path = e.path[:0]
	e.Out, ok = e.value(e.Out, v, 0)
	return ok
}

// Pointer appends to b the JSON pointer (RFC 6901) of the value being
// written, for Number; "" (the whole value) in the Marshal dialect, which
// keeps no path.
func (e *Encoder) Pointer(b []byte) []byte {
	for _, s := range e.path {
		b = append(b, '/')
		if s.index >= 0 {
			b = strconv.AppendInt(b, int64(s.index), 10)
			continue
		}
		for i := 0; i < len(s.name); i++ {
			switch c := s.name[i]; c {
			case '~':
				b = append(b, '~', '0')
			case '/':
				b = append(b, '~', '1')
			default:
				b = append(b, c)
			}
		}
	}
	return b
}

var encoders = sync.Pool{New: func() any { return &Encoder{Out: make([]byte, 0, 1024)} }}

// Get returns an empty Marshal Encoder from a pool, whose buffer has
// room from earlier values: write, copy Out, then Put it back.
func Get() *Encoder {
	e := encoders.Get().(*Encoder)
	e.Out = e.Out[:0]
	return e
}

// Put returns an Encoder of Get to the pool; Out must not be used after.
func Put(e *Encoder) {
	if cap(e.Out) <= 1<<20 { // a huge value's buffer is left to the collector
		encoders.Put(e)
	}
}

// value appends v to b.
func (e *Encoder) value(b []byte, v any, depth int) ([]byte, bool) {
	canonical := e.Dialect == Canonical
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		if canonical && !utf8.ValidString(x) {
			return b, false // encoding/json writes U+FFFD for its bytes: the definition's business
		}
		return AppendString(b, x, e.Dialect), true
	case bool:
		return strconv.AppendBool(b, x), true
	case json.Number:
		if canonical {
			return e.Number(e, b, x)
		}
		s := string(x)
		if s == "" {
			s = "0" // as encoding/json writes an empty Number
		}
		if !ValidNumber(s) {
			return b, false
		}
		return append(b, s...), true
	case map[string]any:
		return e.object(b, x, depth)
	case []any:
		return e.array(b, x, depth)
	}
	if canonical {
		return b, false
	}
	switch x := v.(type) {
	case float64:
		return appendFloat(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case int64:
		return strconv.AppendInt(b, x, 10), true
	default:
		enc, err := json.Marshal(x)
		if err != nil {
			return b, false
		}
		return append(b, enc...), true
	}
}

func (e *Encoder) object(b []byte, x map[string]any, depth int) ([]byte, bool) {
	if x == nil {
		return append(b, "null"...), true // as encoding/json writes it
	}
	if depth++; depth > MaxDepth {
		return b, false
	}
	canonical := e.Dialect == Canonical
	var buf [16]string
	keys := buf[:0]
	for k := range x {
		if canonical && !utf8.ValidString(k) {
			return b, false // two names could become one U+FFFD text
		}
		keys = append(keys, k)
	}
	if canonical {
		slices.SortFunc(keys, CompareUTF16)
	} else {
		slices.Sort(keys)
	}
	at := len(e.path)
	if canonical {
		e.path = append(e.path, step{index: -1})
	}
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(AppendString(b, k, e.Dialect), ':')
		if canonical {
			e.path[at].name = k
		}
		var ok bool
		if b, ok = e.value(b, x[k], depth); !ok {
			return b, false
		}
	}
	e.path = e.path[:at]
	return append(b, '}'), true
}

func (e *Encoder) array(b []byte, x []any, depth int) ([]byte, bool) {
	if x == nil {
		return append(b, "null"...), true
	}
	if depth++; depth > MaxDepth {
		return b, false
	}
	canonical := e.Dialect == Canonical
	at := len(e.path)
	if canonical {
		e.path = append(e.path, step{})
	}
	b = append(b, '[')
	for i, c := range x {
		if i > 0 {
			b = append(b, ',')
		}
		if canonical {
			e.path[at].index = i
		}
		var ok bool
		if b, ok = e.value(b, c, depth); !ok {
			return b, false
		}
	}
	e.path = e.path[:at]
	return append(b, ']'), true
}

// appendFloat writes f as encoding/json writes a float64 (ECMAScript's
// form: exponent only below 1e-6 and from 1e21, "e-07" as "e-7"); false
// for NaN and the infinities, which have no JSON form.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// ValidNumber reports whether s is one JSON number (RFC 8259 grammar),
// what encoding/json requires of a json.Number.
func ValidNumber(s string) bool { return NumberEnd(s, 0) == len(s) }

// NumberEnd returns the index after the JSON number (RFC 8259 grammar)
// that starts at index i of d, or -1 when none starts there. The one
// grammar of numbers: the encoder checks a json.Number with it, and
// canon's decoder scans with it.
func NumberEnd[T string | []byte](d T, i int) int {
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		i = digitsFrom(d, i)
	default:
		return -1
	}
	if i < len(d) && d[i] == '.' {
		if i = digitsFrom(d, i+1); d[i-1] == '.' {
			return -1 // no digit after the point
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		start := i
		if i = digitsFrom(d, i); i == start {
			return -1
		}
	}
	return i
}

// digitsFrom returns the index after the decimal digits of d from i.
func digitsFrom[T string | []byte](d T, i int) int {
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		i++
	}
	return i
}

// AppendString writes s as a JSON string of dialect d. Both write \" \\
// \b \f \n \r \t and \u00xx (lower-case hex) for the other control
// characters. Marshal, as encoding/json with HTML escaping on, also
// escapes < > & as \u00xx and U+2028, U+2029 as \u2028, \u2029, and writes
// \ufffd for each byte that is not UTF-8; Canonical (RFC 8785) writes
// every other character as it is, and s must be valid UTF-8.
func AppendString(b []byte, s string, d Dialect) []byte {
	if d == Canonical {
		return appendCanonicalString(b, s)
	}
	return appendMarshalString(b, s)
}

const hex = "0123456789abcdef"

func appendCanonicalString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			b = appendEscape(append(b, s[start:i]...), c)
			start = i + 1
		}
	}
	return append(append(b, s[start:]...), '"')
}

func appendMarshalString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = appendEscape(append(b, s[start:i]...), c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), `\u202`...)
			b = append(b, hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}

// appendEscape writes the escape of the ASCII character c: the
// two-character escapes where JSON has one, else \u00xx.
func appendEscape(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
}

// CompareUTF16 orders valid UTF-8 strings by their UTF-16 code units, as
// RFC 8785 sorts member names. It differs from byte order only where a
// character beyond U+FFFF (a surrogate pair, D800–DBFF first) meets one
// from U+E000 to U+FFFF.
func CompareUTF16(a, b string) int {
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
