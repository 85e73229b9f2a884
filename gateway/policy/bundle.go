package policy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strings"
	"testing/fstest"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/tester"
)

// maxBundleBytes bounds what readBundle copies from a policy folder: far
// above any real bundle (the shipped one is under 100 KiB), low enough
// that a folder pointed at the wrong place fails instead of filling memory.
const maxBundleBytes = 64 << 20

// readBundle copies the files of the policy folder dir into memory, so
// that the revision, the compiled modules and the tests of one load all
// see the same files however the folder changes meanwhile (an editor
// saving, a deploy copying). Hidden folders (.git, the ..data of a
// Kubernetes ConfigMap) are skipped; hidden files such as .manifest are
// kept.
func readBundle(dir string) (fs.FS, error) {
	src := os.DirFS(dir)
	out := fstest.MapFS{}
	var total int64
	err := fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(path.Base(p), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		b, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		if total += int64(len(b)); total > maxBundleBytes {
			return fmt.Errorf("the folder holds more than %d MiB; point it at the policy bundle only", maxBundleBytes>>20)
		}
		out[p] = &fstest.MapFile{Data: b, Mode: 0o444}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("policy: read bundle %s: %w", dir, err)
	}
	return out, nil
}

// passedCases is how many tests of r passed, counted as `opa test` (and so
// `mcpgate policy test`) counts them: a test with a name argument
// (test_x[n]) is one test per case, each leaf of its sub-results; any other
// is one. A skipped or erroring test counts none.
func passedCases(r *tester.Result) int {
	if r.Skip || r.Error != nil {
		return 0
	}
	if len(r.SubResults) == 0 {
		if r.Pass() {
			return 1
		}
		return 0
	}
	n := 0
	for _, sr := range r.SubResults.Iter {
		if len(sr.SubResults) == 0 && !sr.Fail {
			n++
		}
	}
	return n
}

// testTimeout bounds one Rego test of a candidate. OPA's own default (5 s)
// is too short for the shipped bundle's listed-⇔-callable matrices on a
// busy gateway, where a reload shares the CPU with live calls: a test
// that times out refuses the candidate.
const testTimeout = time.Minute

// runBundleTests runs the Rego tests (*_test.rego) of the bundle in fsys
// in-process with OPA's tester, as `opa test` does, and returns how many
// passed, counted as `opa test` counts them (passedCases). A failing or erroring test is an error naming each one with
// OPA's message; so is a bundle without a test that passes (a bundle
// that tests nothing proves nothing). The tests run on every core
// (GOMAXPROCS): the gate is what an edit waits for before it goes live,
// and it lasts about a second, while the calls it shares the cores with
// are short and the Go runtime schedules them among its goroutines.
func runBundleTests(ctx context.Context, fsys fs.FS) (int, error) {
	res, err := loader.NewFileLoader().WithFS(fsys).WithRegoVersion(ast.RegoV1).All([]string{"."})
	if err != nil {
		return 0, fmt.Errorf("policy: load bundle with its tests: %w", err)
	}
	store, err := res.Store()
	if err != nil {
		return 0, fmt.Errorf("policy: data documents: %w", err)
	}
	if err := refuseBuiltins(res.ParsedModules()); err != nil {
		return 0, err
	}
	ch, err := tester.NewRunner().
		SetCompiler(newCompiler()).
		SetStore(store).
		SetModules(res.ParsedModules()).
		SetDefaultRegoVersion(ast.RegoV1).
		RaiseBuiltinErrors(true).
		SetTimeout(testTimeout).
		SetParallel(runtime.GOMAXPROCS(0)).
		RunTests(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("policy: the bundle's tests do not compile: %w", err)
	}
	passed := 0
	var failed []string
	for r := range ch {
		passed += passedCases(r)
		switch {
		case r.Skip:
		case r.Error != nil:
			failed = append(failed, fmt.Sprintf("%s.%s: ERROR %v", r.Package, r.Name, r.Error))
		case r.Fail:
			at := ""
			if r.Location != nil {
				at = fmt.Sprintf(" (%s:%d)", r.Location.File, r.Location.Row)
			}
			failed = append(failed, fmt.Sprintf("%s.%s: FAIL%s", r.Package, r.Name, at))
		}
	}
	if err := ctx.Err(); err != nil {
		return passed, fmt.Errorf("policy: the bundle's tests did not finish: %w", err)
	}
	if n := len(failed); n > 0 {
		const shown = 10
		more := ""
		if n > shown {
			more = fmt.Sprintf("; and %d more", n-shown)
			failed = failed[:shown]
		}
		return passed, fmt.Errorf("policy: %d of the bundle's own tests fail (%d pass): %s%s; run `mcpgate policy test` on the folder to see them",
			n, passed, strings.Join(failed, "; "), more)
	}
	if passed == 0 {
		return 0, errors.New("policy: the bundle has no tests of its own that pass (no test_ rule in a *_test.rego file, or every one skipped); a candidate must prove itself before it decides calls: add tests beside its rules (see the built-in bundle's) and run `mcpgate policy test` on the folder")
	}
	return passed, nil
}
