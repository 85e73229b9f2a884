package policy

import (
	"encoding/binary"
	"encoding/json"
	"slices"
	"strconv"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/mcpgate/mcpgate/gateway"
)

// DefaultCacheSize is the number of decisions (and visible tool sets) the
// engine keeps when Options.CacheSize is 0.
const DefaultCacheSize = 8192

// decisionCache memoises policy results by their complete input. The bundle
// and its data are fixed for an Engine's lifetime, so for a bundle that
// calls no nondeterministic builtin (time, http.send, random, …; the engine
// turns the cache off for bundles that do) an identical input always yields
// the identical result: caching by the full input is exact, never stale. A reload builds a new Engine and so
// a new cache. Keys hold no secrets (inputs carry none).
type decisionCache struct {
	decisions *lru.Cache[string, *gateway.Decision]
	visible   *lru.Cache[string, map[string]bool]
}

func newDecisionCache(size int) *decisionCache {
	if size < 0 {
		return nil
	}
	if size == 0 {
		size = DefaultCacheSize
	}
	d, _ := lru.New[string, *gateway.Decision](size)
	v, _ := lru.New[string, map[string]bool](size)
	return &decisionCache{decisions: d, visible: v}
}

// inputKey encodes everything baseInput puts into the policy input, each
// field length-prefixed so that no two different inputs share a key.
type inputKey struct{ b []byte }

func (k *inputKey) str(s string) {
	k.b = binary.AppendUvarint(k.b, uint64(len(s)))
	k.b = append(k.b, s...)
}

func (k *inputKey) strs(ss []string, present bool) {
	if !present {
		k.b = append(k.b, 0xff)
		return
	}
	k.b = binary.AppendUvarint(k.b, uint64(len(ss)))
	for _, s := range ss {
		k.str(s)
	}
}

func (k *inputKey) perms(p gateway.Permissions) {
	keys := make([]string, 0, len(p))
	for key := range p {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	k.b = binary.AppendUvarint(k.b, uint64(len(keys)))
	for _, key := range keys {
		k.str(key)
		k.str(strconv.FormatBool(p[key]))
	}
}

func (k *inputKey) profile(p *gateway.Profile) {
	if p == nil {
		k.b = append(k.b, 0)
		return
	}
	k.b = append(k.b, 1)
	k.str(p.ID)
	k.str(p.Name)
	k.strs(p.Allowlist, true)
	k.strs(p.ScriptAllowlist, p.ScriptAllowlist != nil)
}

// baseKey is the cache key of baseInput(p, c).
func (e *Engine) baseKey(p *gateway.Principal, c *gateway.Caller) *inputKey {
	k := &inputKey{b: make([]byte, 0, 256)}
	k.str(string(p.Kind))
	k.str(p.Subject)
	k.str(p.WorkspaceID)
	k.str(p.TaskID)
	k.str(p.ProfileID)
	k.strs(p.Scopes, true)
	if c.Task != nil {
		k.str(c.Task.ID)
		k.str(c.Task.Status)
	} else {
		k.b = append(k.b, 0xff)
	}
	if c.Member != nil {
		k.str(c.Member.Role)
		k.str(c.Member.SeatType)
	} else {
		k.b = append(k.b, 0xff)
	}
	k.profile(c.Profile)
	k.profile(c.DefaultProfile)
	k.perms(c.UserOverrides)
	k.perms(c.WorkspaceOverrides)
	if c.SeatType != nil {
		k.str(c.SeatType.Name)
		k.str(strconv.FormatBool(c.SeatType.EnterpriseOnly))
		k.perms(c.SeatType.Permissions)
	} else {
		k.b = append(k.b, 0xff)
	}
	if c.OrgPlan != nil {
		k.str(c.OrgPlan.Name)
		k.perms(c.OrgPlan.Permissions)
	} else {
		k.b = append(k.b, 0xff)
	}
	return k
}

// callKey extends the base key with the tool and the arguments the policy
// can read (argumentUse); ok is false
// when the arguments cannot be encoded (the call is then not cached).
func (e *Engine) callKey(p *gateway.Principal, c *gateway.Caller, tool ToolRef, args map[string]any) (string, bool) {
	k := e.baseKey(p, c)
	k.str(tool.Name)
	k.str(string(tool.Tier))
	k.str(strconv.FormatBool(tool.CarveOut))
	if e.args.all {
		raw, err := json.Marshal(args) // sorted map keys: a canonical encoding
		if err != nil {
			return "", false
		}
		k.str(string(raw))
		return string(k.b), true
	}
	for _, name := range e.args.keys {
		v, present := args[name]
		if !present {
			k.b = append(k.b, 0xff)
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return "", false
		}
		k.str(string(raw))
	}
	return string(k.b), true
}
