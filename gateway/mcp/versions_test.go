package mcp

import (
	"slices"
	"testing"
)

// TestVersionLists: the lists the transport answers with are the table's
// rows, as they were when they were written out by hand.
func TestVersionLists(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want []string
	}{
		{"Streamable HTTP", supportedVersions, []string{Version20251125, Version20250618, Version20250326}},
		{"HTTP+SSE", legacyVersions, []string{Version20251125, Version20250618, Version20250326, Version20241105}},
		{"stateless", modernVersions, []string{Version20260728}},
		{"discover", discoverVersions, []string{Version20260728, Version20251125, Version20250618, Version20250326}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s versions %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if v := versionOf("2099-01-01"); v.Streamable || v.Stateless || v.Batching || !v.InputErrorsAsResults {
		t.Errorf("an unknown later version: %+v; want no transport and input errors as results", v)
	}
}
