package policy

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sync"

	"github.com/open-policy-agent/opa/v1/version"
)

// ContentHash names the exact bytes a candidate's tests see: "sha256:"
// and a hash of the OPA version that tests them and of every file in
// fsys (path and content, tests, data and READMEs included). Unlike the
// revision, which a .manifest may keep while files change and which
// leaves tests out, two bundles with one ContentHash are the same tests
// of the same rules run by the same OPA: they pass or fail alike.
func ContentHash(fsys fs.FS) (string, error) {
	h := sha256.New()
	write := func(b []byte) {
		_ = binary.Write(h, binary.BigEndian, uint64(len(b)))
		h.Write(b)
	}
	write([]byte("mcpgate policy content 1"))
	write([]byte(version.Version))
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error { // lexical order
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		write([]byte(p))
		write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("policy: hash bundle: %w", err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// DefaultTestedBundles is how many passed bundles NewTestedBundles keeps
// when given 0: far more than the revisions a gateway switches between.
const DefaultTestedBundles = 64

// TestedBundles remembers, per gateway process, the ContentHash of the
// bundles whose own tests passed, with how many passed, so that the same
// bytes are tested once: a reload of an unchanged shadow folder, the
// second surface reading the same folder, a revision switched back to.
// It keeps at most its bound, forgetting the oldest first. Two loads of
// the same bytes at once run the tests once; the other waits for that
// run. Only passes are kept: a refused bundle is tested again when it is
// loaded again. It is safe for concurrent use.
type TestedBundles struct {
	mu      sync.Mutex
	max     int
	passed  map[string]int
	order   []string // oldest first
	running map[string]*testRun
}

type testRun struct {
	done      chan struct{}
	n         int
	err       error
	cancelled bool // the run's own context ended: its error says nothing of the bundle
}

// NewTestedBundles returns an empty set of at most max bundles
// (DefaultTestedBundles when max ≤ 0).
func NewTestedBundles(max int) *TestedBundles {
	if max <= 0 {
		max = DefaultTestedBundles
	}
	return &TestedBundles{max: max, passed: map[string]int{}, running: map[string]*testRun{}}
}

// Passed reports whether the bundle of content hash passed its tests in
// this process, and how many tests passed.
func (t *TestedBundles) Passed(hash string) (tests int, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tests, ok = t.passed[hash]
	return tests, ok
}

// run returns the tests of the bundle of content hash: the count
// recorded when it passed before (cached true), or test's result, which
// is recorded when it passes. A run of the same hash already under way
// is waited for and its outcome shared, unless its context ended first.
func (t *TestedBundles) run(ctx context.Context, hash string, test func() (int, error)) (n int, cached bool, err error) {
	for {
		t.mu.Lock()
		if n, ok := t.passed[hash]; ok {
			t.mu.Unlock()
			return n, true, nil
		}
		if r, ok := t.running[hash]; ok {
			t.mu.Unlock()
			select {
			case <-r.done:
			case <-ctx.Done():
				return 0, false, fmt.Errorf("policy: waiting for the tests of the same bundle: %w", ctx.Err())
			}
			if r.cancelled {
				continue
			}
			return r.n, r.err == nil, r.err
		}
		r := &testRun{done: make(chan struct{})}
		t.running[hash] = r
		t.mu.Unlock()
		r.n, r.err = test()
		r.cancelled = r.err != nil && ctx.Err() != nil
		t.mu.Lock()
		delete(t.running, hash)
		if r.err == nil {
			t.add(hash, r.n)
		}
		t.mu.Unlock()
		close(r.done)
		return r.n, false, r.err
	}
}

// add records a pass; t.mu is held.
func (t *TestedBundles) add(hash string, n int) {
	if _, ok := t.passed[hash]; !ok {
		t.order = append(t.order, hash)
	}
	t.passed[hash] = n
	for len(t.order) > t.max {
		delete(t.passed, t.order[0])
		t.order = t.order[1:]
	}
}
