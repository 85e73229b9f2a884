package config

import (
	"strings"
	"testing"
	"time"
)

func TestConnDefaults(t *testing.T) {
	c, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret}))
	if err != nil {
		t.Fatal(err)
	}
	want := Conn{
		HeaderTimeout:  10 * time.Second,
		BodyTimeout:    30 * time.Second,
		WriteTimeout:   30 * time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxConnections: 4096,
	}
	if c.Conn != want {
		t.Errorf("connection limits %+v, want %+v", c.Conn, want)
	}
	if c.MetricsListen != "" {
		t.Errorf("MetricsListen %q, want off by default", c.MetricsListen)
	}
}

func TestConnOverrides(t *testing.T) {
	c, err := Load(env(map[string]string{
		"MCPGATE_JWT_SECRET":           secret,
		"MCPGATE_HTTP_HEADER_TIMEOUT":  "2s",
		"MCPGATE_HTTP_BODY_TIMEOUT":    "1500ms",
		"MCPGATE_HTTP_WRITE_TIMEOUT":   "1m",
		"MCPGATE_HTTP_IDLE_TIMEOUT":    "45s",
		"MCPGATE_HTTP_MAX_CONNECTIONS": "100",
		"MCPGATE_METRICS_LISTEN":       "127.0.0.1:9090",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Conn{HeaderTimeout: 2 * time.Second, BodyTimeout: 1500 * time.Millisecond, WriteTimeout: time.Minute, IdleTimeout: 45 * time.Second, MaxConnections: 100}
	if c.Conn != want {
		t.Errorf("connection limits %+v, want %+v", c.Conn, want)
	}
	if c.MetricsListen != "127.0.0.1:9090" {
		t.Errorf("MetricsListen %q", c.MetricsListen)
	}
}

func TestConnRejects(t *testing.T) {
	cases := []struct {
		note, name, value, want string
	}{
		{"not a duration", "MCPGATE_HTTP_HEADER_TIMEOUT", "10", "MCPGATE_HTTP_HEADER_TIMEOUT"},
		{"zero duration", "MCPGATE_HTTP_BODY_TIMEOUT", "0s", "MCPGATE_HTTP_BODY_TIMEOUT"},
		{"negative duration", "MCPGATE_HTTP_WRITE_TIMEOUT", "-1s", "MCPGATE_HTTP_WRITE_TIMEOUT"},
		{"bad idle", "MCPGATE_HTTP_IDLE_TIMEOUT", "forever", "MCPGATE_HTTP_IDLE_TIMEOUT"},
		{"zero connections", "MCPGATE_HTTP_MAX_CONNECTIONS", "0", "MCPGATE_HTTP_MAX_CONNECTIONS"},
		{"bad metrics address", "MCPGATE_METRICS_LISTEN", "9090", "MCPGATE_METRICS_LISTEN"},
		{"metrics on the main address", "MCPGATE_METRICS_LISTEN", "127.0.0.1:8080", "MCPGATE_METRICS_LISTEN"},
		{"profiles without a metrics listener", "MCPGATE_PPROF", "true", "MCPGATE_PPROF=true needs MCPGATE_METRICS_LISTEN"},
	}
	for _, c := range cases {
		t.Run(c.note, func(t *testing.T) {
			_, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, c.name: c.value}))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to name %s", err, c.want)
			}
		})
	}
}
