package tools

import (
	"encoding/json"
	"maps"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The gateway asks the policy before it validates a call's arguments, so a
// principal never learns the schema of a tool it may not call. The policy
// input must still not carry values of any size: an argument is only as
// large as its schema allows once it has been validated, and a client can
// send a megabyte where the schema allows 128 characters. PolicyArguments
// closes that gap with the size bounds alone (maxLength, maxItems,
// maxProperties, enum, and the byte size they imply), never with the rest
// of the schema, and it never answers the caller: an oversized argument is
// left out of the policy input, and the decision is made without it.
//
// Leaving an argument out cannot let a call through that should be
// refused: only values the schema refuses are left out, so a call the
// policy allows without them still fails validation afterwards and is never
// dispatched. A caller the policy denies gets the same denial whatever the
// size of its arguments, so nothing of the schema shows.

// maxBoundDepth caps how deep the bound checks follow nested values and
// $ref chains; below it a value is kept (bounds are then not enforced,
// which is safe: keeping an argument never lets an invalid call through).
const maxBoundDepth = 32

// PolicyArguments returns the arguments of a call to the tool called name
// that may enter the policy input: args itself when every argument is
// within the size bounds of its property's schema, otherwise a copy without
// the arguments that exceed them. args is never modified. An argument the
// schema refuses outright (a property not declared when
// additionalProperties is false) is left out too. Arguments of an unknown
// tool are returned unchanged: the call is refused before the policy runs.
//
// The bounds are the ones a value can exceed by size: maxLength (counted
// in characters, as validation does), maxItems, maxProperties, an enum of
// strings, and for a value of another type than the schema's the byte size
// the schema allows. Anything else (patterns, formats, numbers, required
// properties) is left to validation, after the decision.
func (c *Catalog) PolicyArguments(name string, args map[string]any) map[string]any {
	e, ok := c.byName[name]
	if !ok || len(args) == 0 {
		return args
	}
	var out map[string]any
	for k, v := range args {
		if !overBound(e.schema, k, v, 0) {
			continue
		}
		if out == nil {
			out = maps.Clone(args)
		}
		delete(out, k)
	}
	if out == nil {
		return args
	}
	return out
}

// overBound reports whether the value v of property key of an object
// validated by s is refused by s for its size; false when unsure.
func overBound(s *jsonschema.Schema, key string, v any, depth int) bool {
	if sub, ok := s.Properties[key]; ok {
		return exceeds(sub, v, depth+1)
	}
	if len(s.PatternProperties) > 0 {
		return false // the key may match a pattern: not bounded here
	}
	switch ap := s.AdditionalProperties.(type) {
	case bool:
		return !ap
	case *jsonschema.Schema:
		return exceeds(ap, v, depth+1)
	}
	return false
}

// exceeds reports whether v breaks a size bound of s (and so is invalid
// under s). It only ever answers true for invalid values.
func exceeds(s *jsonschema.Schema, v any, depth int) bool {
	if s == nil || depth > maxBoundDepth {
		return false
	}
	if s.Bool != nil {
		return !*s.Bool
	}
	if exceeds(s.Ref, v, depth+1) {
		return true
	}
	for _, sub := range s.AllOf {
		if exceeds(sub, v, depth+1) {
			return true
		}
	}
	if limit := maxSize(s, depth); limit >= 0 && sizeAtLeast(v, limit+1) {
		return true
	}
	switch v := v.(type) {
	case string:
		return s.MaxLength != nil && utf8.RuneCountInString(v) > *s.MaxLength
	case []any:
		if s.MaxItems != nil && len(v) > *s.MaxItems {
			return true
		}
		if items := itemsSchema(s); items != nil {
			for _, it := range v {
				if exceeds(items, it, depth+1) {
					return true
				}
			}
		}
	case map[string]any:
		if s.MaxProperties != nil && len(v) > *s.MaxProperties {
			return true
		}
		if s.Types != nil && !s.Types.IsEmpty() && !hasType(s, "object") {
			return false // the type is wrong; maxSize had its say
		}
		for k, x := range v {
			if overBound(s, k, x, depth) {
				return true
			}
		}
	}
	return false
}

// itemsSchema is the schema every element of an array validated by s must
// pass; nil when there is none (or prefixItems make it positional).
func itemsSchema(s *jsonschema.Schema) *jsonschema.Schema {
	if len(s.PrefixItems) > 0 {
		return nil
	}
	if s.Items2020 != nil {
		return s.Items2020
	}
	it, _ := s.Items.(*jsonschema.Schema)
	return it
}

// typeNames is tt.ToStrings() without its allocation: the lists of the
// 2^8 values of the type bit set (jsonschema.Types), made once. They are
// shared: read them, never modify them.
func typeNames(tt jsonschema.Types) []string {
	typeLists.once.Do(func() {
		for i := range typeLists.names {
			typeLists.names[i] = jsonschema.Types(i).ToStrings()
		}
	})
	if tt < 0 || int(tt) >= len(typeLists.names) {
		return tt.ToStrings()
	}
	return typeLists.names[tt]
}

var typeLists struct {
	once  sync.Once
	names [256][]string
}

func hasType(s *jsonschema.Schema, t string) bool {
	for _, have := range typeNames(*s.Types) {
		if have == t {
			return true
		}
	}
	return false
}

// maxSize is an upper bound of size(v) over every value v valid under s,
// or -1 when s does not bound it. Each of s's own keywords (enum, const,
// type) bounds it on its own, so the smallest bound wins.
func maxSize(s *jsonschema.Schema, depth int) int {
	if s == nil || depth > maxBoundDepth {
		return -1
	}
	best := -1
	take := func(n int) {
		if n >= 0 && (best < 0 || n < best) {
			best = n
		}
	}
	if s.Enum != nil {
		take(valuesSize(s.Enum.Values))
	}
	if s.Const != nil {
		take(valuesSize([]any{*s.Const}))
	}
	if s.Types != nil && !s.Types.IsEmpty() {
		n := 0
		for _, t := range typeNames(*s.Types) {
			m := typeSize(s, t, depth)
			if m < 0 {
				n = -1
				break
			}
			n = max(n, m)
		}
		take(n)
	}
	take(maxSize(s.Ref, depth+1))
	return best
}

// typeSize bounds size(v) of the values of JSON type t valid under s.
func typeSize(s *jsonschema.Schema, t string, depth int) int {
	switch t {
	case "null", "boolean":
		return len("false")
	case "string":
		if s.MaxLength == nil {
			return -1
		}
		return 2 + utf8.UTFMax*(*s.MaxLength)
	case "array":
		items := itemsSchema(s)
		if s.MaxItems == nil || items == nil {
			return -1
		}
		each := maxSize(items, depth+1)
		if each < 0 {
			return -1
		}
		return 2 + *s.MaxItems*(each+1)
	}
	return -1 // numbers may be written with any number of digits; objects are not bounded here
}

// valuesSize bounds size over a fixed set of allowed values: only strings,
// booleans and null, which equal each other only when written alike (1 and
// 1.0 are the same number, so numbers are not bounded).
func valuesSize(vs []any) int {
	n := 0
	for _, v := range vs {
		switch v := v.(type) {
		case string:
			n = max(n, len(v)+2)
		case bool, nil:
			n = max(n, len("false"))
		default:
			return -1
		}
	}
	return n
}

// sizeAtLeast reports whether size(v) >= n, where size is a lower bound of
// the bytes of v's JSON encoding: strings count their bytes plus quotes,
// numbers decoded as float64 one byte, json.Number its text, and arrays and
// objects their parts plus punctuation. It stops counting at n, so a huge
// value costs no more than a small one.
func sizeAtLeast(v any, n int) bool {
	return size(v, n, 0) >= n
}

// size returns size(v), or some value >= limit once it is known to reach
// limit.
func size(v any, limit, depth int) int {
	switch v := v.(type) {
	case string:
		return len(v) + 2
	case json.Number:
		return len(v)
	case bool, nil:
		return len("true")
	case []any:
		total := 2 + max(len(v)-1, 0)
		for _, x := range v {
			if total >= limit || depth > maxBoundDepth {
				return total
			}
			total += size(x, limit-total, depth+1)
		}
		return total
	case map[string]any:
		total := 2 + max(len(v)-1, 0)
		for k, x := range v {
			if total >= limit || depth > maxBoundDepth {
				return total
			}
			total += len(k) + 3 + size(x, limit-total, depth+1)
		}
		return total
	}
	return 1
}
