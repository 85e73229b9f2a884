package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/internal/jsontest"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// The fuzz targets of this file check properties of the JSON-RPC parser
// against an independent reading of the same bytes: JSON objects decoded
// with exact member names (JSON-RPC names are case-sensitive), never
// through the structs the code under test uses; FuzzParseUnchanged holds
// the one-pass reading (canon.Members) equal to how messages were read
// before, with encoding/json maps, errors included. `go test` runs their
// seeds; `make fuzz` runs the engine.

// testMaxBatch is the transport's default batch limit
// (mcp.DefaultMaxBatchMessages).
const testMaxBatch = 100

func compactJSON(t *testing.T, raw []byte) string {
	t.Helper()
	// Decode and encode again, numbers kept as written: two spellings of
	// one value (escapes such as \u0026 for &, key order) compare equal.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("not JSON: %q: %v", raw, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("does not re-encode: %q: %v", raw, err)
	}
	return string(out)
}

func FuzzParseBody(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"workspace.info","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":-3.5e2,"method":"tools/list","params":{"cursor":"dG9vbHM6MTAw"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}`,
		` [{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}},{"id":null}] `,
		`[]`, `[1,"x",null]`, `null`, `{}`, `"2.0"`, `{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{},"method":"ping"}`, `{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":""}`, `{"jsonrpc":"2.0","id":1,"method":7}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","Method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		msgs, batch, err := ParseBody(body, testMaxBatch)
		trimmed := bytes.TrimSpace(body)
		isArray := len(trimmed) > 0 && trimmed[0] == '['
		if isArray != batch {
			t.Fatalf("batch = %v for a body that starts with %q", batch, trimmed[:min(1, len(trimmed))])
		}
		if err != nil && batch && isBatchTooLarge(err) {
			// Counted before parsing: the members past the limit are never
			// read, so the body need not be JSON.
			if len(msgs) != 0 {
				t.Fatalf("refused oversized batch returned %d messages", len(msgs))
			}
			return
		}
		if err != nil {
			checkProtocolError(t, err)
			if !json.Valid(trimmed) && !isParseError(err) {
				t.Fatalf("body that is not JSON refused with %v, want a parse error", err)
			}
			if batch && len(msgs) != 0 {
				t.Fatalf("refused batch returned %d messages", len(msgs))
			}
			if !batch && (len(msgs) > 1 || len(msgs) == 1 && msgs[0].Kind != KindInvalid) {
				t.Fatalf("refused single message returned %+v", msgs)
			}
			return
		}
		if !json.Valid(trimmed) {
			t.Fatalf("accepted a body that is not JSON: %q", body)
		}
		var raws []json.RawMessage
		if batch {
			if e := json.Unmarshal(trimmed, &raws); e != nil {
				t.Fatalf("accepted batch does not decode as an array: %v", e)
			}
		} else {
			raws = []json.RawMessage{trimmed}
		}
		if len(raws) == 0 || len(msgs) != len(raws) {
			t.Fatalf("%d messages for %d array members", len(msgs), len(raws))
		}
		if !batch && msgs[0].Kind == KindInvalid {
			t.Fatalf("single invalid message accepted without an error: %+v", msgs[0])
		}
		for i := range msgs {
			checkMessage(t, raws[i], &msgs[i])
		}
	})
}

// isBatchTooLarge reports the refusal of a batch over the member limit:
// HTTP 413, -32600.
func isBatchTooLarge(err error) bool {
	var pe *wire.ProtocolError
	return errors.As(err, &pe) && pe.Status == 413 && pe.Code == wire.RPCInvalidRequest
}

func isParseError(err error) bool {
	var pe *wire.ProtocolError
	return errors.As(err, &pe) && pe.Code == wire.RPCParseError
}

func checkProtocolError(t *testing.T, err error) {
	t.Helper()
	var pe *wire.ProtocolError
	if !errors.As(err, &pe) || pe.Status != 400 || pe.Class != gateway.EInvalid ||
		(pe.Code != wire.RPCParseError && pe.Code != wire.RPCInvalidRequest) {
		t.Fatalf("refusal is %#v, want a 400 parse error or invalid request", err)
	}
}

// checkMessage checks m against an independent, case-sensitive reading of
// raw, and that re-encoding m reads back as the same message.
func checkMessage(t *testing.T, raw json.RawMessage, m *Message) {
	t.Helper()
	obj, isObject := jsontest.Members(raw)
	if m.Kind == KindInvalid {
		if m.Err == nil {
			t.Fatalf("invalid message without an error: %q", raw)
		}
		checkProtocolError(t, m.Err)
		return
	}
	if !isObject {
		t.Fatalf("message %q is not a JSON object but was classified %d", raw, m.Kind)
	}
	if rep := jsontest.RepeatedMember(raw, EnvelopeMembers); rep != "" {
		t.Fatalf("accepted %q, whose member %q appears twice", raw, rep)
	}
	if v, ok := jsontest.JSONString(obj["jsonrpc"]); !ok || v != "2.0" {
		t.Fatalf("accepted %q whose jsonrpc member is %q", raw, obj["jsonrpc"])
	}
	id, hasID := obj["id"]
	if hasID && m.ID != nil && !bytes.Equal(id, m.ID) {
		t.Fatalf("id %q echoed as %q", id, m.ID)
	}
	switch m.Kind {
	case KindRequest, KindNotification:
		method, ok := jsontest.JSONString(obj["method"])
		if !ok || method == "" || method != m.Method {
			t.Fatalf("accepted %q as method %q; its method member is %q", raw, m.Method, obj["method"])
		}
		if !bytes.Equal(m.Params, obj["params"]) {
			t.Fatalf("params %q, want the member %q", m.Params, obj["params"])
		}
		if (m.Kind == KindRequest) != hasID {
			t.Fatalf("kind %d for a message with id member %v", m.Kind, hasID)
		}
		if m.Kind == KindRequest && (len(m.ID) == 0 || !validID(m.ID)) {
			t.Fatalf("request %q accepted with id %q; ids are strings or numbers", raw, m.ID)
		}
	case KindResponse:
		if _, ok := obj["method"]; ok || !hasID {
			t.Fatalf("response %q has a method or no id", raw)
		}
		if obj["result"] == nil && obj["error"] == nil {
			t.Fatalf("response %q has neither result nor error", raw)
		}
		return
	}
	// Re-encoding the message reads back as the same message.
	out := map[string]any{"jsonrpc": "2.0", "method": m.Method}
	if m.Kind == KindRequest {
		out["id"] = m.ID
	}
	if m.Params != nil {
		out["params"] = m.Params
	}
	enc, err := json.Marshal(out)
	if err != nil {
		t.Fatalf("accepted message does not re-encode: %v", err)
	}
	again, err := ParseMessage(enc)
	if err != nil || again.Kind != m.Kind || again.Method != m.Method ||
		(m.Kind == KindRequest && compactJSON(t, again.ID) != compactJSON(t, m.ID)) ||
		(m.Params != nil && compactJSON(t, again.Params) != compactJSON(t, m.Params)) {
		t.Fatalf("re-encoded %q reads back as %+v (err %v), want %+v", enc, again, err, *m)
	}
	if m.Kind == KindRequest {
		// The reply echoes the id unchanged.
		reply, err := json.Marshal(Response{JSONRPC: "2.0", ID: m.ID, Result: struct{}{}})
		if err != nil {
			t.Fatalf("reply to id %q does not encode: %v", m.ID, err)
		}
		back, err := ParseMessage(reply)
		if err != nil || back.Kind != KindResponse || compactJSON(t, back.ID) != compactJSON(t, m.ID) {
			t.Fatalf("reply %q reads back as %+v (err %v)", reply, back, err)
		}
	}
}

// validID reports whether raw is one JSON string or number.
func validID(raw json.RawMessage) bool {
	if !json.Valid(raw) {
		return false
	}
	if _, ok := jsontest.JSONString(raw); ok {
		return true
	}
	var n json.Number
	return json.Unmarshal(raw, &n) == nil && raw[0] != '"'
}

func referenceParseMessage(raw json.RawMessage) (Message, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || len(raw) == 0 {
			return Message{}, err
		}
		return invalid(nil, "a JSON-RPC message must be a JSON object"), nil
	}
	if rep := jsontest.RepeatedMember(raw, []string{"jsonrpc", "id", "method", "params", "result", "error"}); rep != "" {
		id, _ := ParseID(obj["id"])
		if rep == "id" {
			id = nil
		}
		return invalid(id, "member %q appears more than once; send each member once", rep), nil
	}
	w := wireMessage{JSONRPC: obj["jsonrpc"], ID: obj["id"], Method: obj["method"],
		Params: obj["params"], Result: obj["result"], Error: obj["error"]}
	return classify(&w), nil
}

// FuzzParseUnchanged holds ParseMessage to its reference reading, errors
// included, so no reply changes by a byte.
func FuzzParseUnchanged(f *testing.F) {
	for _, s := range jsontest.ParseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := ParseMessage(raw)
		want, werr := referenceParseMessage(raw)
		if !jsontest.SameError(err, werr) || !jsontest.SameError(got.Err, want.Err) {
			t.Fatalf("ParseMessage(%q) error %v / %v, want %v / %v", raw, err, got.Err, werr, want.Err)
		}
		got.Err, want.Err = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseMessage(%q) = %+v, want %+v", raw, got, want)
		}
	})
}
