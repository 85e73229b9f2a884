package admin

import "testing"

// TestProfileNameRefusesFormatCharacters: a profile name (and the other
// operator-entered names checkText validates: workspace names, token
// labels) took U+202E, U+200B, U+2066 and tag characters, so a name could
// read as another in the console and the audit. Unicode format (Cf)
// characters, bidi controls among them, are refused with a 400 that names
// the code point, and nothing is stored.
func TestProfileNameRefusesFormatCharacters(t *testing.T) {
	p := wsPath + "/profiles/p-2"
	var cases []apiCase
	for _, c := range []struct{ note, escaped, point string }{
		{"right-to-left override", `\u202e`, "U+202E"},
		{"zero width space", `\u200b`, "U+200B"},
		{"left-to-right isolate", `\u2066`, "U+2066"},
		{"pop directional isolate", `\u2069`, "U+2069"},
		{"left-to-right mark", `\u200e`, "U+200E"},
		{"arabic letter mark", `\u061c`, "U+061C"},
		{"byte order mark", `\ufeff`, "U+FEFF"},
		{"tag latin capital A", `\udb40\udc41`, "U+E0041"},
		{"cancel tag", `\udb40\udc7f`, "U+E007F"},
	} {
		cases = append(cases, apiCase{name: "profile " + c.note, path: p,
			body:       `{"name":"Read` + c.escaped + `er","allowlist":[]}`,
			wantStatus: 400, wantBody: c.point})
	}
	cases = append(cases,
		apiCase{name: "workspace name", path: wsPath,
			body: `{"name":"Acme\u202e","slug":"acme"}`, wantStatus: 400, wantBody: "U+202E"},
		apiCase{name: "token label", method: "POST", path: wsPath + "/api-tokens",
			body: `{"label":"ci\u200b","scopes":["mcp:read"]}`, wantStatus: 400, wantBody: "U+200B"},
		apiCase{name: "letters of other scripts stay accepted", path: p,
			body: `{"name":"Lesen – Äpfel – قراءة – 読む","allowlist":[]}`, wantStatus: 200,
			wantCalls: []string{"PutProfile"}, wantChange: []string{"ws-1"}},
	)
	runCases(t, cases)
}
