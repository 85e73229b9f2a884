package server

import (
	"encoding/json"

	"github.com/mcpgate/mcpgate/gateway"
)

// applyObligations carries out a decision's obligations on an adapter result:
// redacted fields are removed from structuredContent and from text blocks
// that hold a JSON object. A result with structured content but no content
// blocks gets one text block rendering it, so clients that read only text
// see the same (redacted) data.
func applyObligations(res *gateway.ToolResult, ob gateway.Obligations) {
	if len(ob.Redact) > 0 {
		redact(res.StructuredContent, ob.Redact)
		for _, block := range res.Content {
			redactTextBlock(block, ob.Redact)
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		text, err := json.Marshal(res.StructuredContent)
		if err == nil {
			res.Content = []map[string]any{{"type": "text", "text": string(text)}}
		}
	}
	if res.Content == nil {
		res.Content = []map[string]any{}
	}
}

func redact(obj map[string]any, fields []string) {
	for _, f := range fields {
		delete(obj, f)
	}
}

func redactTextBlock(block map[string]any, fields []string) {
	if block["type"] != "text" {
		return
	}
	text, _ := block["text"].(string)
	var obj map[string]any
	if json.Unmarshal([]byte(text), &obj) != nil {
		return
	}
	redact(obj, fields)
	if b, err := json.Marshal(obj); err == nil {
		block["text"] = string(b)
	}
}
