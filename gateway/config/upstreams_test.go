package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestUpstreams(t *testing.T) {
	c, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Upstreams != (Upstreams{Refresh: DefaultUpstreamRefresh, Timeout: DefaultUpstreamTimeout}) {
		t.Errorf("defaults %+v", c.Upstreams)
	}
	file := filepath.Join(t.TempDir(), "upstreams.json")
	if err := os.WriteFile(file, []byte(`{"upstreams":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_UPSTREAMS_FILE": file,
		"MCPGATE_UPSTREAM_REFRESH": "30s", "MCPGATE_UPSTREAM_TIMEOUT": "5s", "MCPGATE_UPSTREAM_URL": "http://127.0.0.1:9/mcp"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Upstreams != (Upstreams{File: file, Refresh: 30 * time.Second, Timeout: 5 * time.Second}) || c.UpstreamURL != "http://127.0.0.1:9/mcp" {
		t.Errorf("set: %+v, upstream URL %q (the two are independent)", c.Upstreams, c.UpstreamURL)
	}
	for name, v := range map[string]string{
		"MCPGATE_UPSTREAMS_FILE":   filepath.Join(t.TempDir(), "missing.json"),
		"MCPGATE_UPSTREAM_REFRESH": "100ms",
		"MCPGATE_UPSTREAM_TIMEOUT": "1h",
	} {
		_, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, name: v}))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v, want an error naming the variable", name, v, err)
		}
	}
	for _, v := range []string{"soon", "0s", "-5s"} {
		if _, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, "MCPGATE_UPSTREAM_TIMEOUT": v})); err == nil || !strings.Contains(err.Error(), "MCPGATE_UPSTREAM_TIMEOUT") {
			t.Errorf("MCPGATE_UPSTREAM_TIMEOUT=%s: %v, want it refused (a bridged upstream's operations are always bounded)", v, err)
		}
	}
}
