package auth

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgate/mcpgate/gateway"
)

const fuzzIssuer = "https://issuer.test"

// fuzzEdKey is a fixed Ed25519 key, so that the EdDSA seed tokens (and any
// input the engine saves) are the same in every run.
var fuzzEdKey = ed25519.NewKeyFromSeed([]byte("mcpgate-fuzz-ed25519-seed-32byte"))

// fuzzVerifiers are an HS256 and an EdDSA verifier, both requiring
// fuzzIssuer, on the fixed clock now.
func fuzzVerifiers(f *testing.F) (hs, ed *JWT) {
	hs = newVerifier(f, JWTConfig{Secret: hsSecret, Issuer: fuzzIssuer, Leeway: testLeeway})
	ed = newVerifier(f, JWTConfig{PublicKeyPEM: publicPEM(fuzzEdKey.Public()), Issuer: fuzzIssuer, Leeway: testLeeway})
	return hs, ed
}

func authenticate(j *JWT, header string) (*gateway.Principal, error) {
	return j.Authenticate(&http.Request{Header: http.Header{"Authorization": {header}}})
}

// FuzzBearerToken checks Authorization header parsing: an accepted header
// is optional whitespace, the scheme "Bearer" in any case, whitespace
// starting with a space, the token, and optional whitespace; the token
// returned is exactly that token; everything else is EUnauthenticated.
func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer abc.def.ghi", "bearer x", "BEARER  x y ", " Bearer\tx", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz",
		"Bearerx", "Bearer \u00a0x\u00a0", "Bearer scmt_abc", "", "\u0085Bearer x", "Bearer  \t "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		tok, err := BearerToken(&http.Request{Header: http.Header{"Authorization": {header}}})
		if err != nil {
			if gateway.ErrorCodeOf(err) != gateway.EUnauthenticated || tok != "" {
				t.Fatalf("header %q refused with %v (token %q), want EUnauthenticated", header, err, tok)
			}
			return
		}
		if tok == "" || tok != strings.TrimSpace(tok) {
			t.Fatalf("header %q gave token %q", header, tok)
		}
		// The header ends with the token, then spaces only.
		end := len(strings.TrimRightFunc(header, unicode.IsSpace))
		i := end - len(tok)
		if i < 0 || header[i:end] != tok {
			t.Fatalf("header %q gave token %q, which it does not end with", header, tok)
		}
		scheme := strings.TrimLeftFunc(header[:i], unicode.IsSpace)
		if len(scheme) < len("Bearer ") || !strings.EqualFold(scheme[:len("Bearer")], "Bearer") ||
			scheme[len("Bearer")] != ' ' || strings.TrimSpace(scheme[len("Bearer"):]) != "" {
			t.Fatalf("header %q accepted with scheme part %q", header, scheme)
		}
		if again, err := BearerToken(&http.Request{Header: http.Header{"Authorization": {"Bearer " + tok}}}); err != nil || again != tok {
			t.Fatalf("token %q does not round-trip: %q, %v", tok, again, err)
		}
	})
}

// signedToken is a valid token of the fuzz seeds, with what it names.
type signedToken struct {
	token string
	want  gateway.Principal
}

func fuzzTokens(f *testing.F, hs *JWT) (hsToks, edToks []signedToken) {
	exp := now.Add(time.Hour)
	for _, c := range []AgentClaims{
		{Subject: "alice", WorkspaceID: "ws-demo", TaskID: "task-1", ProfileID: "ops-bot"},
		{Subject: "bob", WorkspaceID: "ws-2", TaskID: "task-9"},
	} {
		tok, err := hs.Issue(c, time.Hour)
		if err != nil {
			f.Fatal(err)
		}
		want := gateway.Principal{Kind: gateway.PrincipalAgent, Subject: c.Subject, WorkspaceID: c.WorkspaceID,
			TaskID: c.TaskID, ProfileID: c.ProfileID, ExpiresAt: exp}
		hsToks = append(hsToks, signedToken{tok, want})
		ed := sign(jwt.SigningMethodEdDSA, fuzzEdKey, claims(set("sub", c.Subject), set("workspace_id", c.WorkspaceID),
			set("task_id", c.TaskID), set("iss", fuzzIssuer), set("agent_profile_id", c.ProfileID)))
		if c.ProfileID == "" {
			ed = sign(jwt.SigningMethodEdDSA, fuzzEdKey, claims(set("sub", c.Subject), set("workspace_id", c.WorkspaceID),
				set("task_id", c.TaskID), set("iss", fuzzIssuer)))
		}
		edToks = append(edToks, signedToken{ed, want})
	}
	return hsToks, edToks
}

// FuzzJWTMutation mutates valid HS256 and EdDSA tokens. Whatever still
// verifies must have the signed header and claims of one of the original
// tokens, byte for byte, and a signature that decodes to the original
// signature bytes (base64url leaves the low bits of the last character
// free); it must name exactly that token's principal. Every refusal is
// EUnauthenticated and does not repeat the token.
func FuzzJWTMutation(f *testing.F) {
	hs, ed := fuzzVerifiers(f)
	hsToks, edToks := fuzzTokens(f, hs)
	edPEM := publicPEM(fuzzEdKey.Public())
	for _, st := range append(append([]signedToken{}, hsToks...), edToks...) {
		f.Add(st.token)
		head, rest, _ := strings.Cut(st.token, ".")
		payload, _, _ := strings.Cut(rest, ".")
		// The algorithm-confusion and unsigned forms of the same claims.
		for _, alg := range []string{`{"alg":"none","typ":"JWT"}`, `{"alg":"HS256","typ":"JWT"}`, `{"alg":"EdDSA","typ":"JWT"}`, `{"alg":"RS256"}`} {
			input := base64.RawURLEncoding.EncodeToString([]byte(alg)) + "." + payload
			f.Add(input + ".")
			f.Add(input + "." + hmacB64(edPEM, input))
			if !strings.Contains(alg, "HS256") { // else it is a valid HS256 token of these claims
				f.Add(input + "." + hmacB64(hsSecret, input))
			}
		}
		f.Add(head + "." + payload + "." + strings.Repeat("A", 43))
	}
	type verifier struct {
		j    *JWT
		toks []signedToken
	}
	f.Fuzz(func(t *testing.T, token string) {
		for _, v := range []verifier{{hs, hsToks}, {ed, edToks}} {
			p, err := authenticate(v.j, "Bearer "+token)
			if err != nil {
				if gateway.ErrorCodeOf(err) != gateway.EUnauthenticated {
					t.Fatalf("%s verifier refused %q with %v, want EUnauthenticated", v.j.alg, token, err)
				}
				if tok := strings.TrimSpace(token); len(tok) >= 16 && strings.Contains(err.Error(), tok) {
					t.Fatalf("refusal repeats the token: %v", err)
				}
				continue
			}
			tok := strings.TrimSpace(token)
			i := strings.LastIndexByte(tok, '.')
			var orig *signedToken
			for k := range v.toks {
				if o := v.toks[k].token; i >= 0 && tok[:i] == o[:strings.LastIndexByte(o, '.')] {
					orig = &v.toks[k]
				}
			}
			if orig == nil {
				t.Fatalf("%s verifier accepted a token whose signed part is not one it was given: %q", v.j.alg, tok)
			}
			gotSig, err1 := base64.RawURLEncoding.DecodeString(tok[i+1:])
			origSig, err2 := base64.RawURLEncoding.DecodeString(orig.token[strings.LastIndexByte(orig.token, '.')+1:])
			if err1 != nil || err2 != nil || string(gotSig) != string(origSig) {
				t.Fatalf("%s verifier accepted %q with another signature than %q", v.j.alg, tok, orig.token)
			}
			if !principalEqual(*p, orig.want) {
				t.Fatalf("%s verifier read %q as %+v, want %+v", v.j.alg, tok, *p, orig.want)
			}
		}
	})
}

func hmacB64(key []byte, input string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(input))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Bits of FuzzJWTClaims' present: which claims the payload carries.
const (
	hasSub = 1 << iota
	hasWorkspace
	hasTask
	hasProfile
	hasAud
	hasIss
	hasExp
	hasIat
	hasNbf
	audArray
)

// FuzzJWTClaims signs fuzzed headers and claim sets, with the right key,
// with no signature, and with the HMAC of the EdDSA public key (the
// algorithm-confusion attack). A token is accepted exactly when it is
// signed with the verifier's own algorithm and key, its header's alg is
// that algorithm, and its claims are acceptable: sub, workspace_id and
// task_id non-empty, aud including "mcpgate", iss the configured issuer,
// exp not past and iat and nbf not in the future (30 s leeway); and then
// the principal is exactly what the claims say.
func FuzzJWTClaims(f *testing.F) {
	hs, ed := fuzzVerifiers(f)
	edPEM := publicPEM(fuzzEdKey.Public())
	all := uint16(hasSub | hasWorkspace | hasTask | hasProfile | hasAud | hasIss | hasExp | hasIat)
	for _, h := range []string{`{"alg":"HS256","typ":"JWT"}`, `{"alg":"EdDSA","typ":"JWT"}`, `{"alg":"none"}`, `{"alg":"hs256"}`,
		`{"alg":"HS256","alg":"none"}`, `{"alg":"none","alg":"HS256"}`, `{"ALG":"none","alg":"HS256"}`, `{"alg":"ES256"}`, `{"alg":["HS256"]}`, `{}`, `[]`} {
		for signer := range uint8(4) {
			f.Add(h, "alice", "ws-demo", "task-1", "ops-bot", "mcpgate", fuzzIssuer, int64(3600), int64(-60), int64(0), all, signer)
		}
	}
	f.Add(`{"alg":"HS256"}`, "alice", "ws-demo", "task-1", "", "other", fuzzIssuer, int64(29), int64(29), int64(29), all|hasNbf|audArray, uint8(0))
	f.Add(`{"alg":"HS256"}`, "alice", "ws-demo", "task-1", "", "mcpgate", fuzzIssuer, int64(-31), int64(31), int64(31), all|hasNbf, uint8(0))
	f.Add(`{"alg":"HS256"}`, "", "ws-demo", "task-1", "", "mcpgate", "https://evil.test", int64(3600), int64(0), int64(0), all&^hasIss, uint8(0))
	f.Add(`{"alg":"EdDSA"}`, "a\xff", "ws", "t", "p", "mcpgate", fuzzIssuer, int64(1<<62), int64(-1<<62), int64(-1<<62), all|hasNbf, uint8(1))
	f.Fuzz(func(t *testing.T, header, sub, ws, task, profile, aud, iss string, exp, iat, nbf int64, present uint16, signer uint8) {
		c := map[string]any{}
		put := func(bit uint16, key string, v any) {
			if present&bit != 0 {
				c[key] = v
			}
		}
		put(hasSub, "sub", sub)
		put(hasWorkspace, "workspace_id", ws)
		put(hasTask, "task_id", task)
		put(hasProfile, "agent_profile_id", profile)
		if present&audArray != 0 {
			put(hasAud, "aud", []string{"other", aud})
		} else {
			put(hasAud, "aud", aud)
		}
		put(hasIss, "iss", iss)
		// Times are seconds from now, bounded so that float64 keeps them exact.
		at := func(d int64) int64 { return now.Unix() + d%(1<<40) }
		put(hasExp, "exp", at(exp))
		put(hasIat, "iat", at(iat))
		put(hasNbf, "nbf", at(nbf))
		payload, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		input := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString(payload)
		var sig []byte
		var v *JWT
		switch signer % 4 {
		case 0:
			v, sig = hs, hmacSum(hsSecret, input)
		case 1:
			v, sig = ed, ed25519.Sign(fuzzEdKey, []byte(input))
		case 2: // HS256 with the EdDSA public key as secret
			v, sig = ed, hmacSum(edPEM, input)
		case 3: // unsigned
			v = []*JWT{hs, ed}[int(present)%2]
		}
		token := input + "." + base64.RawURLEncoding.EncodeToString(sig)
		p, err := authenticate(v, "Bearer "+token)

		var hdr map[string]any
		_ = json.Unmarshal([]byte(header), &hdr)
		alg, _ := hdr["alg"].(string)
		str := func(key string) string { // the claim as a JSON reader sees it
			s, _ := c[key].(string)
			var back string
			b, _ := json.Marshal(s)
			_ = json.Unmarshal(b, &back)
			return back
		}
		const leeway = int64(testLeeway / time.Second)
		rightKey := signer%4 == 0 && v == hs || signer%4 == 1 && v == ed
		claimsOK := present&(hasSub|hasWorkspace|hasTask|hasAud|hasExp) == hasSub|hasWorkspace|hasTask|hasAud|hasExp &&
			str("sub") != "" && str("workspace_id") != "" && str("task_id") != "" && aud == DefaultAudience &&
			present&hasIss != 0 && iss == fuzzIssuer
		var timesOK, timesClear bool
		if claimsOK {
			e := at(exp)
			timesOK = e+leeway >= now.Unix() && (present&hasIat == 0 || at(iat)-leeway <= now.Unix()) &&
				(present&hasNbf == 0 || at(nbf)-leeway <= now.Unix())
			timesClear = e+leeway > now.Unix()+1 && (present&hasIat == 0 || at(iat)-leeway < now.Unix()-1) &&
				(present&hasNbf == 0 || at(nbf)-leeway < now.Unix()-1)
		}
		if err != nil {
			if gateway.ErrorCodeOf(err) != gateway.EUnauthenticated {
				t.Fatalf("refused with %v, want EUnauthenticated", err)
			}
			// A token over maxTokenBytes is refused before it is read,
			// whatever it says.
			if rightKey && alg == v.alg && claimsOK && timesClear && len(token) <= maxTokenBytes {
				t.Fatalf("%s verifier refused a valid token (header %s, claims %s): %v", v.alg, header, payload, err)
			}
			return
		}
		if !rightKey || alg != v.alg {
			t.Fatalf("%s verifier accepted header %s signed by signer %d", v.alg, header, signer%4)
		}
		if !claimsOK || !timesOK {
			t.Fatalf("%s verifier accepted claims %s at %d", v.alg, payload, now.Unix())
		}
		want := gateway.Principal{Kind: gateway.PrincipalAgent, Subject: str("sub"), WorkspaceID: str("workspace_id"),
			TaskID: str("task_id"), ProfileID: str("agent_profile_id"), ExpiresAt: time.Unix(at(exp), 0).UTC()}
		if !principalEqual(*p, want) {
			t.Fatalf("claims %s read as %+v, want %+v", payload, *p, want)
		}
	})
}

func hmacSum(key []byte, input string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(input))
	return m.Sum(nil)
}
