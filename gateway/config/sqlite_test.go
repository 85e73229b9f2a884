package config

import (
	"strings"
	"testing"
)

// Issue 30, point 5: MCPGATE_DATABASE_URL=sqlite://mcpgate.db created
// /mcpgate.db at the filesystem root. sqlite:PATH and sqlite:///ABSPATH
// name a file; sqlite://HOST… is refused with what to write instead.
func TestSQLitePath(t *testing.T) {
	for _, c := range []struct{ url, path string }{
		{"sqlite:mcpgate.db", "mcpgate.db"},
		{"sqlite:./data/mcpgate.db", "./data/mcpgate.db"},
		{"sqlite:/var/lib/mcpgate/mcpgate.db", "/var/lib/mcpgate/mcpgate.db"},
		{"sqlite:///var/lib/mcpgate/mcpgate.db", "/var/lib/mcpgate/mcpgate.db"},
		{"sqlite::memory:", ":memory:"},
		{"sqlite:file:x.db?mode=ro", "file:x.db?mode=ro"},
	} {
		path, ok, err := SQLitePath(c.url)
		if err != nil || !ok || path != c.path {
			t.Errorf("SQLitePath(%q) = %q, %v, %v; want %q", c.url, path, ok, err, c.path)
		}
	}
	for _, url := range []string{"postgres://u@h/db", "postgresql://h/db", "mysql://x"} {
		if path, ok, err := SQLitePath(url); ok || err != nil || path != "" {
			t.Errorf("SQLitePath(%q) = %q, %v, %v; want not an sqlite URL", url, path, ok, err)
		}
	}
	for _, url := range []string{"sqlite://mcpgate.db", "sqlite://localhost/x.db", "sqlite:", "sqlite://", "sqlite:///"} {
		_, ok, err := SQLitePath(url)
		if !ok || err == nil || !strings.Contains(err.Error(), "use sqlite:PATH, e.g. sqlite:mcpgate.db or sqlite:///var/lib/mcpgate/mcpgate.db") {
			t.Errorf("SQLitePath(%q): %v, %v; want a refusal saying what to write", url, ok, err)
		}
	}
}

// Load refuses a sqlite://HOST URL, naming the variable, before anything
// creates a file.
func TestLoadRefusesSQLiteHost(t *testing.T) {
	_, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_DATABASE_URL": "sqlite://mcpgate.db"}))
	if err == nil || !strings.Contains(err.Error(), `MCPGATE_DATABASE_URL="sqlite://mcpgate.db"`) || !strings.Contains(err.Error(), "sqlite:///var/lib/mcpgate/mcpgate.db") {
		t.Fatalf("Load: %v; want a refusal naming MCPGATE_DATABASE_URL and the forms to use", err)
	}
	c, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_DATABASE_URL": "sqlite:///tmp/x.db"}))
	if err != nil || c.DatabaseURL != "sqlite:///tmp/x.db" {
		t.Fatalf("Load(sqlite:///tmp/x.db): %v", err)
	}
}
