package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// The console is served on the main listener with the admin API, and is
// off (404) when the admin API is.
func TestConsoleOnlyWithTheAdminAPI(t *testing.T) {
	for _, tc := range []struct {
		name  string
		token string
		want  int
	}{
		{"admin API on", "listen-admin-token", http.StatusOK},
		{"admin API off", "", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, map[string]string{"MCPGATE_ADMIN_TOKEN": tc.token})
			resp, err := http.Get("http://" + s.ls.Main.Addr().String() + "/console/login")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("GET /console/login: %d, want %d\n%s", resp.StatusCode, tc.want, body)
			}
			if signIn := strings.Contains(string(body), `<label for="token">Admin token or API token</label>`); signIn != (tc.want == http.StatusOK) {
				t.Errorf("sign-in form shown: %v, want %v\n%s", signIn, tc.want == http.StatusOK, body)
			}
		})
	}
}
