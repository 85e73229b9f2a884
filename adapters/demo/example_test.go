package demo_test

import (
	"context"
	"fmt"

	"github.com/mcpgate/mcpgate/adapters/demo"
	"github.com/mcpgate/mcpgate/gateway"
)

func ExampleBackend_CallTool() {
	b := demo.New()
	ctx := context.Background()
	res, err := b.CallTool(ctx, gateway.ToolCall{
		WorkspaceID: "ws-acme", Tool: "resources.list", Arguments: map[string]any{"kind": "postgres"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.StructuredContent["resources"])

	res, _ = b.CallTool(ctx, gateway.ToolCall{
		WorkspaceID: "ws-acme", Tool: "project.get", Arguments: map[string]any{"project_id": "prj-9"},
	})
	fmt.Println(res.IsError, res.Content[0]["text"])
	// Output:
	// [map[kind:postgres name:orders-db status:connected]]
	// true project prj-9 not found in this workspace
}
