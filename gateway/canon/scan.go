package canon

import (
	"encoding/json"
	"sync"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/gateway/internal/jsonw"
)

// This file is the fast path of Decode and Members: one pass over the
// bytes, no encoding/json Decoder, no copy of a value's text. It answers
// only the inputs it is sure of (valid JSON, within the limits, no repeated
// member name); for anything else it reports false and the caller takes
// the slow path, whose errors are encoding/json's and this package's, so a
// refusal reads the same whichever path met the input first.

// maxScanDepth bounds the nesting the fast path follows (encoding/json
// refuses more than 10000 levels); deeper input takes the slow path.
const maxScanDepth = 10000

// scanner walks one JSON text. text is the same bytes as data, converted
// to a string once by Decode, so that decoded names, strings and numbers
// are substrings of it rather than one allocation each.
type scanner struct {
	data  []byte
	text  string
	pos   int
	depth int
	// stack holds the values of the arrays and the members of the objects
	// being read, so that each container is allocated once at its size.
	stack   []any
	members []member
}

type member struct {
	name  string
	value any
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *scanner) skipSpace() {
	for s.pos < len(s.data) && isSpace(s.data[s.pos]) {
		s.pos++
	}
}

// decodeFast decodes raw as Decode does, reporting false for anything it
// does not accept (which Decode then reads again slowly, for its error).
func decodeFast(raw []byte) (any, bool) {
	s := scanners.Get().(*scanner)
	defer s.release()
	s.data, s.text = raw, string(raw)
	s.skipSpace()
	v, ok := s.value()
	if !ok {
		return nil, false
	}
	s.skipSpace()
	return v, s.pos == len(s.data)
}

// scanners keeps the scanners of Decode with their stacks, which then
// cost nothing per call.
var scanners = sync.Pool{New: func() any { return new(scanner) }}

// release returns s, emptied, to scanners.
func (s *scanner) release() {
	clear(s.stack[:cap(s.stack)])
	clear(s.members[:cap(s.members)])
	if cap(s.stack) > 1024 || cap(s.members) > 1024 { // one huge value's stacks are not kept
		return
	}
	*s = scanner{stack: s.stack[:0], members: s.members[:0]}
	scanners.Put(s)
}

// value decodes the value at pos.
func (s *scanner) value() (any, bool) {
	if s.pos >= len(s.data) {
		return nil, false
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object()
	case c == '[':
		return s.array()
	case c == '"':
		return s.str()
	case c == '-' || c >= '0' && c <= '9':
		start := s.pos
		if !s.number() {
			return nil, false
		}
		n := s.text[start:s.pos]
		if _, err := parseDecimal(n); err != nil {
			return nil, false
		}
		return json.Number(n), true
	default:
		return s.literal()
	}
}

func (s *scanner) literal() (any, bool) {
	rest := s.data[s.pos:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "null":
		s.pos += 4
		return nil, true
	case len(rest) >= 4 && string(rest[:4]) == "true":
		s.pos += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		s.pos += 5
		return false, true
	}
	return nil, false
}

func (s *scanner) object() (any, bool) {
	if s.depth++; s.depth > maxScanDepth {
		return nil, false
	}
	s.pos++ // '{'
	base := len(s.members)
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
	} else {
		for {
			if s.pos >= len(s.data) || s.data[s.pos] != '"' {
				return nil, false
			}
			name, ok := s.str()
			if !ok || !s.colon() {
				return nil, false
			}
			v, ok := s.value()
			if !ok {
				return nil, false
			}
			s.members = append(s.members, member{name, v})
			if more, ok := s.next('}'); !ok {
				return nil, false
			} else if !more {
				break
			}
		}
	}
	n := len(s.members) - base
	obj := make(map[string]any, n)
	for _, m := range s.members[base:] {
		obj[m.name] = m.value
	}
	if len(obj) != n {
		return nil, false // a repeated name: the slow path names it
	}
	clear(s.members[base:])
	s.members = s.members[:base]
	s.depth--
	return obj, true
}

func (s *scanner) array() (any, bool) {
	if s.depth++; s.depth > maxScanDepth {
		return nil, false
	}
	s.pos++ // '['
	base := len(s.stack)
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
	} else {
		for {
			v, ok := s.value()
			if !ok {
				return nil, false
			}
			s.stack = append(s.stack, v)
			if more, ok := s.next(']'); !ok {
				return nil, false
			} else if !more {
				break
			}
		}
	}
	arr := make([]any, len(s.stack)-base)
	copy(arr, s.stack[base:])
	clear(s.stack[base:])
	s.stack = s.stack[:base]
	s.depth--
	return arr, true
}

// colon reads the ':' after a member name and the space around it.
func (s *scanner) colon() bool {
	s.skipSpace()
	if s.pos >= len(s.data) || s.data[s.pos] != ':' {
		return false
	}
	s.pos++
	s.skipSpace()
	return true
}

// next reads what follows a member or element: a ',' (more, with the space
// after it) or the closing byte end.
func (s *scanner) next(end byte) (more, ok bool) {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return false, false
	}
	switch s.data[s.pos] {
	case ',':
		s.pos++
		s.skipSpace()
		return true, true
	case end:
		s.pos++
		return false, true
	}
	return false, false
}

// str decodes the string at pos. A string without escapes whose bytes are
// UTF-8 is a substring of text; any other is unquoted by encoding/json,
// which replaces invalid UTF-8 and lone surrogates with U+FFFD.
func (s *scanner) str() (string, bool) {
	start := s.pos
	end, plain, ok := scanString(s.data, s.pos)
	if !ok {
		return "", false
	}
	s.pos = end
	if plain {
		return s.text[start+1 : end-1], true
	}
	var out string
	if json.Unmarshal(s.data[start:end], &out) != nil {
		return "", false
	}
	return out, true
}

// scanString checks the JSON string starting at data[at] (a '"') and
// returns the offset just past its closing quote. plain reports a string
// with no escape and only UTF-8 text, whose value is its bytes.
func scanString(data []byte, at int) (end int, plain, ok bool) {
	plain, ascii := true, true
	for i := at + 1; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			if !ascii && plain {
				plain = utf8.Valid(data[at+1 : i])
			}
			return i + 1, plain, true
		case c == '\\':
			plain = false
			i++
			if i >= len(data) {
				return 0, false, false
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) {
					return 0, false, false
				}
				for _, h := range data[i+1 : i+5] {
					if !isHex(h) {
						return 0, false, false
					}
				}
				i += 4
			default:
				return 0, false, false
			}
		case c < 0x20:
			return 0, false, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return 0, false, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number reads the number at pos (RFC 8259 grammar).
func (s *scanner) number() bool {
	end := jsonw.NumberEnd(s.data, s.pos)
	if end < 0 {
		return false
	}
	s.pos = end
	return true
}

// skip checks the value at pos and moves past it without decoding it.
func (s *scanner) skip() bool {
	if s.pos >= len(s.data) {
		return false
	}
	switch c := s.data[s.pos]; {
	case c == '"':
		end, _, ok := scanString(s.data, s.pos)
		s.pos = end
		return ok
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == '{' || c == '[':
		if s.depth++; s.depth > maxScanDepth {
			return false
		}
		s.pos++
		s.skipSpace()
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		if s.pos < len(s.data) && s.data[s.pos] == end {
			s.pos++
			s.depth--
			return true
		}
		for {
			if c == '{' {
				if s.pos >= len(s.data) || s.data[s.pos] != '"' {
					return false
				}
				end, _, ok := scanString(s.data, s.pos)
				if !ok {
					return false
				}
				s.pos = end
				if !s.colon() {
					return false
				}
			}
			if !s.skip() {
				return false
			}
			if more, ok := s.next(end); !ok {
				return false
			} else if !more {
				break
			}
		}
		s.depth--
		return true
	default:
		_, ok := s.literal()
		return ok
	}
}

// Members calls fn with the name and the value of each member of the JSON
// object raw, in the order they appear, and reports whether raw is one
// valid JSON object (with optional whitespace around it); when it is not,
// fn may have been called for the members before the problem. A value is
// the exact bytes of the member's value in raw (no surrounding whitespace;
// null is the four bytes "null"), checked as JSON but not decoded; a name
// is decoded as encoding/json decodes it (escapes resolved, invalid UTF-8
// as U+FFFD). Both are only valid during the call; a value shares raw's
// memory. Repeated names are passed each time. Nothing is allocated for
// names without escapes and valid UTF-8, so a caller that matches names
// against constants, as a JSON-RPC envelope is read, allocates nothing.
func Members(raw []byte, fn func(name, value []byte)) bool {
	s := scanner{data: raw, depth: 1} // the object itself is one level
	s.skipSpace()
	if s.pos >= len(s.data) || s.data[s.pos] != '{' {
		return false
	}
	s.pos++
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
	} else {
		for {
			if s.pos >= len(s.data) || s.data[s.pos] != '"' {
				return false
			}
			start := s.pos
			end, plain, ok := scanString(s.data, s.pos)
			if !ok {
				return false
			}
			name := s.data[start+1 : end-1]
			if !plain {
				var out string
				if json.Unmarshal(s.data[start:end], &out) != nil {
					return false
				}
				name = []byte(out)
			}
			s.pos = end
			if !s.colon() {
				return false
			}
			vstart := s.pos
			if !s.skip() {
				return false
			}
			fn(name, s.data[vstart:s.pos:s.pos])
			if more, ok := s.next('}'); !ok {
				return false
			} else if !more {
				break
			}
		}
	}
	s.skipSpace()
	return s.pos == len(s.data)
}
