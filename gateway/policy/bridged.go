package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage"

	"github.com/mcpgate/mcpgate/gateway"
)

// ToolSet is the tool list the visible-tools query ranges over when it
// changes while the gateway runs: a surface's catalog and its bridged
// tools (docs/requirements.md#bridged-tools). Every engine a Live
// compiles shares the one ToolSet of Options.ToolSet, so a reloaded
// bundle sees the same registry; Set replaces the list whole. It is safe
// for concurrent use.
type ToolSet struct {
	cur atomic.Pointer[toolList]
}

// toolList is one version of a ToolSet; version grows with each Set.
type toolList struct {
	refs    []ToolRef
	version uint64
}

// NewToolSet returns a ToolSet of refs.
func NewToolSet(refs []ToolRef) *ToolSet {
	s := &ToolSet{}
	s.cur.Store(&toolList{refs: refs, version: 1})
	return s
}

// Set replaces the tool list with refs. Visible answers cached before are
// not reused after it (their key holds the version).
func (s *ToolSet) Set(refs []ToolRef) {
	for {
		old := s.cur.Load()
		if s.cur.CompareAndSwap(old, &toolList{refs: refs, version: old.version + 1}) {
			return
		}
	}
}

// BridgedQuery is where a bundle overrides what the gateway tells it of
// a bridged tool (docs/policy.md, "Bridged tools"):
// data.<surface>.bridged_tools, an object by registry name of
// {"tier", "group", "action_classes", "data_labels"}, each optional. The
// upstreams file's tier or group is otherwise the tool's; the upstream's
// own annotations never are.
const BridgedQuery = "bridged_tools"

// bridgedOverride is one entry of data.<surface>.bridged_tools.
type bridgedOverride struct {
	Tier          gateway.Tier `json:"tier"`
	Group         string       `json:"group"`
	ActionClasses []string     `json:"action_classes"`
	DataLabels    []string     `json:"data_labels"`
}

// readBridged reads data.<surface>.bridged_tools once at load; an entry
// that is not an object of the fields above is left out.
func readBridged(ctx context.Context, c *ast.Compiler, store storage.Store, surface string) (map[string]bridgedOverride, error) {
	doc, err := evalData(ctx, c, store, "data."+surface+"."+BridgedQuery)
	if err != nil || len(doc) == 0 {
		return nil, err
	}
	out := make(map[string]bridgedOverride, len(doc))
	for name, v := range doc {
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		var o bridgedOverride
		if json.Unmarshal(b, &o) == nil {
			out[name] = o
		}
	}
	return out, nil
}

// bridged applies the bundle's override to a bridged tool (one with an
// Upstream); a catalog tool is returned as it is.
func (e *Engine) bridged(t ToolRef) ToolRef {
	if t.Upstream == "" {
		return t
	}
	o, ok := e.overrides[t.Name]
	if !ok {
		return t
	}
	if o.Tier != "" {
		t.Tier = o.Tier
	}
	if o.Group != "" {
		t.Group = o.Group
	}
	if o.ActionClasses != nil {
		t.ActionClasses = o.ActionClasses
	}
	if o.DataLabels != nil {
		t.DataLabels = o.DataLabels
	}
	return t
}

// BridgedGroup returns the group this bundle gives the bridged tool
// name: data.<surface>.bridged_tools' group when it names one, else
// group (the upstreams file's). The cc_server search tools show and
// filter by it, so that list_my_tools' group is the one the policy
// decided the call on.
func (e *Engine) BridgedGroup(name, group string) string {
	if o, ok := e.overrides[name]; ok && o.Group != "" {
		return o.Group
	}
	return group
}

// writeBridged writes what a bridged tool adds to input.tool: its
// upstream, its data labels and the upstream's annotations (an object,
// {} when it sent none). Nothing for a catalog tool, so their inputs
// (and cache keys) are as before.
func writeBridged(w inputWriter, t ToolRef) {
	if t.Upstream == "" {
		return
	}
	w.str("upstream", t.Upstream)
	if t.DataLabels != nil {
		w.strs("data_labels", t.DataLabels, false)
	}
	w.term("upstream_annotations", annotationsTerm(t.UpstreamAnnotations))
}

// annotationsTerm is raw (a JSON object) as a term; {} for anything else.
func annotationsTerm(raw json.RawMessage) *ast.Term {
	if len(raw) == 0 {
		return ast.ObjectTerm()
	}
	v, err := ast.ValueFromReader(bytes.NewReader(raw))
	if err != nil {
		return ast.ObjectTerm()
	}
	if _, ok := v.(ast.Object); !ok {
		return ast.ObjectTerm()
	}
	return ast.NewTerm(v)
}

// engineTools is an engine's input.tools term of one ToolSet version.
type engineTools struct {
	version uint64
	term    *ast.Term
}

// toolsNow returns the input.tools term and its version: the engine's
// own catalog (version 0) without a ToolSet, else the ToolSet's list as
// this bundle sees it (its overrides applied), built once per version.
func (e *Engine) toolsNow() (*ast.Term, uint64) {
	if e.toolSet == nil {
		return e.tools, 0
	}
	l := e.toolSet.cur.Load()
	if c := e.setTerm.Load(); c != nil && c.version == l.version {
		return c.term, c.version
	}
	e.setMu.Lock()
	defer e.setMu.Unlock()
	if c := e.setTerm.Load(); c != nil && c.version == l.version {
		return c.term, c.version
	}
	t := e.toolsTerm(l.refs)
	e.setTerm.Store(&engineTools{version: l.version, term: t})
	return t, l.version
}

// setState is what an engine keeps of its ToolSet.
type setState struct {
	toolSet *ToolSet
	setTerm atomic.Pointer[engineTools]
	setMu   sync.Mutex
}
