package policy

import (
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpgate/mcpgate/gateway"
)

// The policy input (policies/supacloud/README.md, Input) is described once,
// by writeBase and writeCall, as a stream of members written to an
// inputWriter. astWriter turns that stream into the OPA value the prepared
// query evaluates (built directly as AST: no JSON round trip on the hot
// path); keyWriter turns the same stream into the bytes whose digest is
// the decision cache's key. The key is therefore derived from the input
// itself, not from a second, hand-kept list of its fields: a member added
// to the input is part of the key, and a cached decision can only be
// reused for an identical input.
type inputWriter interface {
	// open starts an object member named key ("" for the root object);
	// close ends the innermost open object.
	open(key string)
	close()
	str(key, v string)
	boolean(key string, v bool)
	// strs writes an array of strings, or null when v is nil and
	// nilIsNull is set.
	strs(key string, v []string, nilIsNull bool)
	// grants writes a permission map as an object of booleans.
	grants(key string, p gateway.Permissions)
	// term writes a value built as AST already (the edition, the
	// arguments).
	term(key string, t *ast.Term)
}

// writeBase writes the part of the policy input shared by tools/call and
// tools/list, without closing the root object.
func (e *Engine) writeBase(w inputWriter, p *gateway.Principal, c *gateway.Caller) {
	if e.cc {
		writeCCBase(w, p, c)
		return
	}
	w.open("")
	w.term("edition", e.edition)
	w.open("principal")
	w.str("kind", string(p.Kind))
	w.str("sub", p.Subject)
	w.str("workspace_id", p.WorkspaceID)
	w.str("task_id", p.TaskID)
	w.strs("scopes", p.Scopes, false)
	w.close()
	w.str("profile_requested", p.ProfileID)
	if c.ProfileDeleted {
		// Only when true, so every other input (and its cache key) is as before.
		w.boolean("profile_deleted", true)
	}
	w.open("permissions")
	w.grants("user_overrides", c.UserOverrides)
	w.grants("workspace_overrides", c.WorkspaceOverrides)
	if c.SeatType != nil {
		w.open("seat_type")
		w.str("name", c.SeatType.Name)
		w.boolean("enterprise_only", c.SeatType.EnterpriseOnly)
		w.grants("permissions", c.SeatType.Permissions)
		w.close()
	}
	if c.OrgPlan != nil {
		w.open("org_plan")
		w.str("name", c.OrgPlan.Name)
		w.grants("permissions", c.OrgPlan.Permissions)
		w.close()
	}
	w.close()
	if c.Task != nil {
		w.open("task")
		w.str("id", c.Task.ID)
		w.str("status", c.Task.Status)
		w.close()
	}
	if c.Member != nil {
		w.open("member")
		w.str("role", c.Member.Role)
		w.str("seat_type", c.Member.SeatType)
		w.close()
	}
	if c.Profile != nil {
		writeProfile(w, "profile", c.Profile)
	}
	if c.DefaultProfile != nil {
		writeProfile(w, "default_profile", c.DefaultProfile)
	}
}

func writeProfile(w inputWriter, key string, pr *gateway.Profile) {
	w.open(key)
	w.str("id", pr.ID)
	w.str("name", pr.Name)
	w.strs("allowlist", pr.Allowlist, false)
	w.strs("script_allowlist", pr.ScriptAllowlist, true)
	w.close()
}

// writeCall writes the complete input of one tools/call: the base input,
// the tool, and args, the term of the arguments the bundle can read
// (argumentUse, argumentsTerm).
func (e *Engine) writeCall(w inputWriter, p *gateway.Principal, c *gateway.Caller, tool ToolRef, args *ast.Term) {
	if e.cc {
		e.writeCCCall(w, p, c, tool, args)
		return
	}
	e.writeBase(w, p, c)
	w.open("tool")
	e.writeTool(w, tool)
	w.close()
	writeResource(w, tool.Resource)
	writeWorkspace(w, tool.FlowRules)
	e.writeSession(w, tool.Session)
	w.term("arguments", args)
	w.close()
}

// writeWorkspace writes input.workspace, {"flow_rules": true}, when the
// admin of the workspace the call acts in switched the shipped flow rule
// set on (ToolRef.FlowRules; docs/policy.md, "Flow rules"), on both
// surfaces. Only then, so that every other input, and its decision cache
// key, stays as it was; the key changes with the switch, so no decision
// made before it is served after it.
func writeWorkspace(w inputWriter, on bool) {
	if !on {
		return
	}
	w.open("workspace")
	w.boolean("flow_rules", true)
	w.close()
}

// writeResource writes input.resource, unless r is nil.
func writeResource(w inputWriter, r map[string]string) {
	if r == nil {
		return
	}
	w.open("resource")
	var buf [8]string // a resource has a few attributes: no allocation
	keys := buf[:0]
	for k := range r {
		keys = append(keys, k)
	}
	slices.Sort(keys) // one order, so equal resources give equal cache keys
	for _, k := range keys {
		w.str(k, r[k])
	}
	w.close()
}

// astWriter builds the input as an OPA value. The input nests at most
// three objects deep (root, permissions, seat_type).
type astWriter struct {
	objs [4]ast.Object
	keys [4]string
	n    int
	root ast.Object
}

func (w *astWriter) open(key string) {
	w.objs[w.n], w.keys[w.n] = ast.NewObject(), key
	w.n++
}

func (w *astWriter) close() {
	w.n--
	if w.n == 0 {
		w.root = w.objs[0]
		return
	}
	w.set(w.keys[w.n], ast.NewTerm(w.objs[w.n]))
}

func (w *astWriter) set(key string, v *ast.Term) { w.objs[w.n-1].Insert(ast.InternedTerm(key), v) }

func (w *astWriter) str(key, v string)          { w.set(key, ast.StringTerm(v)) }
func (w *astWriter) boolean(key string, v bool) { w.set(key, ast.InternedTerm(v)) }
func (w *astWriter) term(key string, t *ast.Term) {
	w.set(key, t)
}

func (w *astWriter) strs(key string, v []string, nilIsNull bool) {
	if v == nil && nilIsNull {
		w.set(key, ast.NullTerm())
		return
	}
	terms := make([]*ast.Term, len(v))
	for i, s := range v {
		terms[i] = ast.StringTerm(s)
	}
	w.set(key, ast.ArrayTerm(terms...))
}

func (w *astWriter) grants(key string, p gateway.Permissions) {
	obj := ast.NewObjectWithCapacity(len(p))
	for k, v := range p {
		obj.Insert(ast.StringTerm(k), ast.InternedTerm(v))
	}
	w.set(key, ast.NewTerm(obj))
}

// keyWriter encodes the input stream as bytes in which every member is
// tagged with its kind and every string is length-prefixed, so that two
// different streams never share an encoding; permission maps are written
// in sorted key order, and AST terms as their text (ast.Term.AppendText,
// the Rego literal: objects and sets sorted, strings quoted), so that
// equal values encode alike. Equal encodings thus mean equal inputs.
type keyWriter struct {
	b       []byte
	scratch []byte
	keys    []string // grants' sorted names
	failed  bool
}

func (w *keyWriter) lstr(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}

// lbytes is lstr of string(b), without the string.
func (w *keyWriter) lbytes(b []byte) {
	w.b = binary.AppendUvarint(w.b, uint64(len(b)))
	w.b = append(w.b, b...)
}

func (w *keyWriter) tag(kind byte, key string) {
	w.b = append(w.b, kind)
	w.lstr(key)
}

func (w *keyWriter) open(key string) { w.tag('{', key) }
func (w *keyWriter) close()          { w.b = append(w.b, '}') }
func (w *keyWriter) str(key, v string) {
	w.tag('s', key)
	w.lstr(v)
}

func (w *keyWriter) boolean(key string, v bool) {
	w.tag('b', key)
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

func (w *keyWriter) strs(key string, v []string, nilIsNull bool) {
	if v == nil && nilIsNull {
		w.tag('0', key)
		return
	}
	w.tag('[', key)
	w.b = binary.AppendUvarint(w.b, uint64(len(v)))
	for _, s := range v {
		w.lstr(s)
	}
}

func (w *keyWriter) grants(key string, p gateway.Permissions) {
	w.tag('g', key)
	keys := w.keys[:0]
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w.keys = keys
	w.b = binary.AppendUvarint(w.b, uint64(len(keys)))
	for _, k := range keys {
		w.lstr(k)
		w.boolean("", p[k])
	}
}

func (w *keyWriter) term(key string, t *ast.Term) {
	w.tag('t', key)
	var err error
	if w.scratch, err = t.AppendText(w.scratch[:0]); err != nil {
		w.failed = true
	}
	w.lbytes(w.scratch)
}

// sum is the cache key of the stream written; ok is false when a term
// could not be written out (the input is then evaluated, not cached).
func (w *keyWriter) sum() (cacheKey, bool) {
	return sha256.Sum256(w.b), !w.failed
}

var (
	_ inputWriter           = (*astWriter)(nil)
	_ inputWriter           = (*keyWriter)(nil)
	_ encoding.TextAppender = (*ast.Term)(nil)
)

// toolsTerm is input.tools of tools/list: the catalog, built once at
// start (or once per version of a ToolSet), each tool as input.tool
// describes it, with the bundle's overrides of bridged tools applied.
func (e *Engine) toolsTerm(tools []ToolRef) *ast.Term {
	terms := make([]*ast.Term, len(tools))
	for i, t := range tools {
		var w astWriter
		w.open("")
		e.writeTool(&w, e.bridged(t))
		w.close()
		terms[i] = ast.NewTerm(w.root)
	}
	return ast.ArrayTerm(terms...)
}

// writeTool writes the members of one tool reference into the open
// object: input.tool of a tools/call and each entry of input.tools, so
// the decision and visible_tools read the same fields of every tool.
// SupaCloud's are name, tier and carve_out; cc_server's name, group,
// requires_approval and action_classes (policies/ccserver/README.md).
func (e *Engine) writeTool(w inputWriter, t ToolRef) {
	w.str("name", t.Name)
	if e.cc {
		w.str("group", t.Group)
		w.boolean("requires_approval", t.RequiresApproval)
		w.strs("action_classes", t.ActionClasses, false)
		writeBridged(w, t)
		return
	}
	w.str("tier", string(t.Tier))
	w.boolean("carve_out", t.CarveOut)
	writeBridged(w, t)
}

// argumentsTerm converts decoded JSON arguments (maps, slices, strings,
// float64/json.Number, bools, nil) to an AST term.
func argumentsTerm(args map[string]any) (*ast.Term, error) {
	if len(args) == 0 {
		return ast.ObjectTerm(), nil
	}
	v, err := ast.InterfaceToValue(args)
	if err != nil {
		return nil, err
	}
	return ast.NewTerm(v), nil
}
