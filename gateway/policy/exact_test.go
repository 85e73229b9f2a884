package policy

import (
	"encoding/json"
	"testing"
)

// TestArgumentsTermKeepsEveryDigit: a json.Number argument reaches the
// policy input as the number the client sent, not its nearest float64.
func TestArgumentsTermKeepsEveryDigit(t *testing.T) {
	term, err := argumentsTerm(map[string]any{"n": json.Number("9007199254740993")})
	if err != nil {
		t.Fatal(err)
	}
	if got := term.String(); got != `{"n": 9007199254740993}` {
		t.Errorf("policy input %s, want n 9007199254740993", got)
	}
}
