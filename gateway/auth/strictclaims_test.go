package auth_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auth"
)

// hs256 signs the payload bytes exactly as given (duplicate members and
// all), which no claims struct can produce.
func hs256(secret []byte, payload string) string {
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString([]byte(payload))
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(signing))
	return signing + "." + enc.EncodeToString(mac.Sum(nil))
}

// TestJWTClaimCaseVariantsRefused: encoding/json matches member names
// case-insensitively and keeps the last, so a signed payload with a case
// variant or a repeated member (Workspace_ID, Agent_Profile_Id, Mode, Sub,
// AUD, EXP) chose the claim's value. Every verifier (agent session,
// cc_server, console sign-in) refuses such a payload with a 401 that names
// the member; the exact payload still verifies.
func TestJWTClaimCaseVariantsRefused(t *testing.T) {
	secret := []byte(strings.Repeat("k", 32))
	agent, err := auth.NewJWT(auth.JWTConfig{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := auth.NewJWT(auth.JWTConfig{Secret: secret, Audience: "mcpgate-ccserver"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	iat, exp := strconv.FormatInt(now, 10), strconv.FormatInt(now+600, 10)
	past := strconv.FormatInt(now-600, 10)
	agentBase := `"sub":"ada","aud":"mcpgate","iat":` + iat + `,"exp":` + exp + `,"workspace_id":"ws-a","task_id":"t1","agent_profile_id":"p-read"`
	ccBase := `"sub":"ada","aud":"mcpgate-ccserver","iat":` + iat + `,"exp":` + exp + `,"mode":"plan","workspace_id":"ws-a"`
	consoleBase := `"sub":"ada","aud":"mcpgate-console","iat":` + iat + `,"exp":` + exp + `,"workspace_id":"ws-a"`
	verify := map[string]func(tok string) error{
		"agent": func(tok string) error {
			r := httptest.NewRequest("POST", "/mcp", nil)
			r.Header.Set("Authorization", "Bearer "+tok)
			_, err := agent.Authenticate(r)
			return err
		},
		"cc_server": func(tok string) error {
			r := httptest.NewRequest("POST", "/mcp", nil)
			r.Header.Set("Authorization", "Bearer "+tok)
			_, err := auth.CCServer{J: cc}.Authenticate(r)
			return err
		},
		"console": func(tok string) error {
			_, _, _, err := agent.ConsoleUser(tok)
			return err
		},
	}
	base := map[string]string{"agent": agentBase, "cc_server": ccBase, "console": consoleBase}
	for surface, b := range base {
		if err := verify[surface](hs256(secret, "{"+b+"}")); err != nil {
			t.Fatalf("%s: the exact payload: %v", surface, err)
		}
	}
	for _, c := range []struct {
		note, surface, extra, member string
	}{
		{"Workspace_ID", "agent", `"Workspace_ID":"ws-b"`, "Workspace_ID"},
		{"Agent_Profile_Id", "agent", `"Agent_Profile_Id":"p-full"`, "Agent_Profile_Id"},
		{"Sub", "agent", `"Sub":"root"`, "Sub"},
		{"AUD", "agent", `"AUD":"mcpgate"`, "AUD"},
		{"EXP", "agent", `"EXP":` + past, "EXP"},
		{"Kelvin-sign task_id", "agent", `"tas\u212a_id":"t2"`, "tas\u212a_id"},
		{"duplicate workspace_id", "agent", `"workspace_id":"ws-b"`, "workspace_id"},
		{"escaped duplicate", "agent", `"w\u006frkspace_id":"ws-b"`, "workspace_id"},
		{"Mode", "cc_server", `"Mode":"orchestrate"`, "Mode"},
		{"Workspace_ID cc", "cc_server", `"Workspace_ID":"ws-b"`, "Workspace_ID"},
		{"duplicate mode", "cc_server", `"mode":"orchestrate"`, "mode"},
		{"Kind", "cc_server", `"KIND":"user"`, "KIND"},
		{"Workspace_ID console", "console", `"Workspace_ID":"ws-b"`, "Workspace_ID"},
		{"duplicate sub console", "console", `"sub":"root"`, "sub"},
	} {
		t.Run(c.note, func(t *testing.T) {
			err := verify[c.surface](hs256(secret, "{"+base[c.surface]+","+c.extra+"}"))
			if gateway.ErrorCodeOf(err) != gateway.EUnauthenticated {
				t.Fatalf("%s with %s: %v, want refused (401)", c.surface, c.extra, err)
			}
			if !strings.Contains(err.Error(), strconv.QuoteToASCII(c.member)) {
				t.Errorf("%s: %q does not name the member %q", c.surface, err, c.member)
			}
		})
	}
	// Members mcpgate does not read may be anything, once each.
	if err := verify["agent"](hs256(secret, "{"+agentBase+`,"Scope":"x","email":"a@b"}`)); err != nil {
		t.Errorf("an unknown extra member: %v, want accepted", err)
	}
}
