package canon

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync"

	"github.com/gowebpki/jcs"

	"github.com/mcpgate/mcpgate/gateway/internal/jsonw"
)

// This file is the fast path of Canonical: the canonical form written
// straight from a decoded value, in one pass, by the module's one JSON
// encoder (gateway/internal/jsonw, its Canonical dialect), where the
// definition (canonicalByJCS) encodes the value with encoding/json, has
// jcs parse that text again and write it in RFC 8785 form. It takes only
// the values Decode returns (maps, slices, strings, json.Number, bool,
// nil) within plain limits, and reports false for anything else, which
// the definition then canonicalizes, errors included; FuzzCanonical holds
// the two to the same bytes.

// maxWriteDepth bounds the nesting the fast path follows (jcs refuses
// more than 10000 levels); deeper values take the definition.
const maxWriteDepth = jsonw.MaxDepth

// writer writes the canonical text of one value and collects the
// pointers of the inexact numbers, as findInexact does.
type writer struct {
	enc     jsonw.Encoder
	ptr     []byte // scratch for the pointer of an inexact number
	inexact []member
}

var writers = sync.Pool{New: func() any {
	w := new(writer)
	w.enc = jsonw.Encoder{Dialect: jsonw.Canonical, Number: w.number}
	return w
}}

// canonicalFast returns Canonical(v), or false when v is not one of the
// values it takes.
func canonicalFast(v any) ([]byte, bool) {
	w := getWriter()
	defer putWriter(w)
	if !w.canonical(v) {
		return nil, false
	}
	return slices.Clone(w.enc.Out), true
}

func getWriter() *writer {
	w := writers.Get().(*writer)
	w.enc.Out, w.inexact = w.enc.Out[:0], w.inexact[:0]
	return w
}

func putWriter(w *writer) {
	if cap(w.enc.Out) <= 64<<10 { // a huge value's buffer is left to the collector
		clear(w.inexact)
		writers.Put(w)
	}
}

// canonical writes the canonical form of v to w.enc.Out.
func (w *writer) canonical(v any) bool {
	if !w.enc.Append(v) {
		return false
	}
	if len(w.inexact) > 0 {
		// The annex: an RFC 8785 object of pointer → exact value.
		slices.SortFunc(w.inexact, func(a, b member) int { return jsonw.CompareUTF16(a.name, b.name) })
		out := append(w.enc.Out, '\n', '{')
		for i, m := range w.inexact {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(jsonw.AppendString(out, m.name, jsonw.Canonical), ':')
			out = jsonw.AppendString(out, m.value.(string), jsonw.Canonical)
		}
		w.enc.Out = append(out, '}')
	}
	return true
}

// number writes n as RFC 8785 does (ECMAScript's form of its nearest
// double), or 0 and an annex entry when that would lose its value.
func (w *writer) number(e *jsonw.Encoder, b []byte, n json.Number) ([]byte, bool) {
	s := string(n)
	if plainInteger(s) { // exact, and ECMAScript writes it as it is
		if s == "-0" {
			s = "0"
		}
		return append(b, s...), true
	}
	if !jsonw.ValidNumber(s) {
		return b, false
	}
	d, err := parseDecimal(s)
	if err != nil {
		return b, false
	}
	if !d.exactDouble() {
		w.ptr = e.Pointer(w.ptr[:0])
		w.inexact = append(w.inexact, member{string(w.ptr), d.String()})
		return append(b, '0'), true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return b, false
	}
	text, err := jcs.NumberToJSON(f)
	if err != nil {
		return b, false
	}
	return append(b, text...), true
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
