package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// clientRelay stands for the transport's relay: it accepts everything.
type clientRelay struct{ requests []string }

func (c *clientRelay) ProgressToken() json.RawMessage { return json.RawMessage(`1`) }
func (c *clientRelay) Notify(context.Context, string, json.RawMessage) error {
	return nil
}
func (c *clientRelay) Request(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	c.requests = append(c.requests, method)
	return json.RawMessage(`{"action":"accept"}`), nil
}

var allKinds = &gateway.RelayPolicy{
	Kinds:       []gateway.RelayKind{gateway.RelayProgress, gateway.RelayLog, gateway.RelayElicitation, gateway.RelaySampling, gateway.RelayRoots},
	SecretWords: []string{"password", "secret", "token", "apikey"},
}

// A form elicitation that asks for what looks like a secret, by property
// name, title or format, never reaches the client; the upstream gets
// -32602 and the audit row says relay.elicitation.secret_refused. A URL
// elicitation and an innocent form pass.
func TestPolicyRelayRefusesSecretForms(t *testing.T) {
	tests := []struct {
		name, params string
		refused      bool
	}{
		{"password property", `{"message":"m","requestedSchema":{"type":"object","properties":{"password":{"type":"string"}}}}`, true},
		{"API key in another spelling", `{"requestedSchema":{"properties":{"API_Key":{"type":"string"}}}}`, true},
		{"secret in the title", `{"requestedSchema":{"properties":{"x":{"type":"string","title":"Client Secret"}}}}`, true},
		{"password format", `{"requestedSchema":{"properties":{"x":{"type":"string","format":"password"}}}}`, true},
		{"access token", `{"requestedSchema":{"properties":{"githubAccessToken":{"type":"string"}}}}`, true},
		{"unreadable schema", `{"requestedSchema":"x"}`, true},
		// What a client reads differently from a case-insensitive decoder,
		// or what the word list alone missed.
		{"URL mode carrying a form", `{"mode":"url","url":"https://example.com","requestedSchema":{"properties":{"password":{"type":"string"}}}}`, true},
		{"mode in another case", `{"Mode":"url","requestedSchema":{"properties":{"password":{"type":"string"}}}}`, true},
		{"schema shadowed by a case variant", `{"requestedSchema":{"properties":{"password":{"type":"string"}}},"RequestedSchema":{"properties":{}}}`, true},
		{"title shadowed by a case variant", `{"requestedSchema":{"properties":{"x":{"type":"string","title":"Password","TITLE":"Name"}}}}`, true},
		{"secret in the description", `{"requestedSchema":{"properties":{"value":{"type":"string","description":"your account password"}}}}`, true},
		{"separator the word list does not name", `{"requestedSchema":{"properties":{"pass/word":{"type":"string"}}}}`, true},
		{"zero-width space", "{\"requestedSchema\":{\"properties\":{\"x\":{\"type\":\"string\",\"title\":\"Pass\u200bword\"}}}}", true},
		{"full-width letters", `{"requestedSchema":{"properties":{"x":{"type":"string","title":"\uff30\uff41\uff53\uff53\uff57\uff4f\uff52\uff44"}}}}`, true},
		{"duplicate property", `{"requestedSchema":{"properties":{"x":{"type":"string","title":"Password"},"x":{"type":"string"}}}}`, true},
		{"innocent form", `{"requestedSchema":{"properties":{"username":{"type":"string"},"email":{"type":"string","format":"email"}}}}`, false},
		{"URL elicitation", `{"mode":"url","url":"https://example.com/connect","message":"sign in"}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := &bothModesClient{}
			r := newPolicyRelay(client, allKinds)
			wantElicitRefused(t, r, &client.clientRelay, tc.params, tc.refused)
			want := "relay.elicitation"
			if tc.refused {
				want = relaySecretRefused
			}
			if got := r.codes(); !slices.Equal(got, []string{want}) {
				t.Errorf("audit codes %v, want [%s]", got, want)
			}
		})
	}
}

// Kinds the policy does not relay are refused: requests with -32601,
// notifications dropped, and progress not even asked for upstream.
func TestPolicyRelayFollowsKinds(t *testing.T) {
	client := &clientRelay{}
	r := newPolicyRelay(client, &gateway.RelayPolicy{Kinds: []gateway.RelayKind{gateway.RelayLog}})
	if r.ProgressToken() != nil {
		t.Error("the progress token passes although progress is not relayed")
	}
	if err := r.Notify(context.Background(), "notifications/progress", json.RawMessage(`{}`)); err == nil {
		t.Error("progress relayed although the policy does not relay it")
	}
	if err := r.Notify(context.Background(), "notifications/message", json.RawMessage(`{"level":"info"}`)); err != nil {
		t.Errorf("log not relayed: %v", err)
	}
	_, err := r.Request(context.Background(), "sampling/createMessage", json.RawMessage(`{}`))
	var rpc *wire.RPCError
	if !errors.As(err, &rpc) || rpc.Code != wire.RPCMethodNotFound || len(client.requests) > 0 {
		t.Errorf("sampling: %v, client sent %v; want -32601 and nothing sent", err, client.requests)
	}
	if got, want := r.codes(), []string{"relay.log", "relay.progress.refused", "relay.sampling.refused"}; !slices.Equal(got, want) {
		t.Errorf("audit codes %v, want %v", got, want)
	}
	// No relay obligation at all (a policy without relay rules): nothing relayed.
	if err := newPolicyRelay(client, nil).Notify(context.Background(), "notifications/message", nil); err == nil {
		t.Error("a decision without a relay obligation relays")
	}
}

// statelessRelay stands for the transport's relay of a 2026-07-28 call.
type statelessRelay struct {
	clientRelay
	round wire.InputRound
}

func (s *statelessRelay) Round() *wire.InputRound { return &s.round }
func (s *statelessRelay) InputRequired(context.Context, json.RawMessage) error {
	return nil
}

// An upstream's input-required result is relayed only when the policy
// relays every kind it asks for and no form asks for a secret; the refusal
// is a Forbidden error whose reason code the audit row carries, and the
// upstream is told only of the client capabilities the policy relays.
func TestPolicyRelayInputRequired(t *testing.T) {
	const form = `{"method":"elicitation/create","params":{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{"%s":{"type":"string"}}}}}`
	sampling := `{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}`
	onlyElicit := &gateway.RelayPolicy{Kinds: []gateway.RelayKind{gateway.RelayElicitation}, SecretWords: allKinds.SecretWords}
	tests := []struct {
		name     string
		policy   *gateway.RelayPolicy
		requests string
		code     string // "" when relayed
		noted    []string
	}{
		{"form and sampling relayed", allKinds, `{"a":` + fmt.Sprintf(form, "name") + `,"b":` + sampling + `}`, "", []string{"relay.elicitation", "relay.sampling"}},
		{"secret form refused", allKinds, `{"a":` + fmt.Sprintf(form, "password") + `}`, "relay.elicitation.secret_refused", []string{"relay.elicitation.secret_refused"}},
		{"sampling not relayed", onlyElicit, `{"a":` + fmt.Sprintf(form, "name") + `,"b":` + sampling + `}`, "relay.sampling.refused", []string{"relay.sampling.refused"}},
		{"unknown method", allKinds, `{"a":{"method":"tools/call","params":{}}}`, "relay.input.refused", []string{"relay.input.refused"}},
		{"no policy relays nothing", nil, `{"r":{"method":"roots/list","params":{}}}`, "relay.roots.refused", []string{"relay.roots.refused"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A client that declared form elicitation, as a 2026-07-28 client asked for one would have.
			r := newPolicyRelay(&statelessRelay{round: wire.InputRound{Capabilities: json.RawMessage(`{"elicitation":{}}`)}}, tc.policy)
			err := r.InputRequired(context.Background(), json.RawMessage(tc.requests))
			var ge *gateway.Error
			switch {
			case tc.code == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.code != "" && (!errors.As(err, &ge) || ge.Code != gateway.EForbidden || len(ge.Reasons) != 1 || ge.Reasons[0].Code != tc.code):
				t.Fatalf("err = %#v, want Forbidden with reason %s", err, tc.code)
			}
			if got := r.codes(); !slices.Equal(got, tc.noted) {
				t.Errorf("audit codes %v, want %v", got, tc.noted)
			}
		})
	}

	caps := &statelessRelay{round: wire.InputRound{Capabilities: json.RawMessage(`{"elicitation":{"form":{}},"sampling":{},"roots":{},"experimental":{}}`), State: json.RawMessage(`"s"`)}}
	round := newPolicyRelay(caps, onlyElicit).Round()
	if string(round.Capabilities) != `{"elicitation":{"form":{}}}` || string(round.State) != `"s"` {
		t.Errorf("round = %s %s, want only the elicitation capability and the state unchanged", round.Capabilities, round.State)
	}
	if newPolicyRelay(&clientRelay{}, allKinds).Round() != nil {
		t.Error("a session call's relay has a round")
	}
}

// The capabilities sent upstream are the client's object limited to the
// relayed kinds, read as a decoder reads it: the last of a repeated
// member, names with escapes resolved, values as written, members in name
// order; anything but one object keeps nothing.
func TestPolicyRelayRoundCapabilities(t *testing.T) {
	onlyRoots := &gateway.RelayPolicy{Kinds: []gateway.RelayKind{gateway.RelayRoots, gateway.RelayProgress}}
	tests := []struct {
		name   string
		policy *gateway.RelayPolicy
		caps   string
		want   string
	}{
		{"all relayed, name order", allKinds, `{"sampling":{},"roots":{"listChanged":true},"elicitation":{"form":{}}}`, `{"elicitation":{"form":{}},"roots":{"listChanged":true},"sampling":{}}`},
		{"only roots", onlyRoots, `{"sampling":{},"roots":{"listChanged":true},"elicitation":{"form":{}}}`, `{"roots":{"listChanged":true}}`},
		{"unknown capabilities dropped", allKinds, `{"experimental":{"x":1},"tasks":{}}`, `{}`},
		{"last of a repeated member", allKinds, `{"roots":{"a":1},"roots":{"b":2}}`, `{"roots":{"b":2}}`},
		{"escaped name", allKinds, `{"r\u006fots":{}}`, `{"roots":{}}`},
		{"whitespace kept inside values", allKinds, ` { "roots" : { "listChanged" : true } } `, `{"roots":{ "listChanged" : true }}`},
		{"exact case only", allKinds, `{"Roots":{}}`, `{}`},
		{"no policy", nil, `{"roots":{},"sampling":{}}`, `{}`},
		{"not an object", allKinds, `[1]`, `{}`},
		{"malformed", allKinds, `{"roots":{}`, `{}`},
		{"absent", allKinds, ``, `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			round := newPolicyRelay(&statelessRelay{round: wire.InputRound{Capabilities: json.RawMessage(tc.caps)}}, tc.policy).Round()
			if got := string(round.Capabilities); got != tc.want {
				t.Errorf("capabilities %s, want %s", got, tc.want)
			}
			if !json.Valid(round.Capabilities) {
				t.Errorf("capabilities %s are not JSON", round.Capabilities)
			}
		})
	}
}

// bothModesClient is a session client that declared form and URL
// elicitation.
type bothModesClient struct{ clientRelay }

func (*bothModesClient) ElicitationModes() (form, url bool) { return true, true }

// wantElicitRefused sends params as elicitation/create through r and
// checks that it was refused with -32602 and never reached client, or
// reached it, as refused says.
func wantElicitRefused(t *testing.T, r *policyRelay, client *clientRelay, params string, refused bool) {
	t.Helper()
	_, err := r.Request(context.Background(), "elicitation/create", json.RawMessage(params))
	var rpc *wire.RPCError
	if got := errors.As(err, &rpc) && rpc.Code == wire.RPCInvalidParams; got != refused {
		t.Fatalf("refused = %v (%v), want %v", got, err, refused)
	}
	if refused == (len(client.requests) > 0) {
		t.Errorf("the client was sent %v", client.requests)
	}
}

// formOnlyClient is a session client that declared elicitation in form
// mode only (2025-11-25 "elicitation": {"form": {}}, or the empty object).
type formOnlyClient struct{ clientRelay }

func (*formOnlyClient) ElicitationModes() (form, url bool) { return true, false }

// Issue 22, item 4: the filter read only property names and titles. It
// now reads every text of the request (the message, names, titles,
// descriptions, enum and oneOf titles, nested), folds look-alike letters
// (UTS #39 skeleton) and knows a wider vocabulary whatever the policy's
// list says.
func TestElicitationSecretFilter(t *testing.T) {
	schema := func(props string) string {
		return `{"message":"Please fill in the form","requestedSchema":{"type":"object","properties":` + props + `}}`
	}
	tests := []struct {
		name, params string
		refused      bool
	}{
		{"message text", `{"message":"Enter your bank password to continue","requestedSchema":{"type":"object","properties":{"answer":{"type":"string"}}}}`, true},
		{"Cyrillic a in the name", schema(`{"p\u0430ssword":{"type":"string"}}`), true},
		{"Cyrillic letters in the message", `{"message":"Your \u0455\u0435cret, \u0440lease","requestedSchema":{"type":"object","properties":{"v":{"type":"string"}}}}`, true},
		{"Greek omicron in a title", schema(`{"v":{"type":"string","title":"Passw\u03bfrd"}}`), true},
		{"passcode", schema(`{"code":{"type":"string","title":"Device passcode"}}`), true},
		{"PIN", schema(`{"v":{"type":"string","title":"Card PIN"}}`), true},
		{"pinCode camel case", schema(`{"pinCode":{"type":"string"}}`), true},
		{"2FA", schema(`{"v":{"type":"string","description":"the 2FA code from your app"}}`), true},
		{"CVV", schema(`{"cvv":{"type":"string"}}`), true},
		{"recovery phrase", schema(`{"words":{"type":"string","title":"Recovery phrase"}}`), true},
		{"seed phrase", schema(`{"v":{"type":"string","description":"your wallet seed phrase"}}`), true},
		{"oneOf title", schema(`{"choice":{"type":"string","oneOf":[{"const":"a","title":"Name"},{"const":"b","title":"My password is hunter2"}]}}`), true},
		{"enumNames", schema(`{"choice":{"type":"string","enum":["a","b"],"enumNames":["Alpha","Secret key"]}}`), true},
		{"enum value", schema(`{"choice":{"type":"string","enum":["apikey","other"]}}`), true},
		{"nested anyOf item title", schema(`{"list":{"type":"array","items":{"anyOf":[{"const":"x","title":"Access token"}]}}}`), true},
		{"shipping is not a PIN", schema(`{"shipping":{"type":"string","title":"Shipping option"},"spinner":{"type":"boolean"}}`), false},
		{"innocent message and choices", `{"message":"Which colour?","requestedSchema":{"type":"object","properties":{"colour":{"type":"string","oneOf":[{"const":"r","title":"Red"},{"const":"b","title":"Blue"}]}}}}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := &formOnlyClient{}
			// The policy names only "password": the rest is the gateway's own vocabulary.
			r := newPolicyRelay(client, &gateway.RelayPolicy{Kinds: allKinds.Kinds, SecretWords: []string{"password"}})
			wantElicitRefused(t, r, &client.clientRelay, tc.params, tc.refused)
		})
	}
}

// Issue 22, item 4: a URL-mode elicitation reached a client that declared
// only form mode. Neither a session client that declared form only nor a
// 2026-07-28 client whose capabilities say "elicitation": {} (form only)
// gets one; a 2026-07-28 client that declared url does.
func TestURLElicitationNotRelayedToFormOnlyClient(t *testing.T) {
	const urlMode = `{"mode":"url","url":"https://auth.example/connect","elicitationId":"e1","message":"Sign in"}`
	client := &formOnlyClient{}
	r := newPolicyRelay(client, allKinds)
	_, err := r.Request(context.Background(), "elicitation/create", json.RawMessage(urlMode))
	var rpc *wire.RPCError
	if !errors.As(err, &rpc) || len(client.requests) > 0 {
		t.Errorf("URL mode to a form-only session client: %v, sent %v; want refused, nothing sent", err, client.requests)
	}
	for caps, relayed := range map[string]bool{`{"elicitation":{}}`: false, `{"elicitation":{"form":{}}}`: false, `{}`: false, `{"elicitation":{"url":{}}}`: true} {
		up := &statelessRelay{round: wire.InputRound{Capabilities: json.RawMessage(caps)}}
		r := newPolicyRelay(up, allKinds)
		err := r.InputRequired(context.Background(), json.RawMessage(`{"a":{"method":"elicitation/create","params":`+urlMode+`}}`))
		if (err == nil) != relayed {
			t.Errorf("URL mode to a 2026-07-28 client with capabilities %s: %v; want relayed %v", caps, err, relayed)
		}
	}
}
