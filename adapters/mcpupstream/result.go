package mcpupstream

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mcpgate/mcpgate/gateway"
)

// decodeResult decodes the upstream's CallToolResult once, numbers as
// json.Number, so that every digit the upstream sent reaches the client.
// Content blocks keep their wire shape (type, text, data, mimeType, ...).
// An object structuredContent becomes StructuredContent; any other JSON
// value (allowed since SEP-2106) cannot live in that map, so when the
// upstream sent no content blocks it is rendered as one JSON text block
// instead of being lost. An input-required result (2026-07-28) is a result
// whose Input holds its inputRequests and requestState as they came.
func decodeResult(raw json.RawMessage) (*gateway.ToolResult, error) {
	var res struct {
		Content           []map[string]any `json:"content"`
		StructuredContent json.RawMessage  `json:"structuredContent"`
		IsError           bool             `json:"isError"`
		ResultType        string           `json:"resultType"`
		InputRequests     json.RawMessage  `json:"inputRequests"`
		RequestState      json.RawMessage  `json:"requestState"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&res); err != nil {
		return nil, err
	}
	if res.ResultType == "input_required" {
		in := &gateway.InputRequired{}
		if r := bytes.TrimSpace(res.InputRequests); len(r) > 0 && r[0] == '{' {
			in.Requests = r
		}
		if st := bytes.TrimSpace(res.RequestState); len(st) > 0 && st[0] == '"' {
			in.State = st
		}
		if in.Requests == nil && in.State == nil {
			return nil, fmt.Errorf("an input-required result needs inputRequests (an object) or requestState (a string)")
		}
		return &gateway.ToolResult{Content: []map[string]any{}, Input: in}, nil
	}
	for i, b := range res.Content {
		if b == nil {
			return nil, fmt.Errorf("content block %d is not a JSON object", i)
		}
	}
	out := &gateway.ToolResult{IsError: res.IsError, Content: res.Content}
	if out.Content == nil {
		out.Content = []map[string]any{}
	}
	sc := bytes.TrimSpace(res.StructuredContent)
	if len(sc) == 0 || bytes.Equal(sc, []byte("null")) {
		return out, nil
	}
	if sc[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(sc))
		dec.UseNumber()
		if err := dec.Decode(&out.StructuredContent); err != nil {
			return nil, err
		}
		return out, nil
	}
	if len(out.Content) == 0 {
		var text bytes.Buffer
		if err := json.Compact(&text, sc); err != nil {
			return nil, err
		}
		out.Content = append(out.Content, map[string]any{"type": "text", "text": text.String()})
	}
	return out, nil
}
