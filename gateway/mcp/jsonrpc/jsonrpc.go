// Package jsonrpc is the JSON-RPC 2.0 framing of the MCP transport: a POST
// body split into messages (single or batch, with a batch limit counted
// before parsing), each Message classified once (request, notification,
// response, invalid) with its members matched exactly and a repeated
// member refused, and the envelope of a result reply written without
// reflection. Refusals are wire.ProtocolError values (parse error,
// invalid request).
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/canon"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// Kind classifies one JSON-RPC message of a POST body.
type Kind int

const (
	KindInvalid      Kind = iota // not a JSON-RPC message; err says why
	KindRequest                  // method and id: answered
	KindNotification             // method, no id: never answered
	KindResponse                 // id and result/error: a reply to a server request
)

// Message is one JSON-RPC message, parsed once (docs/architecture.md,
// Conventions: "Parse once"). ID holds the raw id bytes (a JSON string or
// number) to echo back unchanged; nil when absent or unusable.
type Message struct {
	Kind   Kind
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Err    error // for KindInvalid: a *wire.ProtocolError
	// Result and Error are a KindResponse's members (one is set): the
	// client's answer to a request the gateway relayed.
	Result, Error json.RawMessage
}

// wireMessage is the envelope as decoded; every member stays raw so that a
// member of the wrong type is an invalid request (-32600), not a parse error.
type wireMessage struct {
	JSONRPC json.RawMessage
	ID      json.RawMessage
	Method  json.RawMessage
	Params  json.RawMessage
	Result  json.RawMessage
	Error   json.RawMessage
}

// Response is one JSON-RPC response. ID nil encodes as null, which is how
// JSON-RPC answers a request whose id could not be read.
type Response struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id"`
	Result  any               `json:"result,omitempty"`
	Error   *wire.ErrorObject `json:"error,omitempty"`
}

// Notification is a server-to-client JSON-RPC notification.
type Notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
}

// ParseBody splits a POST body into messages. batch reports a JSON array.
// A body that is not JSON is errParse; an empty array, or a single value
// that is not a usable JSON-RPC Message, is errInvalidRequest (the single
// message's id, when readable, is returned so the reply can echo it).
// Invalid members of a batch are returned as KindInvalid and answered one
// by one, as JSON-RPC 2.0 §6 asks. A batch of more than maxBatch members
// is refused whole (HTTP 413), before its members are parsed.
func ParseBody(body []byte, maxBatch int) (msgs []Message, batch bool, err error) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		if batchOver(body, maxBatch) {
			return nil, true, wire.ErrStatus(http.StatusRequestEntityTooLarge, gateway.EInvalid,
				"JSON-RPC batch has more than %d messages, the most this gateway accepts in one batch (an operator can raise MCPGATE_MAX_BATCH_MESSAGES); send at most %d per batch", maxBatch, maxBatch)
		}
		var raws []json.RawMessage
		if err := json.Unmarshal(body, &raws); err != nil {
			return nil, true, wire.ErrParse("%s", notJSON(err))
		}
		if len(raws) == 0 {
			return nil, true, wire.ErrInvalidRequest("empty JSON-RPC batch; send at least one message")
		}
		msgs = make([]Message, len(raws))
		for i, raw := range raws {
			msgs[i], _ = ParseMessage(raw) // members of a valid array are valid JSON
		}
		return msgs, true, nil
	}
	m, syntaxErr := ParseMessage(body)
	if syntaxErr != nil {
		return nil, false, wire.ErrParse("%s; send one JSON-RPC message", notJSON(syntaxErr))
	}
	if m.Kind == KindInvalid {
		return []Message{m}, false, m.Err
	}
	return []Message{m}, false, nil
}

// batchOver reports whether the JSON array body has more than limit
// members. It reads no further than member limit+1, so a body of many tiny
// members costs no more than limit of them. A body that is not a valid
// array reports false: the full parse says what is wrong with it.
func batchOver(body []byte, limit int) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // the '['
		return false
	}
	for n := 0; dec.More(); n++ {
		if n == limit {
			return true
		}
		var member json.RawMessage
		if dec.Decode(&member) != nil {
			return false
		}
	}
	return false
}

// MaxJSONDepth is encoding/json's nesting limit: deeper input is refused
// as a syntax error that names no offset.
const MaxJSONDepth = 10000

// notJSON explains why a body could not be read as JSON: its syntax error
// and offset, or the nesting limit, which valid but absurdly deep JSON
// meets before it ends.
func notJSON(err error) string {
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn) && strings.Contains(syn.Error(), "exceeded max depth"):
		return fmt.Sprintf("request body nests JSON deeper than %d levels, which the gateway does not read", MaxJSONDepth)
	case errors.As(err, &syn):
		return fmt.Sprintf("request body is not valid JSON: %s at byte %d", syn.Error(), syn.Offset)
	}
	return "request body is not valid JSON"
}

// EnvelopeMembers are the members of a JSON-RPC Message that ParseMessage
// reads, in the order of wireMessage's fields.
var EnvelopeMembers = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// ParseMessage classifies one JSON value. It returns a non-nil error only
// when raw is not JSON at all; every other defect is a KindInvalid message.
// Member names are matched exactly, as JSON-RPC defines them: decoding
// into a struct would also take "Method" or "ID" for method and id. A
// member it reads that appears more than once is an invalid request
// (ReadMembers).
func ParseMessage(raw json.RawMessage) (Message, error) {
	var v [6][]byte // EnvelopeMembers' values, on the stack
	if ok, repeated := ReadMembers(raw, EnvelopeMembers, v[:]); ok {
		w := wireMessage{JSONRPC: v[0], ID: v[1], Method: v[2], Params: v[3], Result: v[4], Error: v[5]}
		if repeated != "" {
			id, _ := ParseID(w.ID)
			if repeated == "id" {
				id = nil // which one the client meant is unknown: null, as for an unreadable id
			}
			return invalid(id, "%s", RepeatedMember(repeated).Error()), nil
		}
		return classify(&w), nil
	}
	var obj map[string]json.RawMessage // not an object: encoding/json says why
	if err := json.Unmarshal(raw, &obj); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || len(raw) == 0 {
			return Message{}, err
		}
		return invalid(nil, "a JSON-RPC message must be a JSON object"), nil
	}
	w := wireMessage{JSONRPC: obj["jsonrpc"], ID: obj["id"], Method: obj["method"],
		Params: obj["params"], Result: obj["result"], Error: obj["error"]}
	return classify(&w), nil
}

// ReadMembers is the one reader of the members the transport takes from a
// JSON object: the JSON-RPC envelope (ParseMessage) and the params of
// every method (decodeParams, modernFields). It sets values[i] to the raw
// value of the member named exactly names[i] (names "" are skipped; values
// must be nil and as long as names), and reports whether raw is one JSON
// object and the first of names that appears more than once ("" when
// none). A repeated member is refused by every caller rather than read as
// "the last wins": another reader of the same bytes (a client library, an
// upstream, a log) may take the first, and the gateway would decide on a
// Message other than the one they see (docs/http.md). Only the names read
// are checked, with one comparison per member that the match already
// makes, so the check costs nothing measurable on the hot path.
func ReadMembers(raw []byte, names []string, values [][]byte) (object bool, repeated string) {
	object = canon.Members(raw, func(name, value []byte) {
		for i, n := range names {
			if n != string(name) || n == "" {
				continue
			}
			if values[i] != nil && repeated == "" { // a present value is never empty
				repeated = n
			}
			values[i] = value
			return
		}
	})
	return object, repeated
}

// RepeatedMember is the error for a member named more than once in an
// object ReadMembers reads; it holds the member's name.
type RepeatedMember string

func (r RepeatedMember) Error() string {
	return fmt.Sprintf("member %q appears more than once; send each member once", string(r))
}

// classify applies JSON-RPC 2.0 §4 to a decoded envelope.
func classify(w *wireMessage) Message {
	id, idErr := ParseID(w.ID)
	if string(w.JSONRPC) != `"2.0"` {
		return invalid(id, `"jsonrpc" must be "2.0"`)
	}
	if w.Method == nil {
		if w.ID != nil && (w.Result != nil || w.Error != nil) {
			return Message{Kind: KindResponse, ID: id, Result: w.Result, Error: w.Error}
		}
		return invalid(id, `missing "method"; a JSON-RPC request names the method to call`)
	}
	method, ok := PlainString(w.Method)
	if !ok && json.Unmarshal(w.Method, &method) != nil || method == "" {
		return invalid(id, `"method" must be a non-empty string`)
	}
	if w.ID == nil {
		return Message{Kind: KindNotification, Method: method, Params: w.Params}
	}
	if idErr != nil {
		return invalid(nil, "%s", idErr.Error())
	}
	return Message{Kind: KindRequest, ID: id, Method: method, Params: w.Params}
}

// ParseID accepts the id types MCP allows: a string or a number (never
// null). It returns the raw bytes to echo back.
func ParseID(raw json.RawMessage) (json.RawMessage, error) {
	if raw == nil {
		return nil, nil
	}
	switch raw[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return raw, nil
	}
	return nil, errors.New(`"id" must be a string or a number (MCP forbids null ids)`)
}

func invalid(id json.RawMessage, format string, args ...any) Message {
	return Message{Kind: KindInvalid, ID: id, Err: wire.ErrInvalidRequest(format, args...)}
}

// PlainString returns the value of raw, a valid JSON value, when it is a
// string without escapes whose bytes are ASCII text (so its value is its
// bytes); ok is false for any other value.
func PlainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' || c == '"' || c < 0x20 || c >= utf8.RuneSelf {
			return "", false
		}
	}
	return string(inner), true
}

// ResultEnvelope is the Response with id (PlainID) and result body, a
// compact JSON object as encoding/json writes it.
func ResultEnvelope(id, body json.RawMessage) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	out := make([]byte, 0, len(EnvelopeOpen)+len(id)+len(EnvelopeMid)+len(body)+1)
	out = append(append(append(append(out, EnvelopeOpen...), id...), EnvelopeMid...), body...)
	return append(out, '}')
}

// PlainID reports whether id, a valid JSON id, is one encoding/json
// writes unchanged: printable ASCII without HTML characters, and no space
// outside a string.
func PlainID(id json.RawMessage) bool {
	for _, c := range id {
		if c < 0x20 || c > 0x7e || c == '<' || c == '>' || c == '&' || c == ' ' && id[0] != '"' {
			return false
		}
	}
	return true
}

// Around a result, the Response to a request (ResultEnvelope).
const EnvelopeOpen, EnvelopeMid = `{"jsonrpc":"2.0","id":`, `,"result":`
