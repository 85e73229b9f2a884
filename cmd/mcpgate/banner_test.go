package main

import (
	"bytes"
	"strings"
	"testing"
)

// The dev banner names the console's address (issue 15: make run prints
// the console URL).
func TestDevBannerPrintsConsoleURL(t *testing.T) {
	var out bytes.Buffer
	printDevBanner(&out, "http://127.0.0.1:8080", "agent-token", "admin-token")
	if !strings.Contains(out.String(), "console      : http://127.0.0.1:8080/console   (sign in with the admin token)") {
		t.Errorf("dev banner lacks the console URL:\n%s", out.String())
	}
}
