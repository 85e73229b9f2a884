package gateway

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// This file writes decoded JSON values (maps, slices, strings, numbers,
// bools, nil: what tool results hold) with the bytes encoding/json.Marshal
// writes for them, without its reflection: sorted member names, HTML
// characters and U+2028/U+2029 escaped, invalid UTF-8 as U+FFFD, floats
// in its format. Any other value inside is encoded by encoding/json itself;
// anything that fails, or nests deeper than it follows, is handed whole to
// json.Marshal, so the bytes and errors are always json.Marshal's.
// FuzzMarshalValue holds the two to the same bytes.

// maxValueDepth bounds the nesting appendValue follows; deeper values (and
// cycles) are json.Marshal's to encode or refuse.
const maxValueDepth = 1000

// marshalValue returns json.Marshal(v).
func marshalValue(v any) ([]byte, error) {
	buf := getBuffer()
	defer putBuffer(buf)
	if b, ok := appendValue(buf.b[:0], v, 0); ok {
		buf.b = b
		return slices.Clone(b), nil
	}
	return json.Marshal(v)
}

// buffer is a scratch buffer of marshalValue and ToolResult.MarshalJSON,
// which write into it and return a copy of its exact size, as
// encoding/json does: no bytes lost to growing a slice per result.
type buffer struct{ b []byte }

var buffers = sync.Pool{New: func() any { return &buffer{b: make([]byte, 0, 1024)} }}

func getBuffer() *buffer { return buffers.Get().(*buffer) }

func putBuffer(buf *buffer) {
	if cap(buf.b) <= 1<<20 { // a huge result's buffer is left to the collector
		buffers.Put(buf)
	}
}

// appendValue appends json.Marshal(v) to b; ok is false when it could not
// (b is then to be dropped).
func appendValue(b []byte, v any, depth int) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return appendQuoted(b, x), true
	case bool:
		return strconv.AppendBool(b, x), true
	case json.Number:
		s := string(x)
		if s == "" {
			s = "0" // as encoding/json writes an empty Number
		}
		if !validNumber(s) {
			return b, false
		}
		return append(b, s...), true
	case float64:
		return appendFloat(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case int64:
		return strconv.AppendInt(b, x, 10), true
	case map[string]any:
		if x == nil {
			return append(b, "null"...), true
		}
		if depth++; depth > maxValueDepth {
			return b, false
		}
		var buf [16]string
		keys := buf[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(appendQuoted(b, k), ':')
			var ok bool
			if b, ok = appendValue(b, x[k], depth); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case []any:
		if x == nil {
			return append(b, "null"...), true
		}
		if depth++; depth > maxValueDepth {
			return b, false
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendValue(b, e, depth); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	default:
		enc, err := json.Marshal(x)
		if err != nil {
			return b, false
		}
		return append(b, enc...), true
	}
}

// appendFloat writes f as encoding/json writes a float64 (ECMAScript's
// form: exponent only below 1e-6 and from 1e21, "e-07" as "e-7").
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

// validNumber reports whether s is one JSON number (RFC 8259), which is
// what encoding/json requires of a json.Number.
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digitsFrom(s, i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		if i = digitsFrom(s, i+1); s[i-1] == '.' {
			return false // no digit after the point
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		if i = digitsFrom(s, i); i == start {
			return false
		}
	}
	return i == len(s)
}

// digitsFrom returns the index after the decimal digits of s from i.
func digitsFrom(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// appendQuoted writes s as a JSON string as encoding/json does with HTML
// escaping on: \" \\ \b \f \n \r \t, \u00XX for other control characters
// and for < > &, \u2028 and \u2029, and \ufffd for each byte that is not
// UTF-8.
func appendQuoted(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
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

// appendContent appends json.Marshal(content), a result's content blocks.
func appendContent(b []byte, content []map[string]any) ([]byte, bool) {
	if content == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i, block := range content {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendValue(b, block, 0); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}
