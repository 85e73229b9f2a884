package policies_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
)

// TestEachFolderOnItsOwn runs the Rego tests of policies/ and of every
// surface folder in it as its own root, as `opa test policies/supacloud`
// does: a bundle must not depend on being loaded from the folder above
// (a data.json there would land at the data root instead of at
// data.<surface>).
func TestEachFolderOnItsOwn(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	roots := []string{"."}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "testdata" {
			roots = append(roots, e.Name())
		}
	}
	if len(roots) < 2 {
		t.Fatal("no surface folder under policies/")
	}
	for _, root := range roots {
		name := root
		if root == "." {
			name = "policies"
		}
		t.Run(name, func(t *testing.T) {
			modules, store, err := tester.LoadWithRegoVersion([]string{root}, nil, ast.RegoV1)
			if err != nil {
				t.Fatalf("load %s: %v", root, err)
			}
			// OPA's default of 5 s per test is too short for the matrix
			// tests under -race on a loaded machine.
			ch, err := tester.NewRunner().SetStore(store).SetTimeout(2*time.Minute).Run(context.Background(), modules)
			if err != nil {
				t.Fatalf("run the tests of %s: %v", root, err)
			}
			var passed int
			var failed []string
			for r := range ch {
				if r.Pass() {
					passed++
					continue
				}
				msg := r.Package + "." + r.Name
				if r.Error != nil {
					msg += ": " + r.Error.Error()
				}
				failed = append(failed, msg)
			}
			if len(failed) > 0 || passed == 0 {
				t.Fatalf("opa test %s: %d passed, %d failed:\n%s", root, passed, len(failed), strings.Join(failed, "\n"))
			}
		})
	}
}
