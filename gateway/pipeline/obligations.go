package pipeline

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpgate/mcpgate/gateway"
)

// applyObligations carries out a decision's obligations on an adapter result.
//
// Redaction fails closed: the named fields are removed at every depth of
// structuredContent, and when there is structuredContent the content blocks
// are rebuilt from it (an upstream's own blocks could repeat the data in a
// form the gateway cannot redact). Without structuredContent, text blocks
// holding JSON are redacted at every depth; any other block (prose, images,
// resources) is withheld and replaced by a note saying why.
//
// A result with structured content but no content blocks gets one text block
// rendering it, so clients that read only text see the same (redacted) data.
func applyObligations(res *gateway.ToolResult, ob gateway.Obligations) {
	if len(ob.Redact) > 0 {
		if res.StructuredContent != nil {
			redactDeep(res.StructuredContent, ob.Redact)
			res.Content = nil
		} else {
			res.Content = redactBlocks(res.Content, ob.Redact)
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		// Encoded once: the reply reuses the same bytes for structuredContent.
		text, err := res.StructuredJSON()
		if err == nil {
			res.Content = []map[string]any{{"type": "text", "text": string(text)}}
		}
	}
	if res.Content == nil {
		res.Content = []map[string]any{}
	}
}

// redactDeep removes fields from v and from every object nested in it.
func redactDeep(v any, fields []string) {
	switch x := v.(type) {
	case map[string]any:
		for _, f := range fields {
			delete(x, f)
		}
		for _, child := range x {
			redactDeep(child, fields)
		}
	case []any:
		for _, child := range x {
			redactDeep(child, fields)
		}
	}
}

func redactBlocks(blocks []map[string]any, fields []string) []map[string]any {
	out := make([]map[string]any, 0, len(blocks))
	for _, block := range blocks {
		if text, ok := block["text"].(string); ok && block["type"] == "text" {
			var doc any
			if json.Unmarshal([]byte(text), &doc) == nil {
				redactDeep(doc, fields)
				if b, err := json.Marshal(doc); err == nil {
					out = append(out, map[string]any{"type": "text", "text": string(b)})
					continue
				}
			}
		}
		out = append(out, map[string]any{"type": "text", "text": fmt.Sprintf(
			"[content withheld: the policy requires %s to be removed from this result, and this %v block cannot be checked for them]",
			strings.Join(fields, ", "), block["type"])})
	}
	return out
}
