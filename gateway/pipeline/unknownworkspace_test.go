package pipeline_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp"
)

// A workspace the store does not know: tools/list shows no tool (listed ⇔
// callable) and tools/call says what is wrong, as a refusal the transport
// answers with a tool execution error.
func TestUnknownWorkspace(t *testing.T) {
	f := newFixture(t)
	p := *f.p
	p.WorkspaceID = "ws-gone"
	list, err := f.pl.ListTools(context.Background(), &p)
	if err != nil || len(list) != 0 {
		t.Fatalf("tools/list = %v, %v; want no tools and no error", list, err)
	}
	_, err = f.pl.CallTool(context.Background(), &p, &gateway.CallRequest{Name: "projects.list", Arguments: map[string]any{}, RawArguments: []byte(`{}`)})
	var ge *gateway.Error
	if !errors.As(err, &ge) || ge.Code != gateway.EForbidden || len(ge.Reasons) == 0 || ge.Reasons[0].Code != "workspace.unknown" {
		t.Fatalf("tools/call = %v, want EForbidden with reason workspace.unknown", err)
	}
	if te := mcp.ToolError(err, mcp.Version20251125); te == nil || te.Content[0].Text != ge.Message {
		t.Fatalf("reply %+v, want a tool execution error with the message", te)
	}
}
