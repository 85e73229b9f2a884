package admin_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/gorilla/mux"

	"github.com/mcpgate/mcpgate/gateway/admin"
)

// The server mounts the admin API under its prefix; with no token it
// answers every path with 404 and says how to switch it on.
func ExampleNewHandler() {
	root := mux.NewRouter()
	root.PathPrefix(admin.Prefix).Handler(admin.NewHandler(nil, admin.Options{}))

	req := httptest.NewRequest(http.MethodPut, "/admin/v1/workspaces/ws-1", strings.NewReader(`{}`))
	rec := httptest.NewRecorder()
	root.ServeHTTP(rec, req)
	fmt.Print(rec.Code, " ", rec.Body)
	// Output: 404 {"error":{"code":"NotFound","message":"admin API is off; set MCPGATE_ADMIN_TOKEN"}}
}

// The value is shown once; the store keeps HashToken(value), and the
// fingerprint (its first 16 hex characters) names the token afterwards.
func ExampleFingerprint() {
	fmt.Println(admin.Fingerprint("scmt_example"), len(admin.HashToken("scmt_example")))
	// Output: cb6c1db30cee1517 64
}
