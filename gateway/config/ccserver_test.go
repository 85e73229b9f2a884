package config

import (
	"strings"
	"testing"
)

func TestCCServerConfig(t *testing.T) {
	base := map[string]string{"MCPGATE_JWT_SECRET": strings.Repeat("s", 32)}
	load := func(extra map[string]string) (*Config, error) {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range extra {
			env[k] = v
		}
		return Load(func(k string) string { return env[k] })
	}
	c, err := load(nil)
	if err != nil || c.CCServer.On() || c.CCServer.JWTAudience != DefaultCCServerAudience || c.Limits.CCServerCallsPerMinute != 0 {
		t.Fatalf("defaults: %+v %v; want off, audience %s, calls per minute from the policy (0)", c.CCServer, err, DefaultCCServerAudience)
	}
	c, err = load(map[string]string{"MCPGATE_CCSERVER_LISTEN": "127.0.0.1:9030", "MCPGATE_CCSERVER_CALLS_PER_MINUTE": "30"})
	if err != nil || !c.CCServer.On() || c.Limits.CCServerCallsPerMinute != 30 {
		t.Fatalf("set: %+v %v", c.CCServer, err)
	}
	// Port 0 on both listeners is two fresh ports, not one address twice.
	if c, err = load(map[string]string{"MCPGATE_LISTEN": "127.0.0.1:0", "MCPGATE_CCSERVER_LISTEN": "127.0.0.1:0"}); err != nil || !c.CCServer.On() {
		t.Fatalf("both listeners on port 0: %+v %v; want accepted", c.CCServer, err)
	}
	for name, extra := range map[string]map[string]string{
		"MCPGATE_CCSERVER_LISTEN":           {"MCPGATE_CCSERVER_LISTEN": "nine-thousand"},
		"is MCPGATE_LISTEN too":             {"MCPGATE_LISTEN": "127.0.0.1:9031", "MCPGATE_CCSERVER_LISTEN": "127.0.0.1:9031"},
		"MCPGATE_CCSERVER_JWT_AUDIENCE":     {"MCPGATE_CCSERVER_JWT_AUDIENCE": "mcpgate"},
		"MCPGATE_CCSERVER_CALLS_PER_MINUTE": {"MCPGATE_CCSERVER_CALLS_PER_MINUTE": "-1"},
		"MCPGATE_CCSERVER_UPSTREAM_URL":     {"MCPGATE_CCSERVER_UPSTREAM_URL": "ftp://x"},
	} {
		if _, err := load(extra); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: error %v, want one naming %s", extra, err, name)
		}
	}
}
