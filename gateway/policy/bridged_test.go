package policy_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/policy"
)

// A bundle's data.supacloud.bridged_tools overrides what the gateway tells
// it of a bridged tool (its tier and data labels here), before the
// decision and in the tools/list input, never a catalog tool's; the
// upstream's annotations reach input.tool; and a ToolSet's new list is
// what tools/list ranges over next, without a reload.
func TestBridgedOverridesAndToolSet(t *testing.T) {
	src := `package supacloud

bridged_tools := {"forge.list": {"tier": "ops", "data_labels": ["source_code"]}}

decision := {"allow": input.tool.tier == "ops", "visible": true, "tier": input.tool.tier,
	"reasons": [{"code": "labels", "message": concat(",", object.get(input.tool, "data_labels", []))},
		{"code": "claims", "message": sprintf("%v", [object.get(input.tool, "upstream_annotations", {})])}]}

visible_tools contains t.name if {
	some t in input.tools
	t.tier == "ops"
}
`
	forge := policy.ToolRef{Name: "forge.list", Tier: gateway.TierRead, Upstream: "forge", UpstreamAnnotations: []byte(`{"readOnlyHint":true}`)}
	set := policy.NewToolSet([]policy.ToolRef{{Name: "project.get", Tier: gateway.TierRead}})
	e, err := policy.New(context.Background(), policy.Options{FS: fstest.MapFS{"supacloud/d.rego": {Data: []byte(src)}},
		Edition: gateway.EditionCommunity, ToolSet: set})
	if err != nil {
		t.Fatal(err)
	}
	p := &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "u", WorkspaceID: "ws", TaskID: "t"}
	c := &gateway.Caller{}
	d, err := e.Decide(context.Background(), p, c, forge, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allow || d.Tier != gateway.TierOps || d.Reasons[0].Message != "source_code" || d.Reasons[1].Message != `{"readOnlyHint": true}` {
		t.Errorf("bridged decision %+v; want the overridden tier ops, its data labels and the upstream's claims", d)
	}
	catalog := forge
	catalog.Upstream, catalog.UpstreamAnnotations = "", nil
	if d, err := e.Decide(context.Background(), p, c, catalog, nil); err != nil || d.Allow || d.Tier != gateway.TierRead {
		t.Errorf("a catalog tool of the same name: %+v %v; want its own tier, not the override", d, err)
	}
	if v, err := e.Visible(context.Background(), p, c); err != nil || len(v) != 0 {
		t.Fatalf("visible before the bridged tool joined: %v %v", v, err)
	}
	set.Set([]policy.ToolRef{{Name: "project.get", Tier: gateway.TierRead}, forge})
	if v, err := e.Visible(context.Background(), p, c); err != nil || !v["forge.list"] || len(v) != 1 {
		t.Errorf("visible after the ToolSet changed: %v %v; want forge.list (tier ops by the override)", v, err)
	}
}
