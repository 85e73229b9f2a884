package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/mtibben/confusables"
	"golang.org/x/text/unicode/norm"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/canon"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// policyRelay is a call's wire.Relay as the decision's relay
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
	next  wire.Relay
	kinds kindSet
	words []string // the policy's secret words as it wrote them

	secretOnce  sync.Once
	secretWords []string // words, normalised (normalWord): see secrets

	mu    sync.Mutex
	noted map[string]bool
}

func newPolicyRelay(next wire.Relay, rp *gateway.RelayPolicy) *policyRelay {
	r := &policyRelay{next: next}
	if rp != nil {
		for _, k := range rp.Kinds {
			r.kinds = r.kinds.with(k)
		}
		r.words = rp.SecretWords
	}
	return r
}

// kindSet is a set of the relay kinds wire.RelayKindOf knows, one bit
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
		for _, w := range slices.Concat(builtinSecretWords, r.words) {
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
	errRelayAsksSecrets = "the gateway never relays an elicitation that asks for a secret; "
	errRelayMode        = "the gateway does not relay this elicitation: "
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
	kind, ok := wire.RelayKindOf(method)
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
	kind, ok := wire.RelayKindOf(method)
	if !ok || !r.kinds.has(kind) {
		if ok {
			r.note(relayCodePrefix + string(kind) + relayRefusedSuffix)
		}
		return nil, &wire.RPCError{Code: wire.RPCMethodNotFound, Message: errRelayNotRelayed + method + " to this caller"}
	}
	if kind == gateway.RelayElicitation {
		if prop := r.secretText(params); prop != "" {
			r.note(relaySecretRefused)
			return nil, &wire.RPCError{Code: wire.RPCInvalidParams, Message: errRelayAsksSecrets + strconvQuote(prop) + " looks like one; ask for it out of band (URL elicitation) instead"}
		}
		if why := r.modeRefused(params); why != "" {
			r.note(relayCodePrefix + string(kind) + relayRefusedSuffix)
			return nil, &wire.RPCError{Code: wire.RPCInvalidParams, Message: errRelayMode + why}
		}
	}
	res, err := r.next.Request(ctx, method, params)
	r.note(relayCodePrefix + string(kind))
	return res, err
}

// secretText returns where an elicitation's params ask for what looks like
// a secret: the path of the first text (member name or string value, in
// name order, at any depth: the message, property names, titles,
// descriptions, formats, enum values and names, oneOf/anyOf titles) that
// holds a secret word (hasSecretWord), "" when none does. Only the
// top-level url and elicitationId of a URL-mode request are not read: a
// URL is where a secret may be asked for. The schema is read whatever
// "mode" says (a client that predates URL elicitation renders the form of
// a "url" request), every letter case of a member is read (a
// case-insensitive decoder reads the last of them, a JavaScript client
// the exact one), and params that are not one JSON object with unique
// member names fail closed.
func (r *policyRelay) secretText(params json.RawMessage) string {
	v, err := canon.Decode(params)
	in, ok := v.(map[string]any)
	if err != nil || !ok {
		return unreadableParams
	}
	for _, schema := range membersFold(in, "requestedSchema") {
		if _, ok := schema.(map[string]any); !ok {
			return unreadableParams // a schema nobody can read as one
		}
	}
	return r.secretIn(in, "", true)
}

// secretIn is secretText's walk of v at path; top marks the params object.
func (r *policyRelay) secretIn(v any, path string, top bool) string {
	switch v := v.(type) {
	case string:
		if r.hasSecretWord(v) {
			return path
		}
	case []any:
		for i, e := range v {
			if p := r.secretIn(e, path+"["+strconv.Itoa(i)+"]", false); p != "" {
				return p
			}
		}
	case map[string]any:
		names := make([]string, 0, len(v))
		for name := range v {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if top && (strings.EqualFold(name, "url") || strings.EqualFold(name, "elicitationId")) {
				continue
			}
			p := name
			if path != "" {
				p = path + "." + name
			}
			if r.hasSecretWord(name) {
				return p
			}
			if found := r.secretIn(v[name], p, false); found != "" {
				return found
			}
		}
	}
	return ""
}

// unreadableParams names what secretText refuses when the params cannot
// be checked: a request nobody can check is refused.
const unreadableParams = "(unreadable params)"

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

// builtinSecretWords are words the gateway refuses in an elicitation
// whatever the policy's secret words are (they add to these): what asks
// a person for a credential, a second factor, a card's code or a wallet's
// recovery words (issue 22).
var builtinSecretWords = []string{
	"password", "passwd", "passphrase", "passcode", "secret", "token", "apikey", "accesskey",
	"privatekey", "credential", "otp", "totp", "pin", "pincode", "2fa", "mfa", "cvv", "cvc",
	"cvv2", "securitycode", "verificationcode", "recoveryphrase", "recoverycode", "backupcode",
	"seedphrase", "mnemonic",
}

// shortWord is the length (in bytes of the folded word) under which a
// secret word must be a whole word of the text: "pin" in "Card PIN" or
// "pinCode", not in "shipping"; longer words match anywhere in the text's
// letters, so "pass/word" and "apiKey" are caught.
const shortWord = 5

func (r *policyRelay) hasSecretWord(text string) bool {
	tokens, joined := textWords(text)
	for _, w := range r.secrets() {
		switch {
		case w == "":
		case len(w) >= shortWord:
			if strings.Contains(joined, w) {
				return true
			}
		default:
			for _, t := range tokens {
				if t == w || t == w+"s" {
					return true
				}
			}
		}
	}
	return false
}

// textWords splits s into its words (at every character that is neither a
// letter nor a digit, and where a lower-case letter meets an upper-case
// one: "pinCode" is "pin" and "code"), each folded (normalWord), and
// returns them with their concatenation.
func textWords(s string) (tokens []string, joined string) {
	s = norm.NFKC.String(s)
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			if t := normalWord(string(cur)); t != "" {
				tokens = append(tokens, t)
			}
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, c := range s {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			if !unicode.Is(unicode.Cf, c) { // a zero-width character hides nothing
				flush()
			}
			prevLower = false
			continue
		}
		if prevLower && unicode.IsUpper(c) {
			flush()
		}
		cur = append(cur, c)
		prevLower = unicode.IsLower(c)
	}
	flush()
	return tokens, strings.Join(tokens, "")
}

// normalWord folds s to its letters and digits, lowercased, after Unicode
// compatibility normalisation (NFKC) and with look-alike letters of other
// scripts folded to the letters they imitate (the UTS #39 skeleton, so a
// Cyrillic "а" is an "a"): "API Key", "api_key", "apiKey", "pass/word",
// full-width letters and "pаssword" all compare as the plain ASCII word.
func normalWord(s string) string {
	s = confusables.Skeleton(strings.ToLower(norm.NFKC.String(s)))
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return -1
	}, strings.ToLower(norm.NFC.String(s)))
}

// elicitModes are the elicitation modes the caller's client declared:
// what a session client declared at initialize (wire.ElicitationModes),
// else the capabilities of a 2026-07-28 round, else form only.
func (r *policyRelay) elicitModes() (form, url bool) {
	if m, ok := r.next.(wire.ElicitationModes); ok {
		return m.ElicitationModes()
	}
	if in, ok := r.next.(wire.InputRelay); ok {
		if round := in.Round(); round != nil {
			return wire.ElicitationModesOf(round.Capabilities)
		}
	}
	return true, false
}

// modeRefused says why an elicitation's mode may not reach the client, ""
// when it may: every "mode" member (any letter case) is read, absent means
// form, and a mode the client did not declare is refused, so a URL a
// form-only client would not know how to treat never reaches it.
func (r *policyRelay) modeRefused(params json.RawMessage) string {
	form, url := r.elicitModes()
	v, err := canon.Decode(params)
	in, ok := v.(map[string]any)
	if err != nil || !ok {
		return "its params are not one JSON object"
	}
	modes := membersFold(in, "mode")
	if len(modes) == 0 {
		modes = []any{"form"}
	}
	for _, m := range modes {
		switch m {
		case "form":
			if !form {
				return "the client did not declare form-mode elicitation"
			}
		case "url":
			if !url {
				return "the client did not declare URL-mode elicitation"
			}
		default:
			return "its mode is neither form nor url"
		}
	}
	return ""
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

var _ wire.InputRelay = (*policyRelay)(nil)

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
func (r *policyRelay) Round() *wire.InputRound {
	next, ok := r.next.(wire.InputRelay)
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
		kind, ok := wire.RelayKindOf(req.Method)
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
			if prop := r.secretText(req.Params); prop != "" {
				r.note(relaySecretRefused)
				msg := errRelayAsksSecrets + strconvQuote(prop) + " (input request " + strconvQuote(k) + ") looks like one; ask for it out of band (URL elicitation) instead"
				return &gateway.Error{Code: gateway.EForbidden, Message: msg, Reasons: []gateway.Reason{{Code: relaySecretRefused, Message: msg}}}
			}
			if why := r.modeRefused(req.Params); why != "" {
				code := relayCodePrefix + string(kind) + relayRefusedSuffix
				r.note(code)
				msg := errRelayMode + why + " (input request " + strconvQuote(k) + ")"
				return &gateway.Error{Code: gateway.EForbidden, Message: msg, Reasons: []gateway.Reason{{Code: code, Message: msg}}}
			}
		}
	}
	for _, k := range keys {
		kind, _ := wire.RelayKindOf(in[k].Method)
		r.note(relayCodePrefix + string(kind))
	}
	return nil
}
