package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// WellKnownResourceMetadata is the well-known path of OAuth 2.0 protected
// resource metadata (RFC 9728 §3).
const WellKnownResourceMetadata = "/.well-known/oauth-protected-resource"

// ResourceMetadata is an OAuth 2.0 protected resource metadata document
// (RFC 9728 §2), which MCP clients read to find the authorization server
// that issues tokens for this server (MCP 2025-06-18, basic/authorization,
// "Authorization Server Location").
type ResourceMetadata struct {
	// Resource is the resource identifier: an absolute https (or http) URL
	// without fragment, equal to the URL the document describes.
	Resource string `json:"resource"`
	// AuthorizationServers are the issuer URLs of the authorization servers
	// whose tokens this resource accepts; omitted when none is configured.
	AuthorizationServers []string `json:"authorization_servers,omitempty"`
	// BearerMethodsSupported is how a token may be sent; mcpgate reads it
	// from the Authorization header only.
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	// ScopesSupported lists OAuth scopes the resource understands; omitted
	// when empty.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// ResourceName is a human-readable name of the resource.
	ResourceName string `json:"resource_name,omitempty"`
	// ResourceDocumentation is a URL of documentation for developers.
	ResourceDocumentation string `json:"resource_documentation,omitempty"`
}

// MetadataURL returns where the metadata of resource is served (RFC 9728
// §3.1): the well-known path inserted between the host and the path of the
// resource identifier, so "https://gw.example.com/mcp" gives
// "https://gw.example.com/.well-known/oauth-protected-resource/mcp" and
// "https://gw.example.com" gives ".../.well-known/oauth-protected-resource".
// It fails when resource is not an absolute http(s) URL without query or
// fragment.
func MetadataURL(resource string) (string, error) {
	u, err := url.Parse(resource)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("resource identifier %q: want an absolute http(s) URL without query or fragment", resource)
	}
	u.Path = WellKnownResourceMetadata + strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u.String(), nil
}

// MetadataHandler serves m as JSON on GET and HEAD. The document is public
// (no authentication) and readable by browser clients from any origin: it
// holds no secret, and clients need it before they have a token. OPTIONS
// preflight requests get 204; other methods get 405.
func MetadataHandler(m ResourceMetadata) http.Handler {
	if m.BearerMethodsSupported == nil {
		m.BearerMethodsSupported = []string{"header"}
	}
	body, _ := json.Marshal(m) // strings and string slices always encode
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			h.Set("Content-Type", "application/json")
			h.Set("Cache-Control", "public, max-age=3600")
			_, _ = w.Write(body)
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", "GET, HEAD")
			h.Set("Access-Control-Allow-Headers", "MCP-Protocol-Version")
			w.WriteHeader(http.StatusNoContent)
		default:
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "resource metadata is read with GET", http.StatusMethodNotAllowed)
		}
	})
}
