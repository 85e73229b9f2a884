package gateway_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

func TestNotDispatched(t *testing.T) {
	cause := context.Canceled
	err := gateway.Wrap(gateway.EUnavailable, gateway.NotDispatched(cause), "call cancelled before it ran")
	if !errors.Is(err, gateway.ErrNotDispatched) || !errors.Is(err, context.Canceled) {
		t.Errorf("%v: want both the marker and the cause to be found", err)
	}
	if got := err.Error(); got != "call cancelled before it ran: context canceled" {
		t.Errorf("Error() = %q; the marker must not change the text", got)
	}
	if gateway.ErrorCodeOf(err) != gateway.EUnavailable {
		t.Errorf("code %s, want the wrapping error's", gateway.ErrorCodeOf(err))
	}
	if !errors.Is(gateway.NotDispatched(nil), gateway.ErrNotDispatched) {
		t.Error("NotDispatched(nil) is not the marker")
	}
	if errors.Is(gateway.Wrap(gateway.EUnavailable, cause, "timed out"), gateway.ErrNotDispatched) {
		t.Error("an unmarked error is found as not dispatched")
	}
}

// Messages name the upstream without its credentials or query.
func TestDisplayURLHidesSecrets(t *testing.T) {
	got := gateway.DisplayURL("http://svc:s3cret@tools.internal:8080/mcp?api_key=TOPSECRET#x")
	if strings.Contains(got, "s3cret") || strings.Contains(got, "TOPSECRET") || got != "http://tools.internal:8080" {
		t.Errorf("DisplayURL = %q", got)
	}
	// A key without a value may be the secret itself.
	if got := gateway.DisplayURL("http://tools.internal/mcp?BARE-SECRET-9&region=eu"); strings.Contains(got, "BARE-SECRET-9") || got != "http://tools.internal" {
		t.Errorf("DisplayURL of a bare query key = %q", got)
	}
}
