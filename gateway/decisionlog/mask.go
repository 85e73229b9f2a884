package decisionlog

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Masker evaluates the bundle's mask rule (data.system.log.mask) with an
// event as its input; *policy.Engine implements it. Mask returns the rule's
// value (a set of rules, as []any) or an error when the evaluation fails
// or the rule is undefined: the event is then dropped, never logged
// unmasked.
type Masker interface {
	Mask(ctx context.Context, event map[string]any) (any, error)
}

// maskOp is one operation of a mask: OPA's "remove" (a plain JSON
// pointer string, or {"op": "remove", "path": …}) or "upsert"
// ({"op": "upsert", "path": …, "value": …}).
type maskOp struct {
	upsert bool
	path   string
	parts  []string // after the root part, percent-decoded
	root   string   // "input" or "result"
	value  any
}

// parseMask turns the mask rule's value into operations, with OPA's
// rules: the value is a set (array) whose members are JSON pointer
// strings (remove) or objects with "op" ("remove" or "upsert"), "path" and,
// for upsert, "value"; a path starts with /input or /result. Any other
// member fails the whole mask (and so drops the event).
func parseMask(v any) ([]maskOp, error) {
	rules, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("data.system.log.mask is a %T; want a set of JSON pointers or {\"op\", \"path\", \"value\"} objects", v)
	}
	ops := make([]maskOp, 0, len(rules))
	for _, r := range rules {
		var op maskOp
		switch r := r.(type) {
		case string:
			op.path = r
		case map[string]any:
			kind, _ := r["op"].(string)
			switch kind {
			case "remove":
			case "upsert":
				op.upsert = true
			default:
				return nil, fmt.Errorf("mask rule %v: op must be \"remove\" or \"upsert\"", r)
			}
			path, ok := r["path"].(string)
			if !ok {
				return nil, fmt.Errorf("mask rule %v: path must be a string", r)
			}
			op.path, op.value = path, r["value"]
		default:
			return nil, fmt.Errorf("mask rule of type %T: want a JSON pointer string or an object", r)
		}
		if err := op.split(); err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// split checks op.path and splits it into its root and decoded parts. A
// part is percent-decoded, so "%2F" addresses a key holding "/" (OPA's
// pointers are percent-escaped in the same way).
func (op *maskOp) split() error {
	if !strings.HasPrefix(op.path, "/") {
		return fmt.Errorf("mask path %q must start with /input or /result", op.path)
	}
	parts := strings.Split(op.path[1:], "/")
	if parts[0] != "input" && parts[0] != "result" {
		return fmt.Errorf("mask path %q: prefix %q not allowed; want /input or /result", op.path, parts[0])
	}
	op.root = parts[0]
	for _, p := range parts[1:] {
		d, err := url.PathUnescape(p)
		if err != nil {
			return fmt.Errorf("mask path %q: %w", op.path, err)
		}
		op.parts = append(op.parts, d)
	}
	return nil
}

// applyMask carries ops out on ev in order, as OPA does: a remove of a
// path that does not exist, or an upsert through a value that is not an
// object or array, is skipped; each operation carried out is recorded in
// ev.Erased or ev.Masked.
func applyMask(ev *Event, ops []maskOp) {
	for _, op := range ops {
		doc := &ev.Input
		if op.root == "result" {
			doc = &ev.Result
		}
		if *doc == nil {
			continue
		}
		var ok bool
		switch {
		case op.upsert && len(op.parts) == 0:
			*doc, ok = op.value, true
		case op.upsert:
			ok = upsert(*doc, op.parts, op.value) == nil
		case len(op.parts) == 0:
			*doc, ok = nil, true
		default:
			if v, err := removeAt(*doc, op.parts); err == nil {
				*doc, ok = v, true
			}
		}
		if !ok {
			continue
		}
		if op.upsert {
			ev.Masked = append(ev.Masked, op.path)
		} else {
			ev.Erased = append(ev.Erased, op.path)
		}
	}
	eraseDerived(ev)
}

// derivedFromArguments are the input fields that copy a call argument's
// value: the gateway takes input.resource.id from the argument the
// tool's catalog entry names (pipeline.resolveResource; a cc_server
// ticket_id, say). A mask lists arguments by name, so it cannot see the
// copy: whatever the bundle's mask says, a copy is logged only when a
// top-level argument with the same value is logged as well.
var derivedFromArguments = [][]string{{"resource", "id"}}

// eraseDerived erases each derivedFromArguments field of ev's input whose
// value no argument left in the masked input holds (the argument was
// erased, masked, or never in the input because the policy does not read
// it), and records it in ev.Erased.
func eraseDerived(ev *Event) {
	in, ok := ev.Input.(map[string]any)
	if !ok {
		return
	}
	args, _ := in["arguments"].(map[string]any)
	for _, path := range derivedFromArguments {
		v, ok := lookup(in, path)
		if !ok {
			continue
		}
		kept := false
		for _, a := range args {
			if reflect.DeepEqual(a, v) {
				kept = true
				break
			}
		}
		if kept {
			continue
		}
		if _, err := removeAt(in, path); err == nil {
			ev.Erased = append(ev.Erased, "/input/"+strings.Join(path, "/"))
		}
	}
}

// lookup returns the value at path below the object v.
func lookup(v any, path []string) (any, bool) {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[p]; !ok {
			return nil, false
		}
	}
	return v, true
}

var errNoPath = errors.New("mask path does not exist")

// removeAt deletes the value at path below v (an object member or an array
// element) and returns v, or the shortened array that replaces it.
func removeAt(v any, path []string) (any, error) {
	p := path[0]
	switch n := v.(type) {
	case map[string]any:
		c, ok := n[p]
		if !ok {
			return nil, errNoPath
		}
		if len(path) == 1 {
			delete(n, p)
			return n, nil
		}
		nc, err := removeAt(c, path[1:])
		if err != nil {
			return nil, err
		}
		n[p] = nc
		return n, nil
	case []any:
		i, ok := index(p, len(n))
		if !ok {
			return nil, errNoPath
		}
		if len(path) == 1 {
			return slices.Delete(n, i, i+1), nil
		}
		nc, err := removeAt(n[i], path[1:])
		if err != nil {
			return nil, err
		}
		n[i] = nc
		return n, nil
	}
	return nil, errNoPath
}

// upsert sets the value at path below v, creating the objects on the way
// that do not exist (OPA's mkdirp); an array element must exist.
func upsert(v any, path []string, value any) error {
	for _, p := range path[:len(path)-1] {
		switch n := v.(type) {
		case map[string]any:
			c, ok := n[p]
			if !ok {
				c = map[string]any{}
				n[p] = c
			}
			v = c
		case []any:
			i, ok := index(p, len(n))
			if !ok {
				return errNoPath
			}
			v = n[i]
		default:
			return errNoPath
		}
	}
	last := path[len(path)-1]
	switch n := v.(type) {
	case map[string]any:
		n[last] = value
	case []any:
		i, ok := index(last, len(n))
		if !ok {
			return errNoPath
		}
		n[i] = value
	default:
		return errNoPath
	}
	return nil
}

// index parses p as an index into an array of length n.
func index(p string, n int) (int, bool) {
	i, err := strconv.Atoi(p)
	return i, err == nil && i >= 0 && i < n
}
