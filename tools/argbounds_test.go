package tools

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// boundsCatalog has one tool whose properties cover the size bounds
// PolicyArguments understands, and some it cannot bound.
const boundsCatalog = `{"tools": [{"name": "t.bounds", "tier": "read", "description": "bounds", "read_only": true,
  "input_schema": {"type": "object", "additionalProperties": false, "$defs": {"short": {"type": "string", "maxLength": 2}},
    "properties": {
      "slug": {"type": "string", "maxLength": 8},
      "tags": {"type": "array", "maxItems": 2, "items": {"type": "string", "maxLength": 4}},
      "mode": {"enum": ["fast", "slow"]},
      "ref": {"$ref": "#/$defs/short"},
      "nested": {"type": "object", "maxProperties": 2, "additionalProperties": false, "properties": {"k": {"type": "string", "maxLength": 3}, "j": {}}},
      "free": {"type": "object"},
      "n": {"type": "integer"},
      "workspace_id": {"type": "string"}}}},
  {"name": "t.open", "tier": "read", "description": "open", "read_only": true,
   "input_schema": {"type": "object", "properties": {"slug": {"type": "string", "maxLength": 8}}}}]}`

func TestPolicyArguments(t *testing.T) {
	c, err := Parse([]byte(boundsCatalog))
	if err != nil {
		t.Fatal(err)
	}
	mib := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		note    string
		tool    string
		args    map[string]any
		dropped []string // the arguments left out of the policy input
	}{
		{note: "within bounds", tool: "t.bounds", args: map[string]any{"slug": "abcdefgh", "tags": []any{"a", "b"}, "mode": "fast", "ref": "ab", "nested": map[string]any{"k": "abc"}}},
		{note: "maxLength counts characters, not bytes", tool: "t.bounds", args: map[string]any{"slug": "ääääääää"}},
		{note: "string over maxLength", tool: "t.bounds", args: map[string]any{"slug": "abcdefghi", "ref": "ab"}, dropped: []string{"slug"}},
		{note: "1 MiB string", tool: "t.bounds", args: map[string]any{"slug": mib}, dropped: []string{"slug"}},
		{note: "huge value of another type for a bounded string", tool: "t.bounds", args: map[string]any{"slug": []any{mib}}, dropped: []string{"slug"}},
		{note: "small value of another type is not a size problem", tool: "t.bounds", args: map[string]any{"slug": 5.0, "n": "x"}},
		{note: "array over maxItems", tool: "t.bounds", args: map[string]any{"tags": []any{"a", "b", "c"}}, dropped: []string{"tags"}},
		{note: "array item over maxLength", tool: "t.bounds", args: map[string]any{"tags": []any{"a", "abcde"}}, dropped: []string{"tags"}},
		{note: "enum value longer than every member", tool: "t.bounds", args: map[string]any{"mode": "medium"}, dropped: []string{"mode"}},
		{note: "enum value of a member's length", tool: "t.bounds", args: map[string]any{"mode": "fest"}},
		{note: "bound behind a $ref", tool: "t.bounds", args: map[string]any{"ref": "abc"}, dropped: []string{"ref"}},
		{note: "object over maxProperties", tool: "t.bounds", args: map[string]any{"nested": map[string]any{"k": "a", "j": 1.0, "l": 2.0}}, dropped: []string{"nested"}},
		{note: "nested property over maxLength", tool: "t.bounds", args: map[string]any{"nested": map[string]any{"k": "abcd"}}, dropped: []string{"nested"}},
		{note: "nested property the schema refuses", tool: "t.bounds", args: map[string]any{"nested": map[string]any{"z": mib}}, dropped: []string{"nested"}},
		{note: "unbounded property keeps any size", tool: "t.bounds", args: map[string]any{"free": map[string]any{"a": mib}, "workspace_id": mib}},
		{note: "property the schema refuses", tool: "t.bounds", args: map[string]any{"zzz": "a", "slug": "a"}, dropped: []string{"zzz"}},
		{note: "extra property a schema accepts", tool: "t.open", args: map[string]any{"zzz": mib, "slug": mib}, dropped: []string{"slug"}},
		{note: "unknown tool: unchanged", tool: "t.none", args: map[string]any{"slug": mib}},
	} {
		t.Run(tc.note, func(t *testing.T) {
			orig := maps.Clone(tc.args)
			got := c.PolicyArguments(tc.tool, tc.args)
			if len(tc.args) != len(orig) {
				t.Fatal("the caller's arguments were changed")
			}
			for k := range tc.args {
				_, kept := got[k]
				want := !slices.Contains(tc.dropped, k)
				if kept != want {
					t.Errorf("argument %s kept=%v, want %v", k, kept, want)
				}
			}
			if len(got) != len(tc.args)-len(tc.dropped) {
				t.Errorf("policy arguments %d, want %d", len(got), len(tc.args)-len(tc.dropped))
			}
			// Whatever is left out must be refused by the schema, so
			// leaving it out can never let an invalid call through.
			if len(tc.dropped) > 0 && c.Validate(tc.tool, tc.args) == nil {
				t.Error("an argument was left out that the schema accepts")
			}
		})
	}
}

// The shipped catalog bounds script.run's slug, the argument the bundle reads.
func TestPolicyArgumentsBoundTheSlug(t *testing.T) {
	c := mustLoad(t)
	args := map[string]any{"slug": strings.Repeat("s", 129), "inputs": map[string]any{"n": 1.0}}
	got := c.PolicyArguments("script.run", args)
	if _, ok := got["slug"]; ok {
		t.Fatal("a 129-character slug reaches the policy input; the schema allows 128")
	}
	if _, ok := got["inputs"]; !ok {
		t.Fatal("the inputs argument was left out")
	}
	ok := map[string]any{"slug": strings.Repeat("s", 128)}
	if got := c.PolicyArguments("script.run", ok); len(got) != 1 {
		t.Fatal("a 128-character slug was left out")
	}
}
