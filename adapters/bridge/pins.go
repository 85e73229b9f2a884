package bridge

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/adapters/mcpupstream"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/canon"
)

// Definition is what a pin covers of a listed tool (docs/requirements.md#pinned-tools: name,
// title, description, inputSchema, outputSchema, annotations), as one
// JSON object, its hash ("sha256:<hex>" of its RFC 8785 form,
// gateway/canon) and the hash of the same object without the name (how a
// rename is recognised).
func Definition(t mcpupstream.UpstreamTool) (def json.RawMessage, hash, body string, err error) {
	if def, err = json.Marshal(t); err != nil {
		return nil, "", "", err
	}
	if hash, err = hashOf(def); err != nil {
		return nil, "", "", err
	}
	body, err = bodyHash(def)
	return def, hash, body, err
}

func hashOf(raw json.RawMessage) (string, error) {
	v, err := canon.Decode(raw)
	if err != nil {
		return "", err
	}
	return canon.Hash(v)
}

// bodyHash is the hash of a definition without its name.
func bodyHash(def json.RawMessage) (string, error) {
	rest, err := canon.WithoutMembers(def, "name")
	if err != nil {
		return "", err
	}
	return hashOf(rest)
}

// Review is one review of a surface's listed tools against its pins
// (docs/requirements.md#pinned-tools).
type Review struct {
	// Add are the pins to insert (first sight, or a tool quarantined as
	// new or renamed), Update the pins whose state or definition under
	// review changes.
	Add, Update []gateway.ToolPin
	// Quarantined are the registry names of the tools not served, each
	// with what changed, for the tool.quarantined refusal.
	Quarantined map[string]string
}

// ReviewTools compares the listed tools of one surface's upstreams with
// their pins (pins of other surfaces are ignored):
//
//   - an upstream without any pin is being seen first: every tool it
//     lists is pinned as listed;
//   - a pinned tool whose definition hashes as pinned is served; one that
//     differs is quarantined (change "definition");
//   - a tool without a pin that has the definition (all but the name) of
//     a pinned tool the upstream no longer lists is quarantined as a
//     rename; any other is quarantined as new, unless the upstream's
//     new_tools is allow (AllowNewTools), which pins and serves it;
//   - a tool that lists its pinned definition is served, even while
//     another definition of it is under review (a replica that has not
//     listed the change yet, or an upstream that undid it); one listing
//     yet another definition is quarantined with it; a rejected one
//     listing the rejected definition stays out.
//
// A tool whose definition cannot be hashed is quarantined.
func ReviewTools(surface string, ups []Upstream, tools []Tool, pins []gateway.ToolPin, now time.Time) Review {
	type key struct{ up, tool string }
	byKey := map[key]gateway.ToolPin{}
	pinned := map[string]bool{} // upstreams that have pins
	for _, p := range pins {
		if p.Surface == surface {
			byKey[key{p.Upstream, p.Tool}] = p
			pinned[p.Upstream] = true
		}
	}
	listed := map[key]bool{}
	for _, t := range tools {
		listed[key{t.Upstream, t.Listed.Name}] = true
	}
	allow := map[string]bool{}
	for _, u := range ups {
		allow[u.Name] = u.AllowNewTools
	}
	r := Review{Quarantined: map[string]string{}}
	for _, t := range tools {
		def, hash, body, err := Definition(t.Listed)
		if err != nil {
			r.Quarantined[t.Name] = "its definition cannot be read as JSON: " + err.Error()
			continue
		}
		k := key{t.Upstream, t.Listed.Name}
		fresh := gateway.ToolPin{Surface: surface, Upstream: t.Upstream, Tool: t.Listed.Name, UpdatedAt: now}
		p, ok := byKey[k]
		if !ok {
			switch from := renamedFrom(byKey, listed, t.Upstream, body); {
			case !pinned[t.Upstream] || (from == "" && allow[t.Upstream]):
				fresh.State, fresh.Hash, fresh.Definition = gateway.PinPinned, hash, def
			case from != "":
				fresh.State, fresh.Change, fresh.RenamedFrom = gateway.PinQuarantined, gateway.PinChangeRename, from
				fresh.CurrentHash, fresh.Current = hash, def
				r.Quarantined[t.Name] = fmt.Sprintf("it appeared under a new name with the definition of %s, which the upstream no longer lists (a rename)", from)
			default:
				fresh.State, fresh.Change, fresh.CurrentHash, fresh.Current = gateway.PinQuarantined, gateway.PinChangeNew, hash, def
				r.Quarantined[t.Name] = "it is new since the upstream was first reviewed"
			}
			r.Add = append(r.Add, fresh)
			continue
		}
		switch {
		case p.Hash != "" && p.Hash == hash:
			// The pinned definition is served, whatever is under review:
			// no write, so replicas that list the upstream at different
			// moments never undo each other's quarantine.
		case p.State == gateway.PinRejected && p.CurrentHash == hash:
			r.Quarantined[t.Name] = "a reviewer rejected its definition (" + p.DecidedBy + ")"
		case p.State == gateway.PinQuarantined && p.CurrentHash == hash:
			r.Quarantined[t.Name] = whatChanged(p)
		default:
			if p.Change == "" || p.Hash != "" {
				p.Change = gateway.PinChangeDefinition
			}
			p.State, p.CurrentHash, p.Current, p.UpdatedAt = gateway.PinQuarantined, hash, def, now
			r.Update = append(r.Update, p)
			r.Quarantined[t.Name] = whatChanged(p)
		}
	}
	return r
}

// renamedFrom is the pinned tool of upstream up, no longer listed, whose
// definition without its name hashes to body; "" for none.
func renamedFrom[K comparable](pins map[K]gateway.ToolPin, listed map[K]bool, up, body string) string {
	var names []string
	for k, p := range pins {
		if p.Upstream != up || p.State != gateway.PinPinned || listed[k] || len(p.Definition) == 0 {
			continue
		}
		if b, err := bodyHash(p.Definition); err == nil && b == body {
			names = append(names, p.Tool)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// whatChanged says why p is quarantined, naming the members of the
// definition that differ from the pinned one.
func whatChanged(p gateway.ToolPin) string {
	switch p.Change {
	case gateway.PinChangeNew:
		return "it is new since the upstream was first reviewed"
	case gateway.PinChangeRename:
		return fmt.Sprintf("it appeared under a new name with the definition of %s (a rename)", p.RenamedFrom)
	}
	return "its definition changed since it was pinned (" + strings.Join(ChangedMembers(p.Definition, p.Current), ", ") + ")"
}

// ChangedMembers names the top-level members of the definitions a and b
// whose values differ, sorted.
func ChangedMembers(a, b json.RawMessage) []string {
	var x, y map[string]json.RawMessage
	_ = json.Unmarshal(a, &x)
	_ = json.Unmarshal(b, &y)
	var out []string
	for k, v := range x {
		if w, ok := y[k]; !ok || !sameJSON(v, w) {
			out = append(out, k)
		}
	}
	for k := range y {
		if _, ok := x[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func sameJSON(a, b json.RawMessage) bool {
	ha, err1 := hashOf(a)
	hb, err2 := hashOf(b)
	return err1 == nil && err2 == nil && ha == hb
}
