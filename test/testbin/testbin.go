// Package testbin gives the tests that start the real mcpgate process
// (cmd/mcpgate's signal and make run tests, test/ratelimit's clusters) its
// binary: $MCPGATE_BIN when set (make test builds bin/mcpgate from the tree
// once and passes it to every package), else cmd/mcpgate built once per
// test process into a temporary folder. A link of the whole gateway costs
// seconds of CPU; each test starts its own process from the one binary.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	once  sync.Once
	path  string // the binary Mcpgate returns
	dir   string // the temporary folder it was built in; "" for $MCPGATE_BIN
	built error
)

// Mcpgate returns the path of the mcpgate binary: $MCPGATE_BIN, or
// cmd/mcpgate built by the go command on PATH the first time it is asked
// for in this process. t fails when the build fails.
func Mcpgate(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if path = os.Getenv("MCPGATE_BIN"); path != "" {
			return
		}
		if dir, built = os.MkdirTemp("", "mcpgate-bin-"); built != nil {
			return
		}
		path = filepath.Join(dir, "mcpgate")
		if out, err := exec.Command("go", "build", "-o", path, "github.com/mcpgate/mcpgate/cmd/mcpgate").CombinedOutput(); err != nil {
			built = fmt.Errorf("go build cmd/mcpgate: %v\n%s", err, out)
		}
	})
	if built != nil {
		t.Fatal(built)
	}
	return path
}

// Cleanup removes the binary Mcpgate built, if it built one; a package's
// TestMain calls it after m.Run.
func Cleanup() {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}
