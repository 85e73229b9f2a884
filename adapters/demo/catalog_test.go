package demo

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// catalogPath is the SupaCloud catalog the gateway validates arguments
// against; the demo reads no code from it, only checks it agrees.
const catalogPath = "../../tools/supacloud/catalog.json"

// TestRequiredArgumentsMatchCatalog keeps the demo's required arguments in
// step with the catalog's input schemas, so every call the gateway lets
// through reaches a handler.
func TestRequiredArgumentsMatchCatalog(t *testing.T) {
	raw, err := os.ReadFile(catalogPath)
	if err != nil {
		t.Skipf("catalog not available: %v", err)
	}
	var cat struct {
		Tools []struct {
			Name        string `json:"name"`
			InputSchema struct {
				Required []string `json:"required"`
			} `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &cat); err != nil {
		t.Fatalf("decoding %s: %v", catalogPath, err)
	}
	b := New()
	for _, ct := range cat.Tools {
		t.Run(ct.Name, func(t *testing.T) {
			impl, ok := b.tools[ct.Name]
			if !ok {
				t.Fatalf("catalog tool %s is not implemented", ct.Name)
			}
			want := slices.DeleteFunc(slices.Clone(ct.InputSchema.Required), func(s string) bool { return s == "workspace_id" })
			got := slices.Clone(impl.required)
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("demo requires %v, catalog requires %v", got, want)
			}
		})
	}
	if len(cat.Tools) != len(b.tools) {
		t.Errorf("catalog has %d tools, demo %d", len(cat.Tools), len(b.tools))
	}
}
