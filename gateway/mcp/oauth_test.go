package mcp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMetadataURL(t *testing.T) {
	tests := []struct{ name, resource, want, wantErr string }{
		{"origin", "https://gw.example.com", "https://gw.example.com/.well-known/oauth-protected-resource", ""},
		{"origin with slash", "http://127.0.0.1:8080/", "http://127.0.0.1:8080/.well-known/oauth-protected-resource", ""},
		{"path inserted", "https://gw.example.com/mcp", "https://gw.example.com/.well-known/oauth-protected-resource/mcp", ""},
		{"deeper path", "https://x.example/gw/mcp", "https://x.example/.well-known/oauth-protected-resource/gw/mcp", ""},
		{"relative refused", "/mcp", "", "absolute http(s) URL"},
		{"fragment refused", "https://gw.example.com/mcp#x", "", "without query or fragment"},
		{"other scheme refused", "ftp://gw.example.com", "", "absolute http(s) URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MetadataURL(tc.resource)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("MetadataURL = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestMetadataHandler(t *testing.T) {
	srv := httptest.NewServer(MetadataHandler(ResourceMetadata{
		Resource: "https://gw.example.com/mcp", AuthorizationServers: []string{"https://auth.example.com"}, ResourceName: "mcpgate",
	}))
	defer srv.Close()
	tests := []struct {
		method string
		want   int
	}{
		{"GET", 200},
		{"HEAD", 200},
		{"OPTIONS", 204},
		{"POST", 405},
	}
	for _, tc := range tests {
		t.Run(tc.method, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL, nil)
			req.Header.Set("Origin", "https://app.example.com")
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, resp)
			if resp.StatusCode != tc.want || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
				t.Fatalf("status %d CORS %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
			}
			if tc.method != "GET" {
				return
			}
			var doc map[string]any
			if err := json.Unmarshal(body, &doc); err != nil || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("body %s (%v), type %q", body, err, resp.Header.Get("Content-Type"))
			}
			want := `{"resource":"https://gw.example.com/mcp","authorization_servers":["https://auth.example.com"],"bearer_methods_supported":["header"],"resource_name":"mcpgate"}`
			if string(body) != want {
				t.Fatalf("document = %s, want %s", body, want)
			}
		})
	}
}
