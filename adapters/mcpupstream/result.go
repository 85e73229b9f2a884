package mcpupstream

import (
	"encoding/json"
	"fmt"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mapResult turns the upstream's CallToolResult into a gateway.ToolResult.
// Content blocks keep their wire shape (type, text, data, mimeType, ...). An
// object structuredContent becomes StructuredContent; any other JSON value
// (allowed since SEP-2106) cannot live in that map, so when the upstream sent
// no content blocks it is rendered as one JSON text block instead of being
// lost.
func mapResult(res *mcp.CallToolResult) (*gateway.ToolResult, error) {
	out := &gateway.ToolResult{IsError: res.IsError, Content: make([]map[string]any, 0, len(res.Content))}
	for _, c := range res.Content {
		block, err := toMap(c)
		if err != nil {
			return nil, gateway.Wrap(gateway.EUnavailable, err, "upstream MCP server sent a content block the gateway cannot re-encode")
		}
		out.Content = append(out.Content, block)
	}
	if res.StructuredContent == nil {
		return out, nil
	}
	if obj, err := toMap(res.StructuredContent); err == nil {
		out.StructuredContent = obj
		return out, nil
	}
	if len(out.Content) == 0 {
		text, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, gateway.Wrap(gateway.EUnavailable, err, "upstream MCP server sent structuredContent the gateway cannot re-encode")
		}
		out.Content = append(out.Content, map[string]any{"type": "text", "text": string(text)})
	}
	return out, nil
}

// toMap re-encodes v as a JSON object; it fails when v is not an object.
func toMap(v any) (map[string]any, error) {
	if m, ok := v.(map[string]any); ok {
		return m, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("JSON value %s is not an object", raw)
	}
	return m, nil
}
