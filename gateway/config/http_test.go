package config

import (
	"slices"
	"strings"
	"testing"
)

func TestLoadHTTP(t *testing.T) {
	tests := []struct {
		name       string
		env        map[string]string
		wantURL    string
		wantHosts  []string
		wantAuthzs []string
	}{
		{"defaults on loopback", nil, "http://127.0.0.1:8080", []string{"localhost", "127.0.0.1", "[::1]"}, nil},
		{"localhost listen", map[string]string{"MCPGATE_LISTEN": "localhost:9000"}, "http://localhost:9000", []string{"localhost", "127.0.0.1", "[::1]"}, nil},
		{"IPv6 loopback listen", map[string]string{"MCPGATE_LISTEN": "[::1]:9000"}, "http://[::1]:9000", []string{"localhost", "127.0.0.1", "[::1]"}, nil},
		{"wildcard listen: no host check", map[string]string{"MCPGATE_LISTEN": "0.0.0.0:8080"}, "http://localhost:8080", nil, nil},
		{"empty host listen: no host check", map[string]string{"MCPGATE_LISTEN": ":8080"}, "http://localhost:8080", nil, nil},
		{"specific address", map[string]string{"MCPGATE_LISTEN": "10.0.0.5:8080"}, "http://10.0.0.5:8080", []string{"10.0.0.5"}, nil},
		{"public URL host added to the default", map[string]string{"MCPGATE_PUBLIC_URL": "https://gw.example.com/"}, "https://gw.example.com", []string{"localhost", "127.0.0.1", "[::1]", "gw.example.com"}, nil},
		{"explicit hosts replace the default", map[string]string{"MCPGATE_ALLOWED_HOSTS": "gw.example.com, gw.example.com:8443"}, "http://127.0.0.1:8080", []string{"gw.example.com", "gw.example.com:8443"}, nil},
		{"authorization servers", map[string]string{"MCPGATE_AUTHORIZATION_SERVERS": "https://auth.example.com, https://login.example.org/tenant"}, "http://127.0.0.1:8080", []string{"localhost", "127.0.0.1", "[::1]"}, []string{"https://auth.example.com", "https://login.example.org/tenant"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := map[string]string{"MCPGATE_JWT_SECRET": secret}
			for k, v := range tc.env {
				m[k] = v
			}
			c, err := Load(env(m))
			if err != nil {
				t.Fatal(err)
			}
			if c.PublicURL != tc.wantURL {
				t.Errorf("PublicURL = %q, want %q", c.PublicURL, tc.wantURL)
			}
			if !slices.Equal(c.AllowedHosts, tc.wantHosts) {
				t.Errorf("AllowedHosts = %q, want %q", c.AllowedHosts, tc.wantHosts)
			}
			if !slices.Equal(c.AuthorizationServers, tc.wantAuthzs) {
				t.Errorf("AuthorizationServers = %q, want %q", c.AuthorizationServers, tc.wantAuthzs)
			}
		})
	}
}

func TestLoadHTTPRejects(t *testing.T) {
	tests := []struct {
		name, key, value string
	}{
		{"relative public URL", "MCPGATE_PUBLIC_URL", "/mcp"},
		{"public URL with query", "MCPGATE_PUBLIC_URL", "https://gw.example.com?x=1"},
		{"public URL of another scheme", "MCPGATE_PUBLIC_URL", "ftp://gw.example.com"},
		{"authorization server not a URL", "MCPGATE_AUTHORIZATION_SERVERS", "https://ok.example.com, auth.example.com"},
		{"allowed host with scheme", "MCPGATE_ALLOWED_HOSTS", "https://gw.example.com"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(env(map[string]string{"MCPGATE_JWT_SECRET": secret, tc.key: tc.value}))
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("err = %v, want it to name %s", err, tc.key)
			}
		})
	}
}
