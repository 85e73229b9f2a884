// Package ccdemo is an in-memory cc_server (docs/requirements.md#cc-registry) that answers every
// tool of its MCP registry over realistic, per-workspace data, so the
// gateway's cc_server surface can be run, demonstrated and tested without
// a real cc_server.
//
// Data lives in workspaces: agents, skills, artifacts, playbooks, repos,
// spaces, reviews, facts and policies, goals, approvals, work products,
// runtime profiles, code symbols, tickets and rigs. Two workspaces exist
// from the start (ws-acme and ws-globex); any other valid id is generated
// on first use. Every entity id embeds a tag of its workspace, so one
// workspace's ids never resolve in another, and every lookup is scoped by
// the call's workspace. The newsfeed is per user (the call's actor), not
// per workspace, as docs/requirements.md#cc-workspace-id says of the six newsfeed tools.
//
// The tools are answered by compact handlers per kind of entity (list,
// get, create, update, act on one) from one dispatch table (toolTable).
package ccdemo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// entity is one record: "id", "workspace_id" and its fields, as they are
// returned. Lists of sub-records ("messages", "events", …) are []any.
type entity map[string]any

// workspace is the state of one workspace: entities by kind, in creation
// order, and the per-actor conversation state (todo list, notepad).
type workspace struct {
	id, name, tag string
	kinds         map[string][]entity
	seq           int
	todos         map[string][]any
	notes         map[string]string
}

// Backend is the in-memory cc_server. It is safe for concurrent use: one
// lock guards all state (a demo, not a load target).
type Backend struct {
	now   func() time.Time
	tools map[string]handler

	mu         sync.Mutex
	workspaces map[string]*workspace
	feeds      map[string]*feedState // by actor
}

// New returns a Backend holding the two demo workspaces.
func New() *Backend {
	b := &Backend{now: time.Now, tools: toolTable(), workspaces: map[string]*workspace{}, feeds: map[string]*feedState{}}
	b.workspace("ws-acme", "Acme Web")
	b.workspace("ws-globex", "Globex Platform")
	return b
}

// Tools returns the names of every tool the backend answers, sorted.
func (b *Backend) Tools() []string { return slices.Sorted(maps.Keys(b.tools)) }

// tag is the short workspace tag embedded in entity ids.
func tag(ws string) string {
	h := sha256.Sum256([]byte(ws))
	return hex.EncodeToString(h[:3])
}

// workspace returns the state of id, generating it on first use; name is
// used only then. The caller holds b.mu.
func (b *Backend) workspace(id, name string) *workspace {
	if w, ok := b.workspaces[id]; ok {
		return w
	}
	if name == "" {
		name = strings.ToUpper(id[:1]) + id[1:]
	}
	w := &workspace{id: id, name: name, tag: tag(id), kinds: map[string][]entity{}, todos: map[string][]any{}, notes: map[string]string{}}
	seed(w, b.now().UTC())
	b.workspaces[id] = w
	return w
}

// newID returns the next id of a kind in w ("TCK-1a2b3c-7").
func (w *workspace) newID(prefix string) string {
	w.seq++
	return fmt.Sprintf("%s-%s-%d", prefix, w.tag, w.seq)
}

// add stores e as a new entity of kind with a fresh id and returns it.
func (w *workspace) add(kind string, e entity) entity {
	e["id"] = w.newID(prefixes[kind])
	e["workspace_id"] = w.id
	w.kinds[kind] = append(w.kinds[kind], e)
	return e
}

// find returns the entity of kind with id in w, or nil.
func (w *workspace) find(kind, id string) entity {
	for _, e := range w.kinds[kind] {
		if e["id"] == id {
			return e
		}
	}
	return nil
}

// findBy returns the first entity of kind whose field equals v, or nil.
func (w *workspace) findBy(kind, field string, v any) entity {
	for _, e := range w.kinds[kind] {
		if e[field] == v {
			return e
		}
	}
	return nil
}

// request is one call as a handler sees it.
type request struct {
	ws    *workspace // nil for a global tool
	actor string
	args  map[string]any
	now   time.Time
	b     *Backend
}

func (r *request) str(k string) string { s, _ := r.args[k].(string); return s }

// limit is the call's limit argument, 50 without one.
func (r *request) limit() int {
	if n, ok := r.args["limit"].(float64); ok && n >= 1 {
		return int(n)
	}
	if n, ok := r.args["limit"].(json.Number); ok {
		if v, err := n.Int64(); err == nil && v >= 1 {
			return int(v)
		}
	}
	return 50
}

// toolError is an answer the caller can act on: an isError result.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func fail(format string, a ...any) error { return &toolError{fmt.Sprintf(format, a...)} }

// notFound says that the workspace holds no such entity.
func (r *request) notFound(kind, id string) error {
	return fail("no %s %q in workspace %s; list them with the workspace's list tool and pass an id from there", strings.ReplaceAll(kind, "_", " "), id, r.ws.id)
}

// handler answers one tool; it returns a JSON object value or an error.
type handler func(r *request) (any, error)

// CallTool answers call.Tool. The workspace is call.WorkspaceID when the
// gateway pins one (a server-started agent), else the workspace_id
// argument, which the gateway's policy has checked; global tools
// (list_workspaces, the newsfeed) need none. A record missing from the
// workspace or a refused action is an isError result saying what to do.
//
// Errors: *gateway.Error EInvalid when a workspace-scoped call has no
// workspace, or the pinned and the argument's workspace differ (wiring
// bugs: the policy refuses both first); EUnavailable when ctx is done;
// EInternal when a result cannot be encoded (a bug).
func (b *Backend) CallTool(ctx context.Context, call gateway.ToolCall) (*gateway.ToolResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, gateway.Wrap(gateway.EUnavailable, gateway.NotDispatched(err), "cc_server demo: call cancelled before it ran")
	}
	h, ok := b.tools[call.Tool]
	if !ok {
		return errorResult(fmt.Sprintf("unknown tool %q", call.Tool)), nil
	}
	r := &request{actor: call.Actor, args: call.Arguments, now: b.now().UTC(), b: b}
	if r.args == nil {
		r.args = map[string]any{}
	}
	b.mu.Lock()
	defer b.mu.Unlock() // held while encoding: results point into the state
	if !globalTools[call.Tool] {
		ws, err := callWorkspace(call)
		if err != nil {
			return nil, err
		}
		if ws != "" {
			r.ws = b.workspace(ws, "")
		} else if !optionalTools[call.Tool] {
			return nil, gateway.Wrap(gateway.EInvalid, gateway.ErrNotDispatched,
				fmt.Sprintf("cc_server demo: %s needs a workspace; the gateway must pass workspace_id", call.Tool))
		}
	}
	out, err := h(r)
	return toResult(call.Tool, out, err)
}

// callWorkspace is the workspace a call acts in.
func callWorkspace(call gateway.ToolCall) (string, error) {
	arg, _ := call.Arguments["workspace_id"].(string)
	switch {
	case call.WorkspaceID != "" && arg != "" && arg != call.WorkspaceID:
		return "", gateway.Wrap(gateway.EInvalid, gateway.ErrNotDispatched,
			fmt.Sprintf("cc_server demo: %s names workspace %s, but the caller is pinned to %s; the policy must refuse this", call.Tool, arg, call.WorkspaceID))
	case call.WorkspaceID != "":
		return call.WorkspaceID, nil
	}
	return arg, nil
}

// ResolveResource tells the workspace of the entity kind/id wherever it
// lives (attribute "workspace_id"), so the policy can refuse a call that
// names one workspace and targets an entity of another (docs/requirements.md#cc-workspace-id: a
// mismatching workspace_id is refused, not ignored). workspaceID (the
// caller's pinned workspace, "" for none) does not narrow the search: the
// point is to find the entity's own workspace. found is false when no
// workspace holds it.
func (b *Backend) ResolveResource(ctx context.Context, workspaceID, kind, id string) (map[string]string, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.workspaces {
		if e := w.find(kind, id); e != nil {
			return map[string]string{"workspace_id": w.id}, true, nil
		}
	}
	return nil, false, nil
}

func toResult(name string, out any, err error) (*gateway.ToolResult, error) {
	if err != nil {
		if te, ok := err.(*toolError); ok {
			return errorResult(te.msg), nil
		}
		return nil, gateway.Wrap(gateway.EInternal, err, "cc_server demo failed to run "+name)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, gateway.Wrap(gateway.EInternal, err, "cc_server demo could not encode the result of "+name)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, gateway.Wrap(gateway.EInternal, err, "cc_server demo result of "+name+" is not an object")
	}
	return &gateway.ToolResult{Content: []map[string]any{}, StructuredContent: obj}, nil
}

func errorResult(msg string) *gateway.ToolResult {
	return &gateway.ToolResult{IsError: true, Content: []map[string]any{{"type": "text", "text": msg}}}
}

// workspaceList answers list_workspaces: every workspace, sorted by id.
func (b *Backend) workspaceList() []map[string]any {
	ids := slices.Sorted(maps.Keys(b.workspaces))
	out := make([]map[string]any, 0, len(ids))
	for _, id := range ids {
		out = append(out, map[string]any{"id": id, "name": b.workspaces[id].name})
	}
	return out
}
