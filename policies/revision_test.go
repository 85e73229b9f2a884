package policies_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mcpgate/mcpgate/policies"
)

func TestRevision(t *testing.T) {
	base := fstest.MapFS{
		"supacloud/a.rego":      {Data: []byte("package supacloud\nx := 1\n")},
		"supacloud/grants.rego": {Data: []byte("package supacloud\ngrants := {}\n")},
		"supacloud/a_test.rego": {Data: []byte("package supacloud_test\n")},
		"supacloud/README.md":   {Data: []byte("docs")},
	}
	rev := func(t *testing.T, fsys fstest.MapFS) string {
		t.Helper()
		r, err := policies.Revision(fsys)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	with := func(name, content string) fstest.MapFS {
		m := fstest.MapFS{}
		for k, v := range base {
			m[k] = v
		}
		m[name] = &fstest.MapFile{Data: []byte(content)}
		return m
	}
	r0 := rev(t, base)
	if !strings.HasPrefix(r0, "sha256:") || len(r0) != len("sha256:")+64 {
		t.Fatalf("revision %q, want sha256:<64 hex digits>", r0)
	}
	tests := []struct {
		name  string
		fsys  fstest.MapFS
		equal bool
	}{
		{"same files", with("supacloud/a.rego", "package supacloud\nx := 1\n"), true},
		{"a test changed", with("supacloud/a_test.rego", "package supacloud_test\n# more\n"), true},
		{"docs changed", with("supacloud/README.md", "more docs"), true},
		{"a rule changed", with("supacloud/a.rego", "package supacloud\nx := 2\n"), false},
		{"data added", with("supacloud/data.json", "{}"), false},
		// path and content are length-prefixed: moving bytes between them changes the hash
		{"file renamed", func() fstest.MapFS {
			m := with("supacloud/b.rego", "package supacloud\nx := 1\n")
			delete(m, "supacloud/a.rego")
			return m
		}(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := rev(t, tc.fsys); (got == r0) != tc.equal {
				t.Errorf("revision %s vs %s, want equal=%v", got, r0, tc.equal)
			}
		})
	}
	t.Run("manifest revision wins", func(t *testing.T) {
		if got := rev(t, with(".manifest", `{"revision":"v42","roots":["supacloud"]}`)); got != "v42" {
			t.Fatalf("revision %q, want the manifest's v42", got)
		}
		if got := rev(t, with(".manifest", `{"roots":["supacloud"]}`)); got != r0 {
			t.Fatalf("a manifest without a revision: %q, want the hash %q", got, r0)
		}
	})
	t.Run("bad manifest", func(t *testing.T) {
		if _, err := policies.Revision(with(".manifest", "{")); err == nil || !strings.Contains(err.Error(), ".manifest") {
			t.Fatalf("err %v, want one naming .manifest", err)
		}
	})
	t.Run("embedded", func(t *testing.T) {
		if a, b := policies.EmbeddedRevision(), policies.EmbeddedRevision(); a != b || !strings.HasPrefix(a, "sha256:") {
			t.Fatalf("embedded revision %q then %q", a, b)
		}
	})
}
