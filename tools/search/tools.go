package search

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/tools"
)

// The tools the gateway answers itself on the cc_server surface
// (docs/requirements.md#cc-tool-search: both come from cc_mcp_client and
// ask the mode lock).
const (
	ToolListMine = "list_my_tools"
	ToolSearch   = "search_tool_bm25"
)

// Backend takes the calls Tools does not answer itself (the demo or an
// upstream cc_server; the pipeline's Adapter).
type Backend interface {
	CallTool(ctx context.Context, call gateway.ToolCall) (*gateway.ToolResult, error)
}

// Resolver is a Backend that looks up the record a call addresses
// (the pipeline's ResourceResolver).
type Resolver interface {
	ResolveResource(ctx context.Context, workspaceID, kind, id string) (attrs map[string]string, found bool, err error)
}

// CallerLoader loads what the policy needs of a principal (the
// surface's caller cache).
type CallerLoader interface {
	LoadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error)
}

// Callable returns the names of the catalog tools p may call now in
// workspace ws ("" when the call named none); the policy's visible_tools
// (policy.Engine.VisibleIn of the live engine). The map must not be
// modified.
type Callable func(ctx context.Context, p *gateway.Principal, c *gateway.Caller, ws string) (map[string]bool, error)

// GroupOf returns the group the live policy gives the bridged tool name
// whose upstreams file says group (policy.Engine.BridgedGroup): a bundle
// may move a bridged tool to another group.
type GroupOf func(name, group string) string

// Tools is the cc_server adapter: it answers list_my_tools and
// search_tool_bm25 from the catalog, the BM25 index and the policy's
// visible_tools for the calling principal (each tool says whether it is
// callable now), and hands every other call to the backend. The two are
// still tools/call through the pipeline: decided, rate limited and
// audited like any other.
type Tools struct {
	next     Backend
	callable Callable
	callers  CallerLoader
	groupOf  GroupOf
	registry *tools.Registry
	ranked   atomic.Pointer[ranked]
}

// ranked is one version of the registry with its BM25 index.
type ranked struct {
	catalog *tools.Catalog
	index   *Index
}

// NewTools returns the adapter over next, ranking cat.
func NewTools(next Backend, callable Callable, callers CallerLoader, cat *tools.Catalog) *Tools {
	return NewRegistryTools(next, callable, callers, tools.NewRegistry(cat), nil)
}

// NewRegistryTools returns the adapter over next, ranking the tools of
// reg as they are at each call: the catalog and the bridged tools
// (docs/requirements.md#bridged-tools), indexed again once after each
// change of the registry. A bridged tool is shown and filtered under the
// group groupOf gives it (nil: the upstreams file's).
func NewRegistryTools(next Backend, callable Callable, callers CallerLoader, reg *tools.Registry, groupOf GroupOf) *Tools {
	return &Tools{next: next, callable: callable, callers: callers, registry: reg, groupOf: groupOf}
}

// group is t's group as the policy sees it.
func (s *Tools) group(t tools.Tool) string {
	if t.Upstream == "" || s.groupOf == nil {
		return t.Group
	}
	return s.groupOf(t.Name, t.Group)
}

// now returns the registry now and its index, built on first use of
// each version.
func (s *Tools) now() *ranked {
	cat := s.registry.Catalog()
	if r := s.ranked.Load(); r != nil && r.catalog == cat {
		return r
	}
	r := &ranked{catalog: cat, index: New(cat.Tools())}
	s.ranked.Store(r)
	return r
}

// ResolveResource forwards to the backend when it resolves resources.
func (s *Tools) ResolveResource(ctx context.Context, ws, kind, id string) (map[string]string, bool, error) {
	if r, ok := s.next.(Resolver); ok {
		return r.ResolveResource(ctx, ws, kind, id)
	}
	return nil, false, nil
}

// CallTool answers the two search tools, forwarding everything else
// (without its principal).
func (s *Tools) CallTool(ctx context.Context, call gateway.ToolCall) (*gateway.ToolResult, error) {
	if call.Tool != ToolListMine && call.Tool != ToolSearch {
		call.Principal = nil // never forwarded
		return s.next.CallTool(ctx, call)
	}
	if call.Principal == nil {
		return nil, gateway.Errorf(gateway.EInternal, "%s was called without its principal; the gateway cannot rate callability", call.Tool)
	}
	ws, _ := call.Arguments["workspace_id"].(string)
	caller, err := s.callers.LoadCaller(ctx, call.Principal)
	if err != nil {
		return nil, gateway.Wrap(gateway.EUnavailable, err, "the gateway could not load this caller's workspaces, so callability cannot be told; retry shortly")
	}
	callable, err := s.callable(ctx, call.Principal, caller, ws)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if r := s.now(); call.Tool == ToolListMine {
		out = r.listMine(call.Arguments, callable, s.group)
	} else {
		out = r.search(call.Arguments, callable, s.group)
	}
	out["mode"] = modeOf(call.Principal)
	if ws != "" {
		out["workspace_id"] = ws
	}
	return &gateway.ToolResult{Content: []map[string]any{}, StructuredContent: out}, nil
}

// listMine lists the callable tools in catalog order, optionally of one
// group.
func (s *ranked) listMine(args map[string]any, callable map[string]bool, groupOf func(tools.Tool) string) map[string]any {
	group, _ := args["group"].(string)
	list := []map[string]any{}
	for _, t := range s.catalog.Tools() {
		if g := groupOf(t); callable[t.Name] && (group == "" || g == group) {
			list = append(list, map[string]any{"name": t.Name, "group": g, "description": t.Description,
				"requires_approval": t.RequiresApproval, "callable": true})
		}
	}
	return map[string]any{"tools": list, "count": len(list)}
}

// search ranks the catalog for the query; every hit carries its schema
// and whether it is callable now.
func (s *ranked) search(args map[string]any, callable map[string]bool, groupOf func(tools.Tool) string) map[string]any {
	q, _ := args["query"].(string)
	limit := 10
	switch n := args["limit"].(type) {
	case json.Number:
		if v, err := n.Int64(); err == nil {
			limit = int(v)
		}
	case float64:
		limit = int(n)
	}
	hits := []map[string]any{}
	for _, h := range s.index.Search(q, limit) {
		t, _ := s.catalog.Lookup(h.Name)
		hits = append(hits, map[string]any{"name": t.Name, "group": groupOf(*t), "description": t.Description,
			"score": h.Score, "input_schema": json.RawMessage(t.InputSchema), "requires_approval": t.RequiresApproval,
			"callable": callable[t.Name]})
	}
	return map[string]any{"query": q, "hits": hits}
}

// modeOf is the conversation mode the answer is rated in, as the policy
// applies it (no mode claim: chat).
func modeOf(p *gateway.Principal) string {
	if strings.TrimSpace(p.Mode) == "" {
		return "chat"
	}
	return p.Mode
}
