package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// walkthroughStep2 returns the second step's shell block of the policy
// walkthrough in docs/policy.md (the candidate's edits and its two
// `mcpgate policy test` runs, each with the count it prints as a comment),
// "" when the page has none.
func walkthroughStep2(doc string) string {
	_, step, _ := strings.Cut(doc, "**2. The change")
	_, block, _ := strings.Cut(step, "```sh\n")
	block, _, ok := strings.Cut(block, "```")
	if !ok {
		return ""
	}
	return block
}

// expectedCount returns the count a line's comment states, such as
// "PASS: 267/267" of `… # PASS: 267/267`, and whether it states one.
func expectedCount(line string) (string, bool) {
	_, c, ok := strings.Cut(line, "#")
	c = strings.TrimSpace(c)
	return c, ok && (strings.HasPrefix(c, "PASS: ") || strings.HasPrefix(c, "FAIL: "))
}

// Issue 30, point 9: the counts the walkthrough prints for `mcpgate policy
// test` are the ones it prints today. The step's edits run as written (bash,
// on a copy of policies/), and each policy test line's output holds the
// count its comment states.
func TestWalkthroughPolicyTestCounts(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "policy.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := walkthroughStep2(string(doc))
	if block == "" {
		t.Fatal("docs/policy.md: no shell block in the walkthrough's step 2")
	}
	work := t.TempDir()
	if err := os.CopyFS(filepath.Join(work, "live"), os.DirFS(filepath.Join("..", "..", "policies"))); err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		if !strings.HasPrefix(line, "mcpgate policy test ") {
			cmd := exec.Command("bash", "-c", line)
			cmd.Dir = work
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", line, err, out)
			}
			continue
		}
		want, ok := expectedCount(line)
		if !ok {
			t.Fatalf("%q states no count as # PASS: n/m or # FAIL: n/m", line)
		}
		runs++
		out, _ := stdoutOf(t, func() error {
			_, err := runCmd(t, nil, "policy", "test", filepath.Join(work, "candidate"))
			return err
		})
		if !strings.Contains(out, want+"\n") {
			t.Errorf("%s\nprints %q, want %q", line, lastLines(out, 2), want)
		}
	}
	if runs != 2 {
		t.Errorf("step 2 runs mcpgate policy test %d times, want 2 (failing, then passing)", runs)
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}
