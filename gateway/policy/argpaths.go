package policy

import (
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpgate/mcpgate/gateway"
)

// argumentUse says which call arguments the compiled bundle can read. The
// decision cache keys tools/call decisions on those arguments only, so
// calls that differ in arguments the policy never looks at share one cache
// entry. The analysis is conservative: any way of reaching arguments that is
// not input.arguments.<constant key> (the bare input document, a variable
// key, the whole arguments object) makes every argument part of the key.
type argumentUse struct {
	all  bool
	keys []string
}

// read returns the arguments the bundle can read: args itself when it may
// read any, else only the keys it names, so arguments no rule looks at
// (such as script.run's inputs) are never converted into the policy input;
// nil (no arguments) when args holds none of those keys.
func (u argumentUse) read(args map[string]any) map[string]any {
	if u.all || len(args) == 0 {
		return args
	}
	var out map[string]any
	for _, k := range u.keys {
		if v, ok := args[k]; ok {
			if out == nil {
				out = make(map[string]any, len(u.keys))
			}
			out[k] = v
		}
	}
	return out
}

// analyseArguments leaves out the modules of the other surfaces' packages
// (data.supacloud, data.ccserver and their subpackages): their rules never
// decide this engine's calls, so what they read must not widen the cache
// key. Every other module (a shared library package, say) is looked at.
func analyseArguments(c *ast.Compiler, surface string) argumentUse {
	seen := map[string]bool{}
	use := argumentUse{}
	for _, m := range c.Modules {
		if otherSurface(m.Package.Path, surface) {
			continue
		}
		ast.WalkRefs(m, func(r ast.Ref) bool {
			if use.all || !r[0].Equal(ast.InputRootDocument) {
				return false
			}
			key, ok := argumentKey(r)
			switch {
			case !ok:
				use.all = true
			case key != "" && !seen[key]:
				seen[key] = true
				use.keys = append(use.keys, key)
			}
			return false
		})
	}
	return use
}

// argumentKey classifies one ref rooted at input: ("", true) when it cannot
// reach arguments, (key, true) for input.arguments.<key>, ok false when it
// may reach arguments in a way the key cannot capture.
func argumentKey(r ast.Ref) (string, bool) {
	if len(r) < 2 {
		return "", false // bare input: could be marshalled or iterated whole
	}
	first, ok := r[1].Value.(ast.String)
	if !ok {
		return "", false // input[x]
	}
	if first != "arguments" {
		return "", true
	}
	if len(r) < 3 {
		return "", false // the whole arguments object
	}
	key, ok := r[2].Value.(ast.String)
	if !ok {
		return "", false
	}
	return string(key), true
}

// ArgumentKeys reports which call arguments the bundle can read: all is
// true when any argument may be read (the cache then keys on all of them),
// else keys lists the top-level argument names read.
func (e *Engine) ArgumentKeys() (all bool, keys []string) {
	return e.args.all, append([]string(nil), e.args.keys...)
}

// usesNondeterministic reports whether any rule of the bundle calls a
// builtin OPA marks nondeterministic (time.now_ns, http.send, rand.intn,
// uuid.rfc4122, opa.runtime, net.lookup_ip_addr, …). Such a bundle can
// answer the same input differently over time, so the engine then turns its
// decision cache off rather than keep serving an answer the policy would no
// longer give.
func usesNondeterministic(c *ast.Compiler) bool {
	found := false
	for _, m := range c.Modules {
		ast.WalkExprs(m, func(e *ast.Expr) bool {
			if found || !e.IsCall() {
				return found
			}
			name := e.Operator().String()
			if b, ok := ast.BuiltinMap[name]; ok && b.Nondeterministic {
				found = true
			}
			return found
		})
	}
	return found
}

// Caching reports whether the engine memoises decisions (false when turned
// off by Options.CacheSize or by a nondeterministic bundle).
func (e *Engine) Caching() bool { return e.cache != nil }

// otherSurface reports whether pkg is (under) the package of a surface
// other than surface.
func otherSurface(pkg ast.Ref, surface string) bool {
	for _, s := range []string{gateway.SurfaceSupaCloud, gateway.SurfaceCCServer} {
		if s != surface && pkg.HasPrefix(ast.DefaultRootRef.Append(ast.StringTerm(s))) {
			return true
		}
	}
	return false
}
