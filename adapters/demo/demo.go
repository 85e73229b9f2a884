// Package demo is an in-memory SupaCloud that answers every tool of the
// SupaCloud MCP surface (docs/requirements.md#tiers, 71 tools) over realistic, per-workspace
// data, so the gateway can be run, demonstrated and tested end to end
// without the real platform.
//
// Each workspace is generated lazily on first use, deterministically from its
// id: any workspace id has projects, tasks, runs, apps and the rest, and the
// same id always yields the same records (timestamps are relative to the
// moment of generation). Record ids embed a hash of the workspace id, so one
// workspace's ids never resolve in another. Writes change only the calling
// workspace. Resources carry kind, name and status only: the demo holds no
// connection strings or secrets at all (docs/requirements.md#no-secrets).
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// Backend is the in-memory SupaCloud. It is safe for concurrent use: the
// workspace map has one lock and every workspace its own, so calls in
// different workspaces do not wait for each other.
type Backend struct {
	now   func() time.Time
	tools map[string]tool
	names []string // sorted tool names

	mu         sync.Mutex
	workspaces map[string]*workspace
	described  map[string]WorkspaceFacts // Describe's, by workspace id
}

// WorkspaceFacts are what the gateway's store says of a workspace, which
// workspace.info must then say too instead of generated values: the dev
// seed (cmd/mcpgate, serve --dev) describes the workspace it writes with
// the very values it writes.
type WorkspaceFacts struct {
	// Name and Slug are the workspace's (gateway.Workspace.Name, Slug).
	Name, Slug string
	// PlanTier is its organisation plan (gateway.Workspace.OrgPlan).
	PlanTier string
	// MemberCount is how many members the store holds for it.
	MemberCount int
}

// tool is one row of the dispatch table: the arguments the handler relies
// on (the gateway has validated them against the catalog already; this is a
// second line) and the handler.
type tool struct {
	required []string
	handle   handler
}

// handler runs one tool in one workspace, with the workspace locked. It
// returns the structured result (a struct or map that encodes to a JSON
// object) or a *toolError, which becomes an isError result.
type handler func(w *workspace, r *request) (any, error)

// New returns a Backend with no workspaces yet; they appear on first use.
func New() *Backend {
	b := &Backend{now: time.Now, tools: dispatchTable(), workspaces: map[string]*workspace{}, described: map[string]WorkspaceFacts{}}
	for name := range b.tools {
		b.names = append(b.names, name)
	}
	sort.Strings(b.names)
	return b
}

// dispatchTable joins the per-domain tables into one map by tool name.
func dispatchTable() map[string]tool {
	all := map[string]tool{}
	for _, part := range []map[string]tool{
		baselineTools(), memoryTools(), platformTools(), taskTools(), scheduleTools(),
		appTools(), deployTools(), workflowTools(), runTools(), approvalTools(),
		backlogTools(), scriptTools(), issueTools(), conversationTools(), docsTools(),
		permissionTools(), scaffoldTools(),
	} {
		for name, t := range part {
			if _, dup := all[name]; dup {
				panic("demo: tool " + name + " registered twice")
			}
			all[name] = t
		}
	}
	return all
}

func (b *Backend) known(name string) bool {
	_, ok := b.tools[name]
	return ok
}

// Tools returns the names of every tool the backend implements, sorted.
func (b *Backend) Tools() []string { return slices.Clone(b.names) }

// CallTool runs call.Tool against the data of call.WorkspaceID (the
// credential's workspace; a workspace_id argument is ignored). The answer is
// a result with StructuredContent (a JSON object) and empty Content; records
// missing from the workspace, refused actions and tools the demo does not
// implement are isError results with one text block saying what happened.
//
// Errors: *gateway.Error EInvalid when call.WorkspaceID is empty (a wiring
// bug: the gateway always knows the workspace); EUnavailable when ctx is
// already done; EInternal if a result cannot be encoded (a bug).
func (b *Backend) CallTool(ctx context.Context, call gateway.ToolCall) (*gateway.ToolResult, error) {
	if call.WorkspaceID == "" {
		return nil, gateway.Wrap(gateway.EInvalid, gateway.ErrNotDispatched,
			fmt.Sprintf("demo backend: tools/call %s has no workspace; the gateway must pass the credential's workspace", call.Tool))
	}
	if err := ctx.Err(); err != nil {
		return nil, gateway.Wrap(gateway.EUnavailable, gateway.NotDispatched(err), "demo backend: call cancelled before it ran")
	}
	t, ok := b.tools[call.Tool]
	if !ok {
		return errorResult(fmt.Sprintf("demo backend does not implement %s", call.Tool)), nil
	}
	r := &request{ToolCall: call, now: b.now().UTC(), known: b.known, catalog: b.names}
	if missing := r.missing(t.required); missing != "" {
		return errorResult(fmt.Sprintf("%s needs the argument %s; see the tool's input schema", call.Tool, missing)), nil
	}
	w := b.workspace(call.WorkspaceID)
	w.mu.Lock()
	defer w.mu.Unlock() // held while encoding too: results point into the state
	out, err := t.handle(w, r)
	return toResult(call.Tool, out, err)
}

// Describe makes workspace.info of the workspace id say f: its name, slug,
// plan tier and member count (its budget, region and records stay
// generated). Described before its first call, the workspace's generated
// records use the slug too (project repositories); described later, only
// workspace.info changes. Safe for concurrent use.
func (b *Backend) Describe(id string, f WorkspaceFacts) {
	b.mu.Lock()
	b.described[id] = f
	w := b.workspaces[id]
	b.mu.Unlock()
	if w != nil {
		w.mu.Lock()
		w.info.describe(f)
		w.mu.Unlock()
	}
}

// workspace returns the state of id, generating it on first use.
func (b *Backend) workspace(id string) *workspace {
	b.mu.Lock()
	defer b.mu.Unlock()
	w, ok := b.workspaces[id]
	if !ok {
		var facts *WorkspaceFacts
		if f, ok := b.described[id]; ok {
			facts = &f
		}
		w = generate(id, b.now().UTC(), facts)
		b.workspaces[id] = w
	}
	return w
}

// toResult turns a handler's answer into a ToolResult. The structured
// result is re-decoded from JSON so the caller gets a deep copy that shares
// nothing with the workspace state (the gateway redacts fields in place).
func toResult(name string, out any, err error) (*gateway.ToolResult, error) {
	if err != nil {
		var te *toolError
		if errors.As(err, &te) {
			return errorResult(te.msg), nil
		}
		return nil, gateway.Wrap(gateway.EInternal, err, "demo backend failed to run "+name)
	}
	obj, err := toObject(out)
	if err != nil {
		return nil, gateway.Wrap(gateway.EInternal, err, "demo backend could not encode the result of "+name)
	}
	return &gateway.ToolResult{Content: []map[string]any{}, StructuredContent: obj}, nil
}

func errorResult(msg string) *gateway.ToolResult {
	return &gateway.ToolResult{IsError: true, Content: []map[string]any{{"type": "text", "text": msg}}}
}

// toObject encodes v as JSON and decodes it as an object.
func toObject(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("result is not a JSON object: %w", err)
	}
	return obj, nil
}

// find returns the first element of list that match accepts, or nil.
func find[T any](list []*T, match func(*T) bool) *T {
	if i := slices.IndexFunc(list, match); i >= 0 {
		return list[i]
	}
	return nil
}

// filter returns the elements of list that keep accepts, at most limit of
// them when limit > 0.
func filter[T any](list []*T, limit int, keep func(*T) bool) []*T {
	out := []*T{}
	for _, x := range list {
		if limit > 0 && len(out) == limit {
			break
		}
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}
