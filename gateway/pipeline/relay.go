package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/canon"
)

// policyRelay is a call's gateway.Relay as the decision's relay
// obligation allows it: a kind the policy does not relay to the caller is
// refused, and so is a form elicitation whose requestedSchema asks for
// what looks like a secret. It notes each kind relayed or refused for the
// call's audit row (codes), one row per call as ever.
//
// One is made per relayed call, so it costs little until the upstream
// sends something: the kinds are a bit set, the secret words are
// normalised on the first form checked, and the audit codes are kept
// once there is one.
type policyRelay struct {
	next  gateway.Relay
	kinds kindSet
	words []string // the policy's secret words as it wrote them

	secretOnce  sync.Once
	secretWords []string // words, normalised (normalWord): see secrets

	mu    sync.Mutex
	noted map[string]bool
}

func newPolicyRelay(next gateway.Relay, rp *gateway.RelayPolicy) *policyRelay {
	r := &policyRelay{next: next}
	if rp != nil {
		for _, k := range rp.Kinds {
			r.kinds = r.kinds.with(k)
		}
		r.words = rp.SecretWords
	}
	return r
}

// kindSet is a set of the relay kinds gateway.RelayKindOf knows, one bit
// each; a kind it does not know is never in it (no method has it).
type kindSet uint8

// kindBit is k's bit, 0 for a kind no method has.
func kindBit(k gateway.RelayKind) kindSet {
	switch k {
	case gateway.RelayProgress:
		return 1 << 0
	case gateway.RelayLog:
		return 1 << 1
	case gateway.RelayElicitation:
		return 1 << 2
	case gateway.RelaySampling:
		return 1 << 3
	case gateway.RelayRoots:
		return 1 << 4
	}
	return 0
}

func (s kindSet) with(k gateway.RelayKind) kindSet { return s | kindBit(k) }

// has reports whether k is in s; never for a kind no method has.
func (s kindSet) has(k gateway.RelayKind) bool { b := kindBit(k); return b != 0 && s&b != 0 }

// secrets returns the secret words normalised, computed on first use.
func (r *policyRelay) secrets() []string {
	r.secretOnce.Do(func() {
		for _, w := range r.words {
			r.secretWords = append(r.secretWords, normalWord(w))
		}
	})
	return r.secretWords
}

// Reason codes of relayed messages in the audit row: relay.<kind> when
// one was relayed, relay.<kind>.refused when the policy refused one,
// relay.elicitation.secret_refused for a form that asked for a secret.
const (
	relayCodePrefix     = "relay."
	relayRefusedSuffix  = ".refused"
	relaySecretRefused  = "relay.elicitation.secret_refused"
	errRelayNotRelayed  = "the gateway's policy does not relay "
	errRelayAsksSecrets = "the gateway never relays a form elicitation that asks for a secret; property "
)

// errRelayRefused: a notification the policy does not relay.
var errRelayRefused = errors.New("the policy does not relay this notification to the caller")

func (r *policyRelay) note(code string) {
	r.mu.Lock()
	if r.noted == nil {
		r.noted = map[string]bool{}
	}
	r.noted[code] = true
	r.mu.Unlock()
}

// codes returns the reason codes noted, sorted.
func (r *policyRelay) codes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.noted) == 0 {
		return nil
	}
	out := make([]string, 0, len(r.noted))
	for c := range r.noted {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// ProgressToken hides the client's token when progress is not relayed,
// so the upstream is not even asked for progress.
func (r *policyRelay) ProgressToken() json.RawMessage {
	if !r.kinds.has(gateway.RelayProgress) {
		return nil
	}
	return r.next.ProgressToken()
}

func (r *policyRelay) Notify(ctx context.Context, method string, params json.RawMessage) error {
	kind, ok := gateway.RelayKindOf(method)
	if !ok || !r.kinds.has(kind) {
		r.note(relayCodePrefix + string(kind) + relayRefusedSuffix)
		return errRelayRefused
	}
	err := r.next.Notify(ctx, method, params)
	if err == nil {
		r.note(relayCodePrefix + string(kind))
	}
	return err
}

func (r *policyRelay) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	kind, ok := gateway.RelayKindOf(method)
	if !ok || !r.kinds.has(kind) {
		if ok {
			r.note(relayCodePrefix + string(kind) + relayRefusedSuffix)
		}
		return nil, &gateway.RPCError{Code: gateway.RPCMethodNotFound, Message: errRelayNotRelayed + method + " to this caller"}
	}
	if kind == gateway.RelayElicitation {
		if prop := r.secretProperty(params); prop != "" {
			r.note(relaySecretRefused)
			return nil, &gateway.RPCError{Code: gateway.RPCInvalidParams, Message: errRelayAsksSecrets + strconvQuote(prop) + " looks like one; ask for it out of band (URL elicitation) instead"}
		}
	}
	res, err := r.next.Request(ctx, method, params)
	r.note(relayCodePrefix + string(kind))
	return res, err
}

// secretProperty returns the first property of a form elicitation's
// requestedSchema whose name, title, description or format contains a
// secret word (normalWord), "" when none does. It reads the params as the
// strictest and the most lenient client would: every member whose name is
// "requestedSchema", "properties", "title", "description" or "format" in
// any letter case is checked (a case-insensitive decoder such as Go's
// encoding/json reads the last of them, a JavaScript client only the exact
// one), the schema is checked whatever "mode" says (a client that predates
// URL elicitation renders the form of a "url" request), and params that
// are not one JSON object with unique member names fail closed.
func (r *policyRelay) secretProperty(params json.RawMessage) string {
	v, err := canon.Decode(params)
	in, ok := v.(map[string]any)
	if err != nil || !ok {
		return unreadableSchema
	}
	for _, schema := range membersFold(in, "requestedSchema") {
		sm, ok := schema.(map[string]any)
		if !ok {
			return unreadableSchema
		}
		for _, props := range membersFold(sm, "properties") {
			pm, ok := props.(map[string]any)
			if !ok {
				return unreadableSchema
			}
			names := make([]string, 0, len(pm))
			for name := range pm {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				texts := []string{name}
				if p, ok := pm[name].(map[string]any); ok {
					for _, k := range []string{"title", "description", "format"} {
						for _, t := range membersFold(p, k) {
							if s, ok := t.(string); ok {
								texts = append(texts, s)
							}
						}
					}
				}
				if r.hasSecretWord(texts) {
					return name
				}
			}
		}
	}
	return ""
}

// unreadableSchema names what secretProperty refuses when the params
// cannot be checked: a form nobody can check is refused.
const unreadableSchema = "(unreadable requestedSchema)"

// membersFold returns the values of m's members whose name is key in any
// letter case, in name order.
func membersFold(m map[string]any, key string) []any {
	var names []string
	for name := range m {
		if strings.EqualFold(name, key) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := make([]any, 0, len(names))
	for _, name := range names {
		out = append(out, m[name])
	}
	return out
}

func (r *policyRelay) hasSecretWord(texts []string) bool {
	for _, text := range texts {
		t := normalWord(text)
		for _, w := range r.secrets() {
			if w != "" && strings.Contains(t, w) {
				return true
			}
		}
	}
	return false
}

// normalWord folds s to its letters and digits, lowercased after Unicode
// compatibility normalisation (NFKC): "API Key", "api_key", "apiKey",
// "pass/word", "Pass\u200bword" and full-width letters all compare as the
// plain ASCII word. Look-alike letters of other scripts (a Cyrillic "а")
// are not folded.
func normalWord(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return -1
	}, strings.ToLower(norm.NFKC.String(s)))
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

var _ gateway.InputRelay = (*policyRelay)(nil)

// capabilityKinds maps the client capabilities of MCP to the kind of input
// an upstream asks for with them, in name order (the order Round writes
// them in).
var capabilityKinds = [...]struct {
	name string
	kind gateway.RelayKind
}{{"elicitation", gateway.RelayElicitation}, {"roots", gateway.RelayRoots}, {"sampling", gateway.RelaySampling}}

// Round is the transport's round with the client capabilities limited to
// the kinds the policy relays: an upstream is not told of a capability
// whose requests the gateway would refuse. The capabilities are read in
// one pass over the client's object, without decoding it: the object
// sent upstream holds the members kept (the last of a repeated name, as
// a decoder reads it), in name order, each value as the client wrote it;
// capabilities that are not one JSON object keep none ("{}").
func (r *policyRelay) Round() *gateway.InputRound {
	next, ok := r.next.(gateway.InputRelay)
	if !ok {
		return nil
	}
	round := next.Round()
	if round == nil {
		return nil
	}
	out := *round
	out.Capabilities = keptCapabilities(round.Capabilities, r.kinds)
	return &out
}

// keptCapabilities is the JSON object of the members of caps whose
// capability (capabilityKinds) is of a kind in kinds, as Round describes.
func keptCapabilities(caps json.RawMessage, kinds kindSet) json.RawMessage {
	var kept [len(capabilityKinds)]json.RawMessage
	size := 2
	if !canon.Members(caps, func(name, value []byte) {
		for i, c := range capabilityKinds {
			if string(name) == c.name {
				if kinds.has(c.kind) {
					kept[i] = value
				}
				return
			}
		}
	}) {
		return json.RawMessage(`{}`)
	}
	for i, v := range kept {
		if v != nil {
			size += len(capabilityKinds[i].name) + len(v) + 4
		}
	}
	b := append(make([]byte, 0, size), '{')
	for i, c := range capabilityKinds {
		if kept[i] == nil {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(append(append(append(b, '"'), c.name...), `":`...), kept[i]...)
	}
	return append(b, '}')
}

// InputRequired applies the rules of Request to each of an upstream's
// inputRequests, in key order, and notes each kind for the audit row.
func (r *policyRelay) InputRequired(_ context.Context, requests json.RawMessage) error {
	var in map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if len(requests) > 0 && json.Unmarshal(requests, &in) != nil {
		return gateway.Errorf(gateway.EUnavailable, "the upstream's inputRequests is not an object of requests; the gateway relays none of it")
	}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		req := in[k]
		kind, ok := gateway.RelayKindOf(req.Method)
		if !ok || kind == gateway.RelayProgress || kind == gateway.RelayLog || !r.kinds.has(kind) {
			code := relayCodePrefix + "input" + relayRefusedSuffix
			if ok {
				code = relayCodePrefix + string(kind) + relayRefusedSuffix
			}
			r.note(code)
			msg := errRelayNotRelayed + strconvQuote(req.Method) + " (input request " + strconvQuote(k) + ") to this caller, so the tool cannot get the input it asks for; ask an operator to relay it or call the tool without it"
			return &gateway.Error{Code: gateway.EForbidden, Message: msg, Reasons: []gateway.Reason{{Code: code, Message: msg}}}
		}
		if kind == gateway.RelayElicitation {
			if prop := r.secretProperty(req.Params); prop != "" {
				r.note(relaySecretRefused)
				msg := errRelayAsksSecrets + strconvQuote(prop) + " (input request " + strconvQuote(k) + ") looks like one; ask for it out of band (URL elicitation) instead"
				return &gateway.Error{Code: gateway.EForbidden, Message: msg, Reasons: []gateway.Reason{{Code: relaySecretRefused, Message: msg}}}
			}
		}
	}
	for _, k := range keys {
		kind, _ := gateway.RelayKindOf(in[k].Method)
		r.note(relayCodePrefix + string(kind))
	}
	return nil
}
