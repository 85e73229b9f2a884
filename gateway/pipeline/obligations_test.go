package pipeline

import (
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

func TestApplyObligations(t *testing.T) {
	cases := []struct {
		note     string
		res      *gateway.ToolResult
		redact   []string
		wantText string
		gone     string
	}{
		{
			note:     "structured only: rendered after redaction",
			res:      &gateway.ToolResult{StructuredContent: map[string]any{"name": "Acme", "budget_remaining": 12.5}},
			redact:   []string{"budget_remaining"},
			wantText: `{"name":"Acme"}`,
			gone:     "budget_remaining",
		},
		{
			note: "structured content replaces the upstream's own blocks",
			res: &gateway.ToolResult{
				Content:           []map[string]any{{"type": "text", "text": "plan_tier is pro"}},
				StructuredContent: map[string]any{"plan_tier": "pro", "slug": "acme"},
			},
			redact:   []string{"plan_tier"},
			wantText: `{"slug":"acme"}`,
			gone:     "plan_tier",
		},
		{
			note:     "nested objects are redacted too",
			res:      &gateway.ToolResult{StructuredContent: map[string]any{"workspace": map[string]any{"budget_remaining": 3, "id": "ws"}}},
			redact:   []string{"budget_remaining"},
			wantText: `{"workspace":{"id":"ws"}}`,
			gone:     "budget_remaining",
		},
		{
			note:     "text block holding a JSON array",
			res:      &gateway.ToolResult{Content: []map[string]any{{"type": "text", "text": `[{"budget_remaining":1,"id":"a"}]`}}},
			redact:   []string{"budget_remaining"},
			wantText: `[{"id":"a"}]`,
			gone:     "budget_remaining",
		},
		{
			note:     "prose cannot be checked: withheld",
			res:      &gateway.ToolResult{Content: []map[string]any{{"type": "text", "text": "budget_remaining is 12"}}},
			redact:   []string{"budget_remaining"},
			wantText: "[content withheld: the policy requires budget_remaining to be removed from this result, and this text block cannot be checked for them]",
		},
		{
			note:     "embedded resource: withheld",
			res:      &gateway.ToolResult{Content: []map[string]any{{"type": "resource", "resource": map[string]any{"text": "budget_remaining: 12"}}}},
			redact:   []string{"budget_remaining"},
			wantText: "[content withheld: the policy requires budget_remaining to be removed from this result, and this resource block cannot be checked for them]",
		},
		{
			note:     "no obligations: prose passes untouched",
			res:      &gateway.ToolResult{Content: []map[string]any{{"type": "text", "text": "plan_tier is pro"}}},
			wantText: "plan_tier is pro",
		},
		{
			note:     "no obligations, no content: empty content array",
			res:      &gateway.ToolResult{},
			wantText: "",
		},
	}
	for _, c := range cases {
		t.Run(c.note, func(t *testing.T) {
			applyObligations(c.res, gateway.Obligations{Redact: c.redact})
			if c.res.Content == nil {
				t.Fatal("content is nil; MCP needs an array")
			}
			text := ""
			if len(c.res.Content) > 0 {
				text, _ = c.res.Content[0]["text"].(string)
			}
			if text != c.wantText {
				t.Errorf("text %q, want %q", text, c.wantText)
			}
			if c.gone != "" {
				if _, ok := c.res.StructuredContent[c.gone]; ok || strings.Contains(text, c.gone) {
					t.Errorf("%s survived redaction", c.gone)
				}
			}
		})
	}
}
