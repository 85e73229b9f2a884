package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/mcpgate/mcpgate/gateway"
)

// UpstreamTool is one tool an upstream MCP server lists, as the gateway
// received it (of mcpupstream.UpstreamTool, what the catalog keeps).
type UpstreamTool struct {
	Name        string
	Description string
	// InputSchema is the tool's inputSchema exactly as the upstream sent it.
	InputSchema json.RawMessage
}

// Dropped names an upstream tool that WithUpstream left out of the catalog
// and says why, for the start-up log.
type Dropped struct {
	Name   string
	Reason string
}

// WithUpstream returns a new catalog holding c's tools followed by the
// upstream tools c does not list, in the upstream's order. A tool c already
// lists keeps c's entry (tier, flags and schema): the SupaCloud catalog, not
// the upstream, decides how a SupaCloud tool is governed.
//
// Each new tool gets tier (one of baseline, read, ops or deploy; from
// MCPGATE_UPSTREAM_TIER), so policy grants it like any tool of that tier: by
// the tier wildcard, by its exact name or as supacloud.<name>. ReadOnly
// follows the tier (baseline and read); External is false, because which
// tools a coordinator token reaches on /api/mcp is decided per tool
// (docs/requirements.md#external-tools-list), not by an upstream listing. A missing description becomes
// "Upstream tool <name>." so tools/list stays valid MCP.
//
// Upstream tools are validated like catalog tools, with two rules relaxed:
// the schema may refuse or require workspace_id (it is the upstream's
// argument, and the gateway still refuses a workspace_id that differs from
// the credential's), and flags are not read from the listing. A tool whose
// name is not 1-128 letters, digits, '_', '.' or '-', whose inputSchema is
// not an object schema of "type": "object", or whose schema does not compile
// (as draft 2020-12 unless its $schema names another draft; external $refs
// are refused) is left out and reported in dropped: the gateway only offers
// tools whose arguments it can check, and one bad tool must not stop the
// gateway. A name listed twice keeps its first entry.
//
// Errors: EInvalid when tier is not one of the four tiers above.
func (c *Catalog) WithUpstream(upstream []UpstreamTool, tier gateway.Tier) (*Catalog, []Dropped, error) {
	switch tier {
	case gateway.TierBaseline, gateway.TierRead, gateway.TierOps, gateway.TierDeploy:
	default:
		return nil, nil, gateway.Errorf(gateway.EInvalid,
			"upstream tool tier %q is not allowed; use read, ops, deploy or baseline", tier)
	}
	extra := &Catalog{byName: map[string]*entry{}}
	var dropped []Dropped
	for _, ut := range upstream {
		if _, known := c.byName[ut.Name]; known {
			continue
		}
		if _, dup := extra.byName[ut.Name]; dup {
			dropped = append(dropped, Dropped{ut.Name, "the upstream lists this name more than once; the first entry is used"})
			continue
		}
		e, err := upstreamEntry(ut, tier)
		if err != nil {
			dropped = append(dropped, Dropped{ut.Name, err.Error()})
			continue
		}
		_ = extra.add(e) // names are unique here: checked above
	}
	merged, err := c.Merge(extra)
	if err != nil {
		return nil, nil, err
	}
	return merged, dropped, nil
}

// upstreamEntry checks one upstream tool and compiles its schema.
func upstreamEntry(ut UpstreamTool, tier gateway.Tier) (*entry, error) {
	if !toolName.MatchString(ut.Name) {
		return nil, fmt.Errorf("name must be 1-128 letters, digits, '_', '.' or '-'")
	}
	var compact bytes.Buffer
	if len(ut.InputSchema) == 0 || json.Compact(&compact, ut.InputSchema) != nil {
		return nil, fmt.Errorf("inputSchema is missing or not JSON")
	}
	accepted, err := objectProperties(compact.Bytes())
	if err != nil {
		return nil, err
	}
	sch, err := compileSchema(ut.Name, compact.Bytes())
	if err != nil {
		return nil, err
	}
	desc := ut.Description
	if desc == "" {
		desc = "Upstream tool " + ut.Name + "."
	}
	return &entry{
		tool: Tool{
			Name: ut.Name, Tier: tier, Description: desc,
			InputSchema: json.RawMessage(compact.Bytes()),
			ReadOnly:    tier == gateway.TierBaseline || tier == gateway.TierRead,
		},
		schema:   sch,
		accepted: accepted,
	}, nil
}

// objectProperties requires an object schema of "type": "object" (MCP
// server/tools, Tool.inputSchema) and returns its top-level property names,
// sorted, for the unknown-argument message.
func objectProperties(raw []byte) ([]string, error) {
	var s schemaShape
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("inputSchema must be a JSON object")
	}
	if s.Type != "object" {
		return nil, fmt.Errorf(`inputSchema must have "type": "object"`)
	}
	return sortedKeys(s.Properties), nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
