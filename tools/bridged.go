package tools

import (
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/mcpgate/mcpgate/gateway"
)

// BridgedTool is one tool of a bridged upstream MCP server
// (MCPGATE_UPSTREAMS_FILE, adapters/bridge) as the registry takes it:
// Name is the registry name (the upstream's prefix and its own name),
// Upstream the upstream's name, Tier (SupaCloud) or Group (cc_server) the
// upstreams file's, and Annotations the upstream's annotations as sent:
// its claims, shown to policy and never a grant
// (docs/requirements.md#bridged-tools).
type BridgedTool struct {
	Name, Upstream string
	Tier           gateway.Tier
	Group          string
	Description    string
	InputSchema    json.RawMessage
	Annotations    json.RawMessage
}

// WithBridged returns a new catalog holding c's tools followed by the
// bridged tools bt, in their order. A bridged tool is checked like an
// upstream tool of WithUpstream (its name, an object inputSchema that
// compiles); one that fails, or whose name c (or an earlier bridged
// tool) already has, is left out and reported in dropped, so one bad
// tool never hides the others. ReadOnly follows the tier (baseline and
// read) on a tiered catalog and the upstream's readOnlyHint on a grouped
// one, for the annotation tools/list shows; External is false: a
// coordinator reaches a bridged tool only when policy data names it.
func (c *Catalog) WithBridged(bt []BridgedTool) (*Catalog, []Dropped) {
	extra := &Catalog{byName: map[string]*entry{}}
	var dropped []Dropped
	for _, t := range bt {
		if _, known := c.byName[t.Name]; known {
			dropped = append(dropped, Dropped{t.Name, "the surface's catalog already has a tool of this name"})
			continue
		}
		if _, dup := extra.byName[t.Name]; dup {
			dropped = append(dropped, Dropped{t.Name, "listed more than once; the first entry is used"})
			continue
		}
		e, err := upstreamEntry(UpstreamTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}, t.Tier)
		if err != nil {
			dropped = append(dropped, Dropped{t.Name, err.Error()})
			continue
		}
		e.tool.Tier, e.tool.Group, e.tool.Upstream = t.Tier, t.Group, t.Upstream
		if len(t.Annotations) > 0 && json.Valid(t.Annotations) {
			e.tool.UpstreamAnnotations = t.Annotations
		}
		if t.Group != "" {
			e.tool.ReadOnly = readOnlyHint(t.Annotations)
		}
		_ = extra.add(e) // unique: checked above
	}
	merged, err := c.Merge(extra)
	if err != nil { // unreachable: names were checked against c above
		panic(fmt.Sprintf("tools: bridged merge: %v", err))
	}
	return merged, dropped
}

// readOnlyHint is the upstream's readOnlyHint annotation, false when
// absent or not a boolean.
func readOnlyHint(ann json.RawMessage) bool {
	var a struct {
		ReadOnly bool `json:"readOnlyHint"`
	}
	_ = json.Unmarshal(ann, &a)
	return a.ReadOnly
}

// Registry is a surface's tool registry: its fixed catalog and the
// dynamic layer of bridged tools on top (docs/requirements.md#bridged-tools),
// and the bridged tools held back for review (quarantined,
// docs/requirements.md#pinned-tools). Catalog returns the served tools as
// one immutable Catalog, replaced whole by SetBridged, so a reader never
// sees half an update. It is safe for concurrent use.
type Registry struct {
	base *Catalog
	cur  atomic.Pointer[layer]
}

// layer is one version of a Registry.
type layer struct {
	cat         *Catalog
	quarantined map[string]string
}

// NewRegistry returns a registry of base with no bridged tools.
func NewRegistry(base *Catalog) *Registry {
	r := &Registry{base: base}
	r.cur.Store(&layer{cat: base})
	return r
}

// Catalog is the registry now: the base catalog and the bridged tools
// served.
func (r *Registry) Catalog() *Catalog { return r.cur.Load().cat }

// Base is the fixed catalog.
func (r *Registry) Base() *Catalog { return r.base }

// Quarantined reports whether name is a bridged tool held back for
// review, and what changed.
func (r *Registry) Quarantined(name string) (string, bool) {
	why, ok := r.cur.Load().quarantined[name]
	return why, ok
}

// SetBridged replaces the bridged layer with bt (Catalog.WithBridged),
// leaving out the tools of quarantined (registry name ⇒ what changed),
// which Quarantined then reports; it returns the new catalog and the
// tools left out as invalid.
func (r *Registry) SetBridged(bt []BridgedTool, quarantined map[string]string) (*Catalog, []Dropped) {
	served := bt
	if len(quarantined) > 0 {
		served = make([]BridgedTool, 0, len(bt))
		for _, t := range bt {
			if _, q := quarantined[t.Name]; !q {
				served = append(served, t)
			}
		}
	}
	c, dropped := r.base.WithBridged(served)
	r.cur.Store(&layer{cat: c, quarantined: quarantined})
	return c, dropped
}
