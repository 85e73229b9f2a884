package upstreams

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/mcpgate/mcpgate/gateway"
)

// Secret is a value resolved from the upstreams file that may hold a key
// (a header value, an OAuth client secret, an upstream URL whose path or
// query may carry a token). Value gives it to the code that sends it;
// every printed or encoded form (fmt's verbs %v %+v %#v %s %q, String,
// json.Marshal, slog, and zap, which encodes structs with encoding/json
// or names a Stringer) shows only Shown: "[redacted]", or for a URL its
// scheme, host and port. The zero value is empty.
type Secret struct {
	// box is a pointer so that even fmt's reflection over a struct that
	// holds a Secret (the %!verb path, which calls no method) prints an
	// address, not the value.
	box *secretBox
}

type secretBox struct {
	value string
	shown string
}

// Redacted is how a Secret other than a URL is shown.
const Redacted = "[redacted]"

// NewSecret returns v as a Secret shown as Redacted.
func NewSecret(v string) Secret { return Secret{&secretBox{value: v, shown: Redacted}} }

// NewURLSecret returns the URL raw as a Secret shown as
// gateway.DisplayURL(raw).
func NewURLSecret(raw string) Secret {
	return Secret{&secretBox{value: raw, shown: gateway.DisplayURL(raw)}}
}

// Value is the secret itself, for the request that carries it.
func (s Secret) Value() string {
	if s.box == nil {
		return ""
	}
	return s.box.value
}

// IsZero reports whether s is empty.
func (s Secret) IsZero() bool { return s.Value() == "" }

// String is the shown form, never the value.
func (s Secret) String() string {
	if s.box == nil {
		return ""
	}
	return s.box.shown
}

// GoString is the shown form (%#v).
func (s Secret) GoString() string { return s.String() }

// Format writes the shown form whatever the verb, so that printing a
// struct that holds s (%v, %+v, %#v) never reaches its fields.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", s.String())
		return
	}
	_, _ = io.WriteString(f, s.String())
}

// MarshalJSON encodes the shown form.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// LogValue is the shown form for log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }
