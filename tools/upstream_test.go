package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

// schema2020 is the conformance suite's json_schema_2020_12_tool schema
// shape: $schema, $defs with $anchor, allOf/anyOf, if/then/else and
// additionalProperties false, none of which the catalog may drop.
const schema2020 = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
 "$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"}}}},
 "properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"phone":{"type":"string"},"email":{"type":"string"}},
 "allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],
 "additionalProperties":false}`

func upstreamFixture() []UpstreamTool {
	return []UpstreamTool{
		{Name: "echo", Description: "Echoes its input.", InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`)},
		{Name: "json_schema_tool", Description: "2020-12 keywords.", InputSchema: json.RawMessage(schema2020)},
		{Name: "draft7", InputSchema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"number"}},"additionalProperties":false}`)},
		{Name: "workspace.info", Description: "Upstream's own idea of workspace.info.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "has space", Description: "Bad name.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "not_object", Description: "Array schema.", InputSchema: json.RawMessage(`{"type":"array"}`)},
		{Name: "no_schema", Description: "No schema."},
		{Name: "external_ref", Description: "Remote $ref.", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"https://example.com/x.json"}}}`)},
		{Name: "bad_keyword", Description: "minimum is a string.", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"number","minimum":"1"}}}`)},
		{Name: "echo", Description: "Listed twice.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
}

func TestWithUpstreamMerges(t *testing.T) {
	base := mustLoad(t)
	for _, tier := range []gateway.Tier{gateway.TierBaseline, gateway.TierRead, gateway.TierOps, gateway.TierDeploy} {
		t.Run(string(tier), func(t *testing.T) {
			c, dropped, err := base.WithUpstream(upstreamFixture(), tier)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := c.Len(), base.Len()+3; got != want {
				t.Fatalf("merged catalog has %d tools, want %d (base + echo, json_schema_tool, draft7)", got, want)
			}
			for _, name := range []string{"echo", "json_schema_tool", "draft7"} {
				tool, ok := c.Lookup(name)
				if !ok {
					t.Fatalf("%s missing after merge", name)
				}
				wantRO := tier == gateway.TierBaseline || tier == gateway.TierRead
				if tool.Tier != tier || tool.ReadOnly != wantRO || tool.External || tool.CarveOut || tool.Confirmation {
					t.Errorf("%s: %+v, want tier %s, read-only %v, no other flags", name, tool, tier, wantRO)
				}
			}
			if tool, _ := c.Lookup("workspace.info"); tool.Tier != gateway.TierRead || !strings.Contains(tool.Description, "workspace") || tool.Description == "Upstream's own idea of workspace.info." {
				t.Errorf("workspace.info must keep the SupaCloud entry, got %+v", tool)
			}
			if tool, _ := c.Lookup("draft7"); tool.Description != "Upstream tool draft7." {
				t.Errorf("missing description not filled: %q", tool.Description)
			}
			wantDropped := []string{"has space", "not_object", "no_schema", "external_ref", "bad_keyword", "echo"}
			if len(dropped) != len(wantDropped) {
				t.Fatalf("dropped %+v, want %v", dropped, wantDropped)
			}
			for i, d := range dropped {
				if d.Name != wantDropped[i] || d.Reason == "" {
					t.Errorf("dropped[%d] = %+v, want %s with a reason", i, d, wantDropped[i])
				}
			}
			if base.Len() != 71 {
				t.Errorf("base catalog changed: %d tools", base.Len())
			}
		})
	}
}

func TestWithUpstreamKeepsSchemaVerbatim(t *testing.T) {
	c, _, err := mustLoad(t).WithUpstream(upstreamFixture(), gateway.TierOps)
	if err != nil {
		t.Fatal(err)
	}
	tool, _ := c.Lookup("json_schema_tool")
	var got map[string]any
	if err := json.Unmarshal(tool.InputSchema, &got); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"$schema", "$defs", "allOf", "additionalProperties"} {
		if _, ok := got[key]; !ok {
			t.Errorf("inputSchema lost %s: %s", key, tool.InputSchema)
		}
	}
	if !strings.Contains(string(tool.InputSchema), `"$anchor":"addressDef"`) {
		t.Errorf("inputSchema lost $anchor: %s", tool.InputSchema)
	}
}

func TestWithUpstreamValidates(t *testing.T) {
	c, _, err := mustLoad(t).WithUpstream(upstreamFixture(), gateway.TierOps)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		note, tool string
		args       map[string]any
		want       string // "" means valid
	}{
		{"required present", "echo", map[string]any{"message": "hi"}, ""},
		{"required missing", "echo", map[string]any{}, "/message: missing required property"},
		{"2020-12 anyOf satisfied", "json_schema_tool", map[string]any{"email": "a@b.c"}, ""},
		{"2020-12 anyOf violated", "json_schema_tool", map[string]any{"name": "x"}, "json_schema_tool"},
		{"2020-12 additionalProperties", "json_schema_tool", map[string]any{"email": "a@b.c", "extra": 1}, "/extra: unknown property"},
		{"draft-07 type", "draft7", map[string]any{"a": "x"}, "/a: expected number"},
		{"draft-07 refuses workspace_id", "draft7", map[string]any{"workspace_id": "ws"}, "/workspace_id: unknown property"},
	}
	for _, tc := range cases {
		t.Run(tc.note, func(t *testing.T) {
			err := c.Validate(tc.tool, tc.args)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			case tc.want != "" && gateway.ErrorCodeOf(err) != gateway.EInvalid:
				t.Fatalf("code %s, want EInvalid", gateway.ErrorCodeOf(err))
			}
		})
	}
}

func TestWithUpstreamRefusesTier(t *testing.T) {
	for _, tier := range []gateway.Tier{gateway.TierScaffold, "", "admin"} {
		t.Run(string(tier), func(t *testing.T) {
			_, _, err := mustLoad(t).WithUpstream(upstreamFixture(), tier)
			if gateway.ErrorCodeOf(err) != gateway.EInvalid || !strings.Contains(err.Error(), "tier") {
				t.Fatalf("err = %v, want EInvalid naming the tier", err)
			}
		})
	}
}

func TestWithUpstreamEmpty(t *testing.T) {
	base := mustLoad(t)
	c, dropped, err := base.WithUpstream(nil, gateway.TierOps)
	if err != nil || len(dropped) != 0 || c.Len() != base.Len() {
		t.Fatalf("empty upstream: len %d, dropped %v, err %v", c.Len(), dropped, err)
	}
}
