package tools_test

import (
	"fmt"

	"github.com/mcpgate/mcpgate/tools"
)

func ExampleCatalog_Validate() {
	catalog, err := tools.Load()
	if err != nil {
		panic(err)
	}
	tool, _ := catalog.Lookup("run.events")
	fmt.Println(tool.Tier, tool.External, tool.ReadOnly)

	fmt.Println(catalog.Validate("run.events", map[string]any{"run_id": "run_42", "limit": 100.0}))
	fmt.Println(catalog.Validate("run.events", map[string]any{"limit": 900.0}))
	// Output:
	// read true true
	// <nil>
	// invalid arguments for tool run.events: /limit: must be at most 500, got 900; /run_id: missing required property (the tool's inputSchema in tools/list shows what it accepts)
}
