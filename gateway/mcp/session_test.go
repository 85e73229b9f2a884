package mcp

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// renewalOnly are the Principal fields that do not identify a credential: a
// renewed token of the same identity differs only in them and keeps its
// sessions.
var renewalOnly = map[string]bool{"ExpiresAt": true}

// variant is a copy of a principal that differs in one field.
type variant struct {
	field string
	p     gateway.Principal
}

// variants returns, for every identity-bearing field of gateway.Principal
// in declaration order, a copy of base that differs in that field only.
func variants(t *testing.T, base gateway.Principal) []variant {
	t.Helper()
	var out []variant
	typ := reflect.TypeFor[gateway.Principal]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if renewalOnly[f.Name] {
			continue
		}
		v := base
		v.Scopes = append([]string(nil), base.Scopes...)
		fv := reflect.ValueOf(&v).Elem().Field(i)
		switch {
		case f.Type.Kind() == reflect.String:
			fv.SetString(fv.String() + "-other")
		case f.Type == reflect.TypeFor[[]string]():
			fv.Set(reflect.Append(fv, reflect.ValueOf("mcp:ops")))
		default:
			t.Fatalf("gateway.Principal.%s (%s) is new: decide whether it identifies the credential (then bind sessions to it in identityOf) or only changes on renewal (then add it to renewalOnly)", f.Name, f.Type)
		}
		out = append(out, variant{f.Name, v})
	}
	return out
}

// A session is bound to the whole identity of the credential that opened
// it: a credential that differs in any identity-bearing field (the same
// user and task with another agent profile, say) gets the 404 of an
// unknown session on POST, GET and DELETE, and cannot cancel the owner's
// calls. A renewed credential (another expiry) keeps the session.
func TestSessionBoundToWholeCredentialIdentity(t *testing.T) {
	owner := principals[tokAlice]
	owner.ProfileID = "ops-bot"
	auth := mapAuth{"owner": owner}
	others := variants(t, owner)
	for _, v := range others {
		auth["other-"+v.field] = v.p
	}
	renewed := owner
	renewed.ExpiresAt = time.Now().Add(time.Hour)
	auth["renewed"] = renewed
	e := newEnv(t, func(o *Options) { o.Authenticator = auth })
	e.h.started = make(chan struct{})
	sid := e.initialize("owner", Version20251125)

	// The owner's call runs until it is cancelled.
	got := make(chan wireResp, 1)
	go func() {
		resp := e.do("POST", hdr{token: "owner", session: sid}, `{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"slow"}}`)
		got <- decodeResp(t, readAll(t, resp))
	}()
	<-e.h.started

	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"call-1"}}`
	cancelled := func() bool {
		e.h.mu.Lock()
		defer e.h.mu.Unlock()
		return e.h.slowCtx.Err() != nil
	}
	for _, v := range others {
		field, tok := v.field, "other-"+v.field
		t.Run("differs in "+field, func(t *testing.T) {
			if cancelled() {
				t.Skip("the owner's call was already cancelled by an earlier case")
			}
			for _, req := range []struct{ method, accept, body string }{
				{"POST", "", cancel},
				{"POST", "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
				{"GET", "text/event-stream", ""},
				{"DELETE", "", ""},
			} {
				unknown := e.do(req.method, hdr{token: tok, session: "no-such-session", accept: req.accept}, req.body)
				want := string(readAll(t, unknown))
				resp := e.do(req.method, hdr{token: tok, session: sid, accept: req.accept}, req.body)
				body := string(readAll(t, resp))
				if cancelled() {
					t.Fatalf("%s %s by a credential that differs in %s cancelled the owner's call", req.method, req.body, field)
				}
				if resp.StatusCode != 404 || body != want {
					t.Fatalf("%s %s: %d %s, want the 404 of an unknown session: %s", req.method, req.body, resp.StatusCode, body, want)
				}
			}
		})
	}
	if code, r := e.rpc(hdr{token: "renewed", session: sid}, "ping", ""); code != 200 || r.Error != nil {
		t.Fatalf("a renewed credential (new expiry) lost the session: %d %+v", code, r.Error)
	}
	if resp := e.do("POST", hdr{token: "owner", session: sid}, cancel); resp.StatusCode != 202 {
		t.Fatalf("the owner's own cancel: %d", resp.StatusCode)
	}
	if r := <-got; r.Error == nil {
		t.Fatalf("the owner's cancelled call answered %+v", r)
	}
}

// On the HTTP+SSE transport another credential of the same user and task
// (another profile) cannot post to the owner's session: 404, and nothing
// reaches the owner's stream.
func TestLegacySessionBoundToWholeCredentialIdentity(t *testing.T) {
	owner := principals[tokAlice]
	owner.ProfileID = "ops-bot"
	other := owner
	other.ProfileID = "reader"
	e, srv := legacyEnv(t, func(o *Options) { o.Authenticator = mapAuth{"owner": owner, "other": other} })
	_ = e
	ls := openLegacy(t, srv, "owner")
	code, body := post(t, srv, ls.endpoint, "other", `{"jsonrpc":"2.0","id":"injected","method":"ping"}`)
	if code != 404 || !strings.Contains(body, "SSE session not found") {
		t.Fatalf("POST with another profile's credential: %d %s, want 404 SSE session not found", code, body)
	}
	if code, body := post(t, srv, ls.endpoint, "owner", `{"jsonrpc":"2.0","id":"own","method":"ping"}`); code != 202 {
		t.Fatalf("owner's POST: %d %s", code, body)
	}
	if ev := ls.next(t); !strings.Contains(ev.data, `"id":"own"`) {
		t.Fatalf("owner's stream got %+v, want only the owner's own response", ev)
	}
}
