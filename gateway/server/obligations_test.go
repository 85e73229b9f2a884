package server

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
			note: "upstream text block holding JSON is redacted too",
			res: &gateway.ToolResult{
				Content:           []map[string]any{{"type": "text", "text": `{"plan_tier":"pro","slug":"acme"}`}},
				StructuredContent: map[string]any{"plan_tier": "pro", "slug": "acme"},
			},
			redact:   []string{"plan_tier"},
			wantText: `{"slug":"acme"}`,
			gone:     "plan_tier",
		},
		{
			note:     "plain text is left alone",
			res:      &gateway.ToolResult{Content: []map[string]any{{"type": "text", "text": "plan_tier is pro"}}},
			redact:   []string{"plan_tier"},
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
