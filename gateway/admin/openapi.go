package admin

import (
	_ "embed"
	"net/http"
)

// OpenAPIPath is where, under Prefix, the handler serves its OpenAPI 3.1
// description (behind the same credentials as every other route).
const OpenAPIPath = "/openapi.yaml"

// OpenAPI is the OpenAPI 3.1 description of every route of the admin API,
// as served at Prefix+OpenAPIPath. openapi_test.go checks it against the
// router and the replies.
//
//go:embed openapi.yaml
var OpenAPI []byte

// openAPI: GET /openapi.yaml → the description, as YAML.
func (h *handler) openAPI(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "application/yaml")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(OpenAPI)
	return nil
}
