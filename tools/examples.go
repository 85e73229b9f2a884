package tools

import (
	"encoding/json"
	"strings"
)

// exampleSchema is the part of a JSON Schema ExampleArguments reads.
type exampleSchema struct {
	Type       any                      `json:"type"`
	Properties map[string]exampleSchema `json:"properties"`
	Required   []string                 `json:"required"`
	Items      *exampleSchema           `json:"items"`
	Enum       []any                    `json:"enum"`
	Examples   []any                    `json:"examples"`
	MinLength  int                      `json:"minLength"`
	MinItems   int                      `json:"minItems"`
	Minimum    *float64                 `json:"minimum"`
}

// ExampleArguments returns the smallest arguments object the schema of
// tool name describes: every required property and nothing else, each
// value its schema's first example, else its first enum value, else the
// shortest value of its type (strings of minLength "x"s, numbers at their
// minimum, arrays of minItems items, objects of their required
// properties). It serves demos and tests ("every tool answers with valid
// arguments"); a schema whose pattern needs a particular string must give
// an example. ok is false for a tool the catalog does not hold.
func (c *Catalog) ExampleArguments(name string) (args map[string]any, ok bool) {
	e, ok := c.byName[name]
	if !ok {
		return nil, false
	}
	var s exampleSchema
	if err := json.Unmarshal(e.tool.InputSchema, &s); err != nil {
		return map[string]any{}, true // cannot happen: the schema compiled
	}
	return exampleProps(s), true
}

func exampleProps(s exampleSchema) map[string]any {
	out := make(map[string]any, len(s.Required))
	for _, r := range s.Required {
		out[r] = exampleFor(s.Properties[r])
	}
	return out
}

func exampleFor(s exampleSchema) any {
	switch {
	case len(s.Examples) > 0:
		return s.Examples[0]
	case len(s.Enum) > 0:
		return s.Enum[0]
	}
	switch s.Type {
	case "string":
		return strings.Repeat("x", max(s.MinLength, 1))
	case "integer", "number":
		if s.Minimum != nil {
			return *s.Minimum
		}
		return 1.0
	case "boolean":
		return true
	case "array":
		items := make([]any, 0, s.MinItems)
		for range s.MinItems {
			if s.Items == nil {
				items = append(items, "x")
				continue
			}
			items = append(items, exampleFor(*s.Items))
		}
		return items
	}
	return exampleProps(s)
}
