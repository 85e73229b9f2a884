// Package tools holds mcpgate's tool catalogs: each tool's name, tier,
// description, input JSON Schema and policy flags, and the loader that
// compiles every schema once so arguments can be checked on the hot path.
//
// The SupaCloud catalog (docs/requirements.md#tiers) is embedded from
// supacloud/catalog.json and the cc_server catalog (docs/requirements.md#cc-registry, 110 tools in
// their groups) from ccserver/catalog.json; other catalogs (an
// upstream server's extra tools, test fixtures) go through Parse and can be
// combined with Merge.
package tools

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed supacloud/catalog.json
var supacloudCatalog []byte

//go:embed ccserver/catalog.json
var ccserverCatalog []byte

// The action classes a cc_server tool may declare (docs/requirements.md#cc-action-classes):
// the rig use-tools and rig_close control an enclosure; the use-tools also
// reach the network and spawn processes; mobile_use and ios_use also
// install packages. A tool declaring any of them is refused in read-only
// modes and passes the action guard (policies/ccserver).
const (
	ActionEnclosureControl = "enclosureControl"
	ActionNetworkEgress    = "networkEgress"
	ActionProcessSpawn     = "processSpawn"
	ActionPackageInstall   = "packageInstall"
)

// Limit kinds split the scaffold tier into its two rate-limit buckets
// (docs/requirements.md#workspace-profile-caps: scaffold proposals and scaffold
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
	// bucket it consumes (docs/requirements.md#tiers). Empty for
	// a tool of a grouped catalog (cc_server).
	Tier gateway.Tier
	// Group is the tool's group in a grouped catalog (cc_server, docs/requirements.md#cc-registry:
	// "tickets", "memory", "rigs", …); empty for a tiered one (SupaCloud).
	// A catalog is either tiered or grouped, never both.
	Group string
	// RequiresApproval marks a cc_server tool that declares requiresApproval
	// (docs/requirements.md#cc-approval): a person approves each call
	// before it runs.
	RequiresApproval bool
	// ActionClasses are the action classes a cc_server tool declares
	// (ActionEnclosureControl, …), sorted; nil for none. A non-empty set
	// puts the tool under the action guard (docs/requirements.md#cc-action-classes).
	ActionClasses []string
	// Description is one line for tools/list.
	Description string
	// InputSchema is the compacted JSON Schema (draft 2020-12) of the
	// arguments object, served as inputSchema in tools/list.
	InputSchema json.RawMessage
	// CarveOut marks script.run: ops tier, but granted only by
	// supacloud.script.run, supacloud.full or its exact name, never by
	// supacloud.ops.* (docs/requirements.md#script-run-carve-out).
	CarveOut bool
	// Confirmation marks the deploy tools that need the two-step confirmation
	// (docs/requirements.md#deploy-confirmation: app.deploy, app.migration.apply).
	Confirmation bool
	// External marks tools an external coordinator may reach on /api/mcp with
	// an mcp:read (read and baseline tiers) or mcp:ops (ops tier) token
	// (docs/requirements.md#api-tokens). Deploy tools are never external.
	External bool
	// ReadOnly is the MCP readOnlyHint annotation: true for the baseline
	// reads and the whole read tier, and for the cc_server tools that only
	// read.
	ReadOnly bool
	// LimitKind is LimitKindProposal or LimitKindTaskSpawn for scaffold tools
	// and "" for every other tool.
	LimitKind string
	// Resource, when set, names the record a call of the tool addresses:
	// the gateway looks its attributes up through the adapter before the
	// decision (the policy reads them as input.resource), so that the
	// policy decides on what the record is, never on what the caller says
	// it is (approval.decide: the gate's class; docs/requirements.md#external-human-gates).
	Resource *ResourceRef
	// Upstream names the bridged upstream that serves the tool
	// (MCPGATE_UPSTREAMS_FILE); empty for a catalog tool.
	Upstream string
	// UpstreamAnnotations are a bridged tool's annotations as its
	// upstream listed them (JSON object, nil for none): its claims, shown
	// to policy as input.tool.upstream_annotations, never a grant.
	UpstreamAnnotations json.RawMessage
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
	Name             string          `json:"name"`
	Tier             gateway.Tier    `json:"tier"`
	Group            string          `json:"group"`
	Description      string          `json:"description"`
	InputSchema      json.RawMessage `json:"input_schema"`
	CarveOut         bool            `json:"carve_out"`
	Confirmation     bool            `json:"confirmation"`
	External         bool            `json:"external"`
	ReadOnly         bool            `json:"read_only"`
	LimitKind        string          `json:"limit_kind"`
	Resource         *ResourceRef    `json:"resource"`
	RequiresApproval bool            `json:"requires_approval"`
	ActionClasses    []string        `json:"action_classes"`
}

// groupName is the shape of a group name in a grouped catalog.
var groupName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// toolName is the shape MCP clients accept for tool names.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Load returns the embedded SupaCloud catalog (docs/requirements.md#tiers: 71 tools) with
// every input schema compiled. Each call compiles afresh (about 14 ms), so
// call it once at start and share the result. An error names the tool whose
// entry is bad; it means the binary was built from a broken catalog file.
func Load() (*Catalog, error) {
	return Parse(supacloudCatalog)
}

// LoadCCServer returns the embedded cc_server catalog (docs/requirements.md#cc-registry: 110 tools,
// each with its group, requiresApproval and action classes) with every
// input schema compiled; call it once at start. Its workspace-scoped tools
// require workspace_id, list_workspaces and the six newsfeed tools take
// none, search_tool_bm25 and list_my_tools take it optionally
// (docs/requirements.md#cc-workspace-id). An error means a broken catalog file.
func LoadCCServer() (*Catalog, error) {
	return Parse(ccserverCatalog)
}

// Parse builds a catalog from catalog JSON: {"tools": [{"name", "tier" or
// "group", "description", "input_schema", flags...}, ...]}. It rejects
// unknown fields, an empty list, duplicate or malformed names, a catalog
// that mixes tiered and grouped entries, unknown tiers or action classes,
// flags that contradict the tier or the kind of catalog, and input schemas
// that do not compile or are not of type object. A tiered (SupaCloud) schema
// must also accept an optional "workspace_id" string; a grouped (cc_server)
// one may require it or leave it out, but declares it as a string if at all.
// Errors are *gateway.Error with code EInvalid naming the entry at fault.
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
		if grouped := f.Tools[0].Group != ""; (ft.Group != "") != grouped {
			return nil, gateway.Errorf(gateway.EInvalid,
				"tool catalog entry %d (%q) mixes a tiered and a grouped catalog: entry 0 has %s; give every entry a tier or every entry a group",
				i, ft.Name, map[bool]string{true: "a group", false: "a tier"}[grouped])
		}
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
	accepted, err := checkSchemaShape(compact.Bytes(), ft.Group != "")
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
			Group: ft.Group, RequiresApproval: ft.RequiresApproval, ActionClasses: actionClasses(ft.ActionClasses),
		},
		schema:   sch,
		accepted: accepted,
	}, nil
}

// checkFlags enforces the seed rules that tie flags to tiers, so a catalog
// cannot, say, mark a deploy tool external (docs/requirements.md#external-no-deploy).
func checkFlags(ft fileTool) error {
	switch {
	case !toolName.MatchString(ft.Name):
		return fmt.Errorf("name must be 1-128 letters, digits, '_', '.' or '-'")
	case strings.TrimSpace(ft.Description) == "":
		return fmt.Errorf("description is empty")
	case ft.Resource != nil && (ft.Resource.Kind == "" || ft.Resource.IDArgument == ""):
		return fmt.Errorf("resource needs a kind and an id_argument")
	case ft.Group != "":
		return checkGroupedFlags(ft)
	case ft.RequiresApproval || len(ft.ActionClasses) > 0:
		return fmt.Errorf("requires_approval and action_classes belong to grouped (cc_server) catalogs; give the entry a group or drop them")
	case !knownTier(ft.Tier):
		return fmt.Errorf("tier %q is unknown; use baseline, read, ops, scaffold or deploy", ft.Tier)
	case ft.CarveOut && ft.Tier != gateway.TierOps:
		return fmt.Errorf("carve_out is only meaningful for ops-tier tools")
	case ft.Confirmation && ft.Tier != gateway.TierDeploy:
		return fmt.Errorf("confirmation is only meaningful for deploy-tier tools")
	case ft.External && ft.Tier == gateway.TierDeploy:
		return fmt.Errorf("deploy-tier tools are never reachable externally; drop external")
	case ft.ReadOnly && ft.Tier != gateway.TierBaseline && ft.Tier != gateway.TierRead:
		return fmt.Errorf("read_only contradicts tier %q", ft.Tier)
	case ft.LimitKind != "" && ft.Tier != gateway.TierScaffold:
		return fmt.Errorf("limit_kind is only meaningful for scaffold-tier tools")
	case ft.Tier == gateway.TierScaffold && ft.LimitKind != LimitKindProposal && ft.LimitKind != LimitKindTaskSpawn:
		return fmt.Errorf("scaffold-tier tools need limit_kind %q or %q", LimitKindProposal, LimitKindTaskSpawn)
	}
	return nil
}

// checkGroupedFlags checks an entry of a grouped (cc_server) catalog: a
// group name, no tier, none of SupaCloud's tier flags, and only known,
// distinct action classes.
func checkGroupedFlags(ft fileTool) error {
	switch {
	case !groupName.MatchString(ft.Group):
		return fmt.Errorf("group %q must be 1-64 lower-case letters, digits or '_', starting with a letter", ft.Group)
	case ft.Tier != "":
		return fmt.Errorf("an entry has a tier or a group, not both; drop tier %q", ft.Tier)
	case ft.CarveOut || ft.Confirmation || ft.External || ft.LimitKind != "":
		return fmt.Errorf("carve_out, confirmation, external and limit_kind are SupaCloud tier flags; a grouped entry cannot carry them")
	}
	seen := map[string]bool{}
	for _, a := range ft.ActionClasses {
		switch a {
		case ActionEnclosureControl, ActionNetworkEgress, ActionProcessSpawn, ActionPackageInstall:
		default:
			return fmt.Errorf("action class %q is unknown; use %s, %s, %s or %s",
				a, ActionEnclosureControl, ActionNetworkEgress, ActionProcessSpawn, ActionPackageInstall)
		}
		if seen[a] {
			return fmt.Errorf("action class %q is listed twice", a)
		}
		seen[a] = true
	}
	return nil
}

// actionClasses returns the sorted copy of a declared set, nil for none.
func actionClasses(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := slices.Clone(in)
	slices.Sort(out)
	return out
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

// checkSchemaShape requires an object schema (MCP inputSchema). In a
// tiered (SupaCloud) catalog it must let a client send an optional
// workspace_id string: the gateway compares it with the credential's
// workspace (docs/architecture.md, Invariants: workspace isolation), so the
// schema must not refuse it first. In a grouped (cc_server) catalog the
// workspace_id is the caller's choice of workspace, which the policy checks
// (docs/requirements.md#cc-workspace-id): the schema may require it or, on a
// global tool, leave it out. Either way a declared workspace_id is a
// string. It returns the sorted property names.
func checkSchemaShape(raw []byte, grouped bool) ([]string, error) {
	var s schemaShape
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("input_schema must be a JSON object")
	}
	if s.Type != "object" {
		return nil, fmt.Errorf(`input_schema must have "type": "object"`)
	}
	for _, r := range s.Required {
		if r == "workspace_id" && !grouped {
			return nil, fmt.Errorf("input_schema must not require workspace_id; it is optional")
		}
	}
	ws, declared := s.Properties["workspace_id"]
	if !declared && !grouped && s.AdditionalProperties != nil && !*s.AdditionalProperties {
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
// each call; the InputSchema bytes and ActionClasses are shared and must
// not be modified.
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
