package policy

import (
	"fmt"
	"slices"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// RefusedBuiltins are the OPA built-in functions a gateway policy may not
// call: they reach the network (http.send, net.lookup_ip_addr) or read
// the gateway's environment (opa.runtime). A decision is made from its
// input and the bundle's data; a policy that calls out could leak the
// input to anyone, or hold calls for as long as a remote host answers.
// Every engine (the live bundle, reload candidates, the shadow candidate,
// a candidate's own tests) is compiled with capabilities that leave them
// out, so such a bundle is refused with an error naming the builtin.
var RefusedBuiltins = []string{"http.send", "net.lookup_ip_addr", "opa.runtime"}

// Capabilities returns OPA's capabilities of this version without
// RefusedBuiltins, for every compiler of policies (`mcpgate policy test`
// passes them to OPA as --capabilities).
func Capabilities() *ast.Capabilities { return capabilities() }

var capabilities = sync.OnceValue(func() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	c.Builtins = slices.DeleteFunc(slices.Clone(c.Builtins), func(b *ast.Builtin) bool {
		return slices.Contains(RefusedBuiltins, b.Name)
	})
	return c
})

// newCompiler is the compiler of every policy module: OPA's, with
// Capabilities.
func newCompiler() *ast.Compiler { return ast.NewCompiler().WithCapabilities(capabilities()) }

// refuseBuiltins returns an error naming the first call to one of
// RefusedBuiltins in modules (with its file and line), nil when there is
// none: clearer than the compiler's "undefined function".
func refuseBuiltins(modules map[string]*ast.Module) error {
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range modules {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range names {
		var found *ast.Term // the operator of a call, in a body or a head
		ast.WalkTerms(modules[n], func(t *ast.Term) bool {
			if found != nil {
				return true
			}
			if r, ok := t.Value.(ast.Ref); ok && slices.Contains(RefusedBuiltins, r.String()) {
				found = t
				return true
			}
			return false
		})
		if found == nil {
			continue
		}
		at := n
		if found.Location != nil {
			at = fmt.Sprintf("%s:%d", found.Location.File, found.Location.Row)
		}
		return fmt.Errorf("policy: %s calls %s, a builtin the gateway leaves out of every policy (it reaches the network or the gateway's environment: %v); decide from the input and the bundle's data instead",
			at, found, RefusedBuiltins)
	}
	return nil
}
