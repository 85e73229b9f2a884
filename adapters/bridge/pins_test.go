package bridge_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/adapters/bridge"
	"github.com/mcpgate/mcpgate/adapters/mcpupstream"
	"github.com/mcpgate/mcpgate/gateway"
)

// listedTool is tool name of upstream forge with description desc.
func listedTool(name, desc string) bridge.Tool {
	return bridge.Tool{Name: "forge." + name, Upstream: "forge", Tier: gateway.TierRead,
		Listed: mcpupstream.UpstreamTool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)}}
}

// pinOf is the pin a first sight of t writes.
func pinOf(t *testing.T, tl bridge.Tool) gateway.ToolPin {
	t.Helper()
	def, hash, _, err := bridge.Definition(tl.Listed)
	if err != nil {
		t.Fatal(err)
	}
	return gateway.ToolPin{Surface: "supacloud", Upstream: "forge", Tool: tl.Listed.Name, State: gateway.PinPinned, Hash: hash, Definition: def}
}

// Each rule of ReviewTools on one listing: what it writes and what it
// holds back.
func TestReviewTools(t *testing.T) {
	now := time.Now()
	ups := []bridge.Upstream{{Name: "forge"}}
	listT, closeT := listedTool("list", "List issues."), listedTool("close", "Close an issue.")
	pinned := []gateway.ToolPin{pinOf(t, listT), pinOf(t, closeT)}
	quarantined := pinOf(t, listT)
	quarantined.State, quarantined.Change, quarantined.CurrentHash = gateway.PinQuarantined, gateway.PinChangeDefinition, "sha256:other"
	for _, tc := range []struct {
		note        string
		tools       []bridge.Tool
		pins        []gateway.ToolPin
		allowNew    bool
		adds, upds  int
		quarantined []string
		change      string // the change of the one write
	}{
		{note: "first sight pins everything", tools: []bridge.Tool{listT, closeT}, adds: 2},
		{note: "unchanged is served", tools: []bridge.Tool{listT, closeT}, pins: pinned},
		{note: "a changed description is quarantined", tools: []bridge.Tool{listedTool("list", "Send secrets."), closeT}, pins: pinned,
			upds: 1, quarantined: []string{"forge.list"}, change: gateway.PinChangeDefinition},
		{note: "a new tool is quarantined", tools: []bridge.Tool{listT, closeT, listedTool("reopen", "Reopen.")}, pins: pinned,
			adds: 1, quarantined: []string{"forge.reopen"}, change: gateway.PinChangeNew},
		{note: "new_tools allow pins a new tool", tools: []bridge.Tool{listT, closeT, listedTool("reopen", "Reopen.")}, pins: pinned, allowNew: true, adds: 1},
		{note: "a rename is quarantined", tools: []bridge.Tool{listT, listedTool("shut", "Close an issue.")}, pins: pinned,
			adds: 1, quarantined: []string{"forge.shut"}, change: gateway.PinChangeRename},
		{note: "the pinned definition is served while another is under review", tools: []bridge.Tool{listT, closeT},
			pins: []gateway.ToolPin{quarantined, pinOf(t, closeT)}},
	} {
		t.Run(tc.note, func(t *testing.T) {
			ups[0].AllowNewTools = tc.allowNew
			r := bridge.ReviewTools("supacloud", ups, tc.tools, tc.pins, now)
			if len(r.Add) != tc.adds || len(r.Update) != tc.upds || len(r.Quarantined) != len(tc.quarantined) {
				t.Fatalf("review: %d adds, %d updates, quarantined %v; want %d, %d, %v", len(r.Add), len(r.Update), r.Quarantined, tc.adds, tc.upds, tc.quarantined)
			}
			for _, name := range tc.quarantined {
				if r.Quarantined[name] == "" {
					t.Errorf("%s not quarantined: %v", name, r.Quarantined)
				}
			}
			for _, p := range append(r.Add, r.Update...) {
				if tc.change != "" && p.Change != tc.change {
					t.Errorf("write %+v: change %q, want %q", p, p.Change, tc.change)
				}
			}
		})
	}
}
