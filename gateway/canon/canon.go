// Package canon decodes tool arguments without losing a digit and gives
// them the one canonical hash the gateway uses for the audit row, the
// deploy confirmation token and the idempotency key.
//
// # Canonical form
//
// The canonical form is RFC 8785 (JSON Canonicalization Scheme), computed
// by github.com/gowebpki/jcs: object members sorted by their UTF-16 code
// units, no insignificant whitespace, strings and numbers serialized as
// ECMAScript's JSON.stringify does. RFC 8785 serializes a number as the
// IEEE 754 double nearest to it, so on its own it cannot tell 9007199254740993
// from 9007199254740992 (2^53 + 1 and 2^53: one double). A confirmation token
// issued for one of them would confirm the other. So the form is extended,
// and only where RFC 8785 would lose a value:
//
//   - A number is exact when the shortest text of its nearest double (what
//     RFC 8785 writes) has the same decimal value as the number the client
//     sent: 1, 1.0, 1e0 and 0.1 are exact; 9007199254740993, 1e400 and
//     0.1000000000000000000001 are not.
//   - When every number is exact, the canonical form is plain RFC 8785, and
//     the hash is SHA-256 of it: any RFC 8785 implementation reproduces it.
//   - Otherwise each inexact number is written as 0 in the RFC 8785 text,
//     and a newline (which RFC 8785 text never holds) and an RFC 8785
//     object follow, mapping the JSON pointer (RFC 6901) of each inexact
//     number to its exact decimal value, "[-]0.<digits>e<exponent>". Equal
//     values give equal forms; values that differ in any digit differ.
//
// Decode refuses what has no canonical form: duplicate member names
// (RFC 8785 requires I-JSON, RFC 7493), and numbers longer than
// MaxNumberLength characters or with a decimal exponent beyond
// ±MaxExponent (1e-400 to 9.99e400 in magnitude), which also bounds
// the work an exact number costs later (schema validation compares numbers
// as big.Rat).
package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gowebpki/jcs"
)

// Limits on the numbers Decode accepts. MaxExponent covers every IEEE
// double (about 4.9e-324 to 1.8e308) with room to spare; MaxNumberLength
// every integer of 128 bits and every decimal of 38 digits.
const (
	MaxNumberLength = 100
	MaxExponent     = 400
)

// Error is a reason a JSON value has no canonical form. Pointer is the RFC
// 6901 JSON pointer of the offending value ("" for the whole document).
type Error struct {
	Pointer string
	Problem string
}

func (e *Error) Error() string {
	if e.Pointer == "" {
		return e.Problem
	}
	return e.Pointer + ": " + e.Problem
}

// Decode decodes the one JSON value in raw as encoding/json does into an
// any (map[string]any, []any, string, bool, nil), except that numbers are
// json.Number holding the client's text, so no digit is lost. It fails with
// an *Error for a member name that appears twice in one object and for a
// number beyond the package limits, and with encoding/json's error for
// anything that is not one JSON value.
func Decode(raw []byte) (any, error) {
	if v, ok := decodeFast(raw); ok {
		return v, nil
	}
	return decodeTokens(raw)
}

// decodeTokens is Decode by encoding/json's token stream: the definition
// of what Decode accepts and of its errors, which decodeFast (the same
// result in one pass over the bytes) leaves to it.
func decodeTokens(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &Error{Problem: "more data follows the JSON value"}
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return decodeArray(dec)
		}
		return decodeObject(dec)
	case json.Number:
		if _, err := parseDecimal(string(t)); err != nil {
			return nil, err
		}
		return t, nil
	default: // string, bool, nil
		return t, nil
	}
}

func decodeObject(dec *json.Decoder) (any, error) {
	obj := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		if _, dup := obj[name]; dup {
			return nil, &Error{Pointer: "/" + escape(name), Problem: fmt.Sprintf(
				"the member name %s appears twice in one object; send each member once", strconv.Quote(clip(name)))}
		}
		v, err := decodeValue(dec)
		if err != nil {
			return nil, under(err, escape(name))
		}
		obj[name] = v
	}
	_, err := dec.Token() // '}'
	return obj, err
}

func decodeArray(dec *json.Decoder) (any, error) {
	arr := []any{}
	for dec.More() {
		v, err := decodeValue(dec)
		if err != nil {
			return nil, under(err, strconv.Itoa(len(arr)))
		}
		arr = append(arr, v)
	}
	_, err := dec.Token() // ']'
	return arr, err
}

// under prefixes the pointer of an *Error with one reference token.
func under(err error, token string) error {
	var e *Error
	if errors.As(err, &e) {
		e.Pointer = "/" + token + e.Pointer
	}
	return err
}

// Hash returns "sha256:<hex>" of the canonical form of v (see the package
// documentation). v holds JSON values as Decode returns them; other Go
// values are encoded with encoding/json first. Errors: v cannot be encoded
// as JSON, or holds a number beyond the package limits.
func Hash(v any) (string, error) {
	var sum [sha256.Size]byte
	if w := getWriter(); w.canonical(v) {
		sum = sha256.Sum256(w.enc.Out)
		putWriter(w)
	} else {
		putWriter(w)
		b, err := canonicalByJCS(v)
		if err != nil {
			return "", err
		}
		sum = sha256.Sum256(b)
	}
	const prefix = "sha256:"
	var text [len(prefix) + 2*sha256.Size]byte
	copy(text[:], prefix)
	hex.Encode(text[len(prefix):], sum[:])
	return string(text[:]), nil
}

// Canonical returns the canonical form of v (see the package
// documentation); Hash is SHA-256 of it.
func Canonical(v any) ([]byte, error) {
	if b, ok := canonicalFast(v); ok {
		return b, nil
	}
	return canonicalByJCS(v)
}

// canonicalByJCS is Canonical by its definition: v encoded by
// encoding/json, then canonicalized by jcs. canonicalFast writes the same
// bytes straight from v, and leaves every value it does not take, and
// every error, to it.
func canonicalByJCS(v any) ([]byte, error) {
	inexact := map[string]string{}
	if err := findInexact(v, "", inexact); err != nil {
		return nil, err
	}
	if len(inexact) > 0 {
		v = zeroAt(v, "", inexact)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out, err := jcs.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("RFC 8785 canonicalization: %w", err)
	}
	if len(inexact) == 0 {
		return out, nil
	}
	ext, err := json.Marshal(inexact)
	if err != nil {
		return nil, err
	}
	if ext, err = jcs.Transform(ext); err != nil {
		return nil, fmt.Errorf("RFC 8785 canonicalization: %w", err)
	}
	return append(append(out, '\n'), ext...), nil
}

// findInexact records, by JSON pointer, the exact value of every number in
// v that RFC 8785 would not write with its value.
func findInexact(v any, at string, out map[string]string) error {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if err := findInexact(c, at+"/"+escape(k), out); err != nil {
				return err
			}
		}
	case []any:
		for i, c := range x {
			if err := findInexact(c, at+"/"+strconv.Itoa(i), out); err != nil {
				return err
			}
		}
	case json.Number:
		if x == "" || !json.Valid([]byte(x)) || x[0] != '-' && (x[0] < '0' || x[0] > '9') {
			return &Error{Pointer: at, Problem: fmt.Sprintf("json.Number %q is not a JSON number", clip(string(x)))}
		}
		d, err := parseDecimal(string(x))
		if err != nil {
			return under(err, strings.TrimPrefix(at, "/"))
		}
		if !d.exactDouble() {
			out[at] = d.String()
		}
	}
	return nil
}

// zeroAt returns a copy of v with the numbers at the pointers of inexact
// replaced by 0; the containers on the way are copied, nothing else.
func zeroAt(v any, at string, inexact map[string]string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, c := range x {
			out[k] = zeroAt(c, at+"/"+escape(k), inexact)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, c := range x {
			out[i] = zeroAt(c, at+"/"+strconv.Itoa(i), inexact)
		}
		return out
	case json.Number:
		if _, ok := inexact[at]; ok {
			return json.Number("0")
		}
	}
	return v
}

// decimal is a number's exact value: (-1 if neg) × 0.digits × 10^exp, with
// no leading or trailing zeros in digits; zero is the zero decimal.
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// parseDecimal reads a JSON number (RFC 8259 grammar, as encoding/json
// has checked it) within the package limits.
func parseDecimal(s string) (decimal, error) {
	if len(s) > MaxNumberLength {
		return decimal{}, &Error{Problem: fmt.Sprintf(
			"a number of %d characters; numbers may have at most %d (send longer ones as strings)", len(s), MaxNumberLength)}
	}
	var d decimal
	mant, expText, hasExp := strings.Cut(strings.ToLower(s), "e")
	if strings.HasPrefix(mant, "-") {
		d.neg, mant = true, mant[1:]
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	if strings.TrimRight(digits, "0") == "" {
		return decimal{}, nil // zero, whatever its exponent
	}
	e := 0
	if hasExp {
		n, err := strconv.Atoi(expText) // at most MaxNumberLength digits
		if err != nil || n > 10*MaxExponent || n < -10*MaxExponent {
			return decimal{}, outOfRange(s)
		}
		e = n
	}
	// 0.digits × 10^exp; each leading zero dropped lowers the exponent.
	d.exp = e + len(intPart) - (len(intPart) + len(frac) - len(digits))
	d.digits = strings.TrimRight(digits, "0")
	// 1e400 is 0.1 × 10^401, 1e-400 is 0.1 × 10^-399.
	if d.exp > MaxExponent+1 || d.exp < -MaxExponent+1 {
		return decimal{}, outOfRange(s)
	}
	return d, nil
}

func outOfRange(s string) error {
	return &Error{Problem: fmt.Sprintf(
		"the number %s is out of range; numbers must be 0 or have a decimal exponent from -%d to %d (1e-%d to 9.99e%d in magnitude); send others as strings", clip(s), MaxExponent, MaxExponent, MaxExponent, MaxExponent)}
}

// exactDouble reports whether RFC 8785 writes d with d's value: the
// shortest text of the double nearest to d has the value d.
func (d decimal) exactDouble() bool {
	f, err := strconv.ParseFloat(d.String(), 64)
	if err != nil { // out of the double range
		return false
	}
	short, err := parseDecimal(strconv.FormatFloat(f, 'e', -1, 64))
	return err == nil && short == d
}

// String writes d as "[-]0.<digits>e<exp>" ("0" for zero): one text per
// value.
func (d decimal) String() string {
	if d.digits == "" {
		return "0"
	}
	sign := ""
	if d.neg {
		sign = "-"
	}
	return sign + "0." + d.digits + "e" + strconv.Itoa(d.exp)
}

// pointerEscaper escapes one reference token (RFC 6901, section 3).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escape(token string) string { return pointerEscaper.Replace(token) }

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:40] + "…"
}

// WithoutMembers returns the JSON object raw without its top-level members
// called names. The other members keep their values byte for byte (numbers
// keep their text; only whitespace between tokens goes), though not their
// order. raw is returned as it is when it has none of the members.
func WithoutMembers(raw json.RawMessage, names ...string) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	found := false
	for _, n := range names {
		if _, ok := obj[n]; ok {
			delete(obj, n)
			found = true
		}
	}
	if !found {
		return raw, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
