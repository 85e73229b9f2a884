package approvals

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"

	"github.com/mcpgate/mcpgate/gateway/canon"
)

// CanonicalArguments returns the form of args an approval stores and
// shows: their RFC 8785 canonical JSON (gateway/canon), the text
// ArgumentsHash hashes. Arguments holding a number that RFC 8785 cannot
// write exactly (more digits than a float64 keeps) have no single RFC 8785
// document, so they are written as JSON with sorted member names and every
// number's own digits, never rounded. Errors: a value with no JSON form.
func CanonicalArguments(args map[string]any) (json.RawMessage, error) {
	if args == nil {
		args = map[string]any{}
	}
	b, err := canon.Canonical(args)
	if err != nil {
		return nil, err
	}
	if json.Valid(b) {
		return b, nil
	}
	// canon appended the exact numbers after the text: write them in.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args); err != nil { // maps in sorted order; json.Number as written
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Pretty returns raw (an approval's arguments) indented for a person,
// with every invisible format or control character (bidi overrides,
// zero-width spaces, tag characters, DEL) written as its \u escape
// (Visible), so the text shown is the text that runs. Arguments not recorded (an approval stored before
// they were kept: nil, or null once it went through JSON, as the console
// reads it from the admin API) read "(not recorded)".
func Pretty(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "(not recorded)"
	}
	// Decoded and written again rather than indented as is: JSON that
	// passed through an encoder that escapes HTML (\u003c for <) shows
	// the characters themselves; numbers keep every digit (UseNumber).
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if dec.Decode(&v) != nil || enc.Encode(v) != nil {
		return string(raw)
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	// Only inside strings (JSON whitespace is plain): an escape keeps the
	// document's meaning.
	return Visible(buf.String())
}

// Visible returns s with every invisible format character (bidi
// overrides, zero-width spaces, tag characters, the line and paragraph
// separators) and every control character but newline and tab written as
// its \u escape, so the text a person reads is the text a program gets:
// the approvals' arguments (Pretty) and a bridged tool's definition under
// review (docs/requirements.md#pinned-tools) are shown through it.
func Visible(s string) string {
	var out strings.Builder
	for _, r := range s {
		if unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' || unicode.IsControl(r) && r != '\n' && r != '\t' {
			if r > 0xFFFF {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&out, `\u%04x\u%04x`, r1, r2)
				continue
			}
			fmt.Fprintf(&out, `\u%04x`, r)
			continue
		}
		out.WriteRune(r)
	}
	return out.String()
}
