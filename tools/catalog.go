// Package tools holds mcpgate's tool catalogs: each tool's name, tier,
// description, input JSON Schema and policy flags, and the loader that
// compiles every schema once so arguments can be checked on the hot path.
//
// The SupaCloud catalog (seed 001, "MCP Tool Surface") is embedded from
// supacloud/catalog.json; other catalogs (an upstream server's extra tools,
// test fixtures) go through Parse and can be combined with Merge.
package tools

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed supacloud/catalog.json
var supacloudCatalog []byte

// Limit kinds split the scaffold tier into its two rate-limit buckets
// (seed 001, "Workspace and profile caps": scaffold proposals and scaffold
// task-spawns have separate workspace/day and profile/hour limits).
const (
	LimitKindProposal  = "proposal"
	LimitKindTaskSpawn = "task_spawn"
)

// Tool is one catalog entry. A Tool obtained from a Catalog is shared:
// callers must not modify it or the bytes of InputSchema.
type Tool struct {
	// Name is the MCP tool name, copied exactly from the seed (e.g. "run.events").
	Name string
	// Tier decides the allowlist entry that unlocks the tool and the rate-limit
	// bucket it consumes (seed 001, "Tiers and allowlist entries").
	Tier gateway.Tier
	// Description is one line for tools/list.
	Description string
	// InputSchema is the compacted JSON Schema (draft 2020-12) of the
	// arguments object, served as inputSchema in tools/list.
	InputSchema json.RawMessage
	// CarveOut marks script.run: ops tier, but granted only by
	// supacloud.script.run, supacloud.full or its exact name, never by
	// supacloud.ops.* (seed 001, "script.run carve-out").
	CarveOut bool
	// Confirmation marks the deploy tools that need the two-step confirmation
	// (seed 001, "Deploy confirmation protocol": app.deploy, app.migration.apply).
	Confirmation bool
	// External marks tools an external coordinator may reach on /api/mcp with
	// an mcp:read (read and baseline tiers) or mcp:ops (ops tier) token
	// (seed 002, steps 1 and 3). Deploy tools are never external.
	External bool
	// ReadOnly is the MCP readOnlyHint annotation: true for the baseline
	// reads and the whole read tier.
	ReadOnly bool
	// LimitKind is LimitKindProposal or LimitKindTaskSpawn for scaffold tools
	// and "" for every other tool.
	LimitKind string
	// Resource, when set, names the record a call of the tool addresses:
	// the gateway looks its attributes up through the adapter before the
	// decision (the policy reads them as input.resource), so that the
	// policy decides on what the record is, never on what the caller says
	// it is (approval.decide: the gate's class; seed 002, step 3).
	Resource *ResourceRef
}

// ResourceRef says which record a tool's call addresses: its Kind (e.g.
// "approval") and the argument that holds its id.
type ResourceRef struct {
	Kind       string `json:"kind"`
	IDArgument string `json:"id_argument"`
}

// Catalog is a set of tools with compiled input schemas. It is immutable
// once built by Load, Parse or Merge and safe for concurrent use.
type Catalog struct {
	entries []*entry
	byName  map[string]*entry
}

// entry pairs a tool with what Validate needs at call time.
type entry struct {
	tool   Tool
	schema *jsonschema.Schema
	// accepted is the sorted list of top-level property names, quoted in the
	// message for an unknown argument so the caller can correct it.
	accepted []string
}

// fileCatalog is the JSON layout of a catalog file. Surface and Source
// document where the catalog comes from; Parse does not interpret them.
type fileCatalog struct {
	Surface string     `json:"surface"`
	Source  string     `json:"source"`
	Tools   []fileTool `json:"tools"`
}

// fileTool is the JSON layout of one catalog entry.
type fileTool struct {
	Name         string          `json:"name"`
	Tier         gateway.Tier    `json:"tier"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CarveOut     bool            `json:"carve_out"`
	Confirmation bool            `json:"confirmation"`
	External     bool            `json:"external"`
	ReadOnly     bool            `json:"read_only"`
	LimitKind    string          `json:"limit_kind"`
	Resource     *ResourceRef    `json:"resource"`
}

// toolName is the shape MCP clients accept for tool names.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Load returns the embedded SupaCloud catalog (seed 001: 71 tools) with
// every input schema compiled. Each call compiles afresh (about 14 ms), so
// call it once at start and share the result. An error names the tool whose
// entry is bad; it means the binary was built from a broken catalog file.
func Load() (*Catalog, error) {
	return Parse(supacloudCatalog)
}

// Parse builds a catalog from catalog JSON: {"tools": [{"name", "tier",
// "description", "input_schema", flags...}, ...]}. It rejects unknown
// fields, an empty list, duplicate or malformed names, unknown tiers, flags
// that contradict the tier, and input schemas that do not compile, are not
// of type object, or would refuse an optional "workspace_id" string. Errors
// are *gateway.Error with code EInvalid naming the entry at fault.
func Parse(data []byte) (*Catalog, error) {
	var f fileCatalog
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, gateway.Errorf(gateway.EInvalid, "tool catalog is not valid catalog JSON (%v); fix the file", err)
	}
	if dec.More() {
		return nil, gateway.Errorf(gateway.EInvalid, "tool catalog has data after the top-level object; remove it")
	}
	if len(f.Tools) == 0 {
		return nil, gateway.Errorf(gateway.EInvalid, `tool catalog lists no tools; add entries under "tools"`)
	}
	c := &Catalog{byName: make(map[string]*entry, len(f.Tools))}
	for i, ft := range f.Tools {
		e, err := buildEntry(ft)
		if err != nil {
			return nil, gateway.Errorf(gateway.EInvalid,
				"tool catalog entry %d (%q) is invalid: %v; fix the catalog file", i, ft.Name, err)
		}
		if err := c.add(e); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// add appends e, refusing a name already present.
func (c *Catalog) add(e *entry) error {
	if _, dup := c.byName[e.tool.Name]; dup {
		return gateway.Errorf(gateway.EInvalid,
			"tool catalog lists %q twice; every tool name must be unique", e.tool.Name)
	}
	c.entries = append(c.entries, e)
	c.byName[e.tool.Name] = e
	return nil
}

// buildEntry checks one entry and compiles its schema.
func buildEntry(ft fileTool) (*entry, error) {
	if err := checkFlags(ft); err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, ft.InputSchema); err != nil || len(ft.InputSchema) == 0 {
		return nil, fmt.Errorf("input_schema is missing or not JSON")
	}
	accepted, err := checkSchemaShape(compact.Bytes())
	if err != nil {
		return nil, err
	}
	sch, err := compileSchema(ft.Name, compact.Bytes())
	if err != nil {
		return nil, err
	}
	return &entry{
		tool: Tool{
			Name: ft.Name, Tier: ft.Tier, Description: ft.Description,
			InputSchema: json.RawMessage(compact.Bytes()),
			CarveOut:    ft.CarveOut, Confirmation: ft.Confirmation,
			External: ft.External, ReadOnly: ft.ReadOnly, LimitKind: ft.LimitKind, Resource: ft.Resource,
		},
		schema:   sch,
		accepted: accepted,
	}, nil
}

// checkFlags enforces the seed rules that tie flags to tiers, so a catalog
// cannot, say, mark a deploy tool external (seed 002: never reachable).
func checkFlags(ft fileTool) error {
	switch {
	case !toolName.MatchString(ft.Name):
		return fmt.Errorf("name must be 1-128 letters, digits, '_', '.' or '-'")
	case !knownTier(ft.Tier):
		return fmt.Errorf("tier %q is unknown; use baseline, read, ops, scaffold or deploy", ft.Tier)
	case strings.TrimSpace(ft.Description) == "":
		return fmt.Errorf("description is empty")
	case ft.CarveOut && ft.Tier != gateway.TierOps:
		return fmt.Errorf("carve_out is only meaningful for ops-tier tools")
	case ft.Confirmation && ft.Tier != gateway.TierDeploy:
		return fmt.Errorf("confirmation is only meaningful for deploy-tier tools")
	case ft.External && ft.Tier == gateway.TierDeploy:
		return fmt.Errorf("deploy-tier tools are never reachable externally; drop external")
	case ft.ReadOnly && ft.Tier != gateway.TierBaseline && ft.Tier != gateway.TierRead:
		return fmt.Errorf("read_only contradicts tier %q", ft.Tier)
	case ft.Resource != nil && (ft.Resource.Kind == "" || ft.Resource.IDArgument == ""):
		return fmt.Errorf("resource needs a kind and an id_argument")
	case ft.LimitKind != "" && ft.Tier != gateway.TierScaffold:
		return fmt.Errorf("limit_kind is only meaningful for scaffold-tier tools")
	case ft.Tier == gateway.TierScaffold && ft.LimitKind != LimitKindProposal && ft.LimitKind != LimitKindTaskSpawn:
		return fmt.Errorf("scaffold-tier tools need limit_kind %q or %q", LimitKindProposal, LimitKindTaskSpawn)
	}
	return nil
}

func knownTier(t gateway.Tier) bool {
	switch t {
	case gateway.TierBaseline, gateway.TierRead, gateway.TierOps, gateway.TierScaffold, gateway.TierDeploy:
		return true
	}
	return false
}

// schemaShape is the part of a top-level input schema checkSchemaShape reads.
type schemaShape struct {
	Type                 any                        `json:"type"`
	Properties           map[string]json.RawMessage `json:"properties"`
	Required             []string                   `json:"required"`
	AdditionalProperties *bool                      `json:"additionalProperties"`
}

// checkSchemaShape requires an object schema (MCP inputSchema) that lets a
// client send an optional workspace_id string: the gateway compares it with
// the credential's workspace (docs/architecture.md, Invariants: workspace isolation), so the
// schema must not refuse it first. It returns the sorted property names.
func checkSchemaShape(raw []byte) ([]string, error) {
	var s schemaShape
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("input_schema must be a JSON object")
	}
	if s.Type != "object" {
		return nil, fmt.Errorf(`input_schema must have "type": "object"`)
	}
	for _, r := range s.Required {
		if r == "workspace_id" {
			return nil, fmt.Errorf("input_schema must not require workspace_id; it is optional")
		}
	}
	ws, declared := s.Properties["workspace_id"]
	if !declared && s.AdditionalProperties != nil && !*s.AdditionalProperties {
		return nil, fmt.Errorf("input_schema refuses extra properties, so it must declare an optional workspace_id string")
	}
	if declared {
		var p struct {
			Type any `json:"type"`
		}
		if json.Unmarshal(ws, &p) != nil || p.Type != "string" {
			return nil, fmt.Errorf(`input_schema property workspace_id must have "type": "string"`)
		}
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// noLoader refuses every $ref to an outside document: a catalog must be
// self-contained, and compiling it must never read files or the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q is not allowed; inline the definition in $defs", url)
}

// compileSchema compiles one input schema as draft 2020-12 with format
// assertions on (so "format": "uuid" is checked, not just annotated).
func compileSchema(name string, raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("input_schema: %v", err)
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.AssertFormat()
	comp.UseLoader(noLoader{})
	loc := "mcpgate:///tools/" + name + ".json"
	if err := comp.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("input_schema: %v", err)
	}
	sch, err := comp.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("input_schema does not compile: %v", err)
	}
	return sch, nil
}

// Lookup returns the tool called name. The Tool is shared; do not modify it.
func (c *Catalog) Lookup(name string) (*Tool, bool) {
	e, ok := c.byName[name]
	if !ok {
		return nil, false
	}
	return &e.tool, true
}

// Tools returns every tool in catalog order (for the SupaCloud catalog:
// baseline, read, ops, script.run, scaffold, deploy). The slice is new on
// each call; the InputSchema bytes are shared and must not be modified.
func (c *Catalog) Tools() []Tool {
	out := make([]Tool, len(c.entries))
	for i, e := range c.entries {
		out[i] = e.tool
	}
	return out
}

// Len returns the number of tools.
func (c *Catalog) Len() int { return len(c.entries) }

// Merge returns a new catalog with c's tools followed by other's. Compiled
// schemas are reused, nothing is recompiled. A name present in both is an
// EInvalid error naming it; neither input is changed.
func (c *Catalog) Merge(other *Catalog) (*Catalog, error) {
	m := &Catalog{byName: make(map[string]*entry, c.Len()+other.Len())}
	for _, src := range []*Catalog{c, other} {
		for _, e := range src.entries {
			if err := m.add(e); err != nil {
				return nil, gateway.Errorf(gateway.EInvalid,
					"cannot merge tool catalogs: both define %q; rename or drop one", e.tool.Name)
			}
		}
	}
	return m, nil
}
