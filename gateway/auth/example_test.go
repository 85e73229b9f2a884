package auth_test

import (
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/mcpgate/mcpgate/gateway/auth"
)

// A development token issued with the HS256 secret authenticates as the
// task session it names.
func ExampleJWT_Authenticate() {
	j, err := auth.NewJWT(auth.JWTConfig{Secret: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		panic(err)
	}
	tok, err := j.Issue(auth.AgentClaims{Subject: "user-1", WorkspaceID: "ws-1", TaskID: "task-1"}, time.Hour)
	if err != nil {
		panic(err)
	}
	r := httptest.NewRequest("POST", "/mcp", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	p, err := j.Authenticate(r)
	fmt.Println(p.Kind, p.Subject, p.WorkspaceID, p.TaskID, err)

	r.Header.Set("Authorization", "Bearer scmt_abc")
	_, err = j.Authenticate(r)
	fmt.Println(err)
	// Output:
	// agent user-1 ws-1 task-1 <nil>
	// this endpoint takes agent session JWTs; scmt_ API tokens belong on /api/mcp
}
