package mcpupstream

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The forwarder the adapter used before its raw JSON-RPC one: the Go SDK's
// ClientSession and a mapping of its CallToolResult. It is kept here only
// as the baseline of BenchmarkCallTool.

// sdkForwarder forwards tools/call through one SDK client session.
type sdkForwarder struct{ s *mcp.ClientSession }

func newSDKForwarder(tb testing.TB, url string) *sdkForwarder {
	tb.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: DefaultClientName, Version: DefaultClientVersion}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: keepAliveClient(), DisableStandaloneSSE: true, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: DefaultProtocolVersion})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return &sdkForwarder{s: s}
}

func (f *sdkForwarder) CallTool(ctx context.Context, call gateway.ToolCall) (*gateway.ToolResult, error) {
	args, gerr := arguments(call)
	if gerr != nil {
		return nil, gerr
	}
	meta := mcp.Meta{}
	for k, v := range map[string]string{MetaWorkspaceID: call.WorkspaceID, MetaTaskID: call.TaskID, MetaActor: call.Actor} {
		if v != "" {
			meta[k] = v
		}
	}
	res, err := f.s.CallTool(ctx, &mcp.CallToolParams{Name: call.Tool, Arguments: args, Meta: meta})
	if err != nil {
		return nil, err
	}
	return mapResult(res)
}

// mapResult turns the upstream's CallToolResult into a gateway.ToolResult.
// Content blocks keep their wire shape (type, text, data, mimeType, ...). An
// object structuredContent becomes StructuredContent; any other JSON value
// (allowed since SEP-2106) cannot live in that map, so when the upstream sent
// no content blocks it is rendered as one JSON text block instead of being
// lost.
func mapResult(res *mcp.CallToolResult) (*gateway.ToolResult, error) {
	content, err := contentBlocks(res.Content)
	if err != nil {
		return nil, gateway.Wrap(gateway.EUnavailable, err, "upstream MCP server sent a content block the gateway cannot re-encode")
	}
	out := &gateway.ToolResult{IsError: res.IsError, Content: content}
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

// contentBlocks turns the SDK's content blocks into their wire objects. A
// plain text block (no annotations, no _meta), the usual kind, is built
// directly; the others are encoded and decoded together, in one round trip
// for the whole result rather than one per block.
func contentBlocks(cs []mcp.Content) ([]map[string]any, error) {
	out := make([]map[string]any, len(cs))
	var rest []int // indexes of the blocks to re-encode
	for i, c := range cs {
		if t, ok := c.(*mcp.TextContent); ok && t.Meta == nil && t.Annotations == nil {
			out[i] = map[string]any{"type": "text", "text": t.Text}
			continue
		}
		rest = append(rest, i)
	}
	if len(rest) == 0 {
		return out, nil
	}
	others := make([]mcp.Content, len(rest))
	for j, i := range rest {
		others[j] = cs[i]
	}
	raw, err := json.Marshal(others)
	if err != nil {
		return nil, err
	}
	var blocks []map[string]any
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, err
	}
	if len(blocks) != len(rest) {
		return nil, fmt.Errorf("%d content blocks re-encoded as %d", len(rest), len(blocks))
	}
	for j, i := range rest {
		if blocks[j] == nil {
			return nil, fmt.Errorf("content block %d is not a JSON object", i)
		}
		out[i] = blocks[j]
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
