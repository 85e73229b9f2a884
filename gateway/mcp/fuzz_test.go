package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/canon"
	"github.com/mcpgate/mcpgate/gateway/mcp/internal/jsontest"
)

// The fuzz targets of this file check properties of the JSON-RPC parser,
// the tools/call params and the tools/list cursor against an independent
// reading of the same bytes: JSON objects decoded with exact member names
// (JSON-RPC and MCP names are case-sensitive), never through the structs
// the code under test uses. `go test` runs their seeds; `make fuzz` runs
// the engine.

func FuzzCallToolParams(f *testing.F) {
	for _, s := range []string{
		`{"name":"workspace.info","arguments":{}}`,
		`{"name":"projects.list"}`,
		`{"name":"app.deploy","arguments":{"app_id":"app-1","confirmation_token":"mcpc1.x.y","idempotency_key":"k1"},"_meta":{"progressToken":3}}`,
		`{"name":"db.query","arguments":{"sql":"select 1","limit":10.5,"tags":["a",null,true],"nested":{"x":{"y":[]}}}}`,
		`{"name":"x","arguments":null,"_meta":null}`,
		`{"name":"x","arguments":[1,2]}`, `{"name":"x","arguments":"{}"}`, `{"name":"x","arguments":{"a":1,"a":2}}`,
		`{"name":"","arguments":{}}`, `{"name":7}`, `{"arguments":{}}`, `{"name":"x","_meta":[]}`,
		`{"name":"x","NAME":"y"}`, `{"name":"x","name":"y"}`, `{"name":"x","_meta":{},"_meta":[]}`, `[]`, `"x"`, `null`, ``, `{"name":"x","arguments":{"a":1e999}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		params = bytes.TrimSpace(params) // as the envelope hands them over
		call, err := parseCallParams(params)
		// The stateless path reads the members in checkModern's pass and
		// builds the same call, or refuses it with the same error.
		if in, ferr := modernFields(params); ferr == nil {
			call2, err2 := buildCallParams(callParamsFrom(in.Name, in.Arguments, in.Meta))
			if !jsontest.SameError(err, err2) || !reflect.DeepEqual(call, call2) {
				t.Fatalf("params %q: parseCallParams = %+v, %v; from modernFields %+v, %v", params, call, err, call2, err2)
			}
		}
		obj, isObject := jsontest.Members(params)
		name, nameOK := jsontest.JSONString(obj["name"])
		// _meta is kept as the client wrote it when it is an object, and
		// dropped when null; any other value refuses the call.
		metaRaw := bytes.TrimSpace(obj["_meta"])
		metaOK := metaRaw == nil || string(metaRaw) == "null" || json.Valid(metaRaw) && metaRaw[0] == '{'
		meta := json.RawMessage(metaRaw)
		if string(metaRaw) == "null" {
			meta = nil
		}
		// The audit row of a malformed call names the tool only when the
		// params do.
		if jsontest.RepeatedMember(params, []string{"name"}) != "" {
			name, nameOK = "", false // which one is unknown
		}
		if got := readableName(params); got != name {
			t.Fatalf("readableName(%q) = %q, want %q", params, got, name)
		}
		// A repeated member of a whole object is refused as such; bytes
		// that are not JSON get the syntax error (checked below), as the
		// envelope does.
		if rep := jsontest.RepeatedMember(params, []string{"name", "arguments", "_meta"}); rep != "" && json.Valid(params) {
			if err == nil || !strings.Contains(err.Error(), "more than once") {
				t.Fatalf("params %q with %q twice: %v, want refused", params, rep, err)
			}
			return
		}
		if err != nil {
			if gateway.ErrorCodeOf(err) != gateway.EInvalid || call != nil {
				t.Fatalf("refusal is %v with call %+v, want EInvalid and no call", err, call)
			}
			if isObject && json.Valid(params) && nameOK && name != "" && metaOK {
				t.Fatalf("refused well-formed params %q: %v", params, err)
			}
			return
		}
		if !isObject || !nameOK || name == "" || call.Name != name {
			t.Fatalf("accepted %q as tool %q; its name member is %q", params, call.Name, obj["name"])
		}
		if !metaOK || !bytes.Equal(call.Meta, meta) || (call.Meta == nil) != (meta == nil) {
			t.Fatalf("_meta %v, want %v from %q", call.Meta, meta, metaRaw)
		}
		if call.Arguments == nil || len(call.RawArguments) == 0 {
			t.Fatalf("nil arguments or raw arguments: %+v", call)
		}
		args := bytes.TrimSpace(obj["arguments"])
		if len(args) == 0 || string(args) == "null" {
			if len(call.Arguments) != 0 || string(call.RawArguments) != "{}" || call.ArgumentsErr != nil {
				t.Fatalf("absent arguments read as %+v", call)
			}
			return
		}
		if !bytes.Equal(call.RawArguments, args) {
			t.Fatalf("raw arguments %q, want the member %q", call.RawArguments, args)
		}
		// Arguments are what encoding/json decodes with UseNumber: every
		// number keeps the client's digits. Only what canon refuses
		// (a repeated member name, a number beyond its limits) or what is
		// not a UTF-8 JSON object is refused.
		want, werr := decodeUseNumber(args)
		decodable := args[0] == '{' && werr == nil && utf8.Valid(args)
		var ce *canon.Error
		_, cerr := canon.Decode(args)
		noCanonicalForm := errors.As(cerr, &ce)
		if call.ArgumentsErr != nil {
			if decodable && !noCanonicalForm || gateway.ErrorCodeOf(call.ArgumentsErr) != gateway.EInvalid || len(call.Arguments) != 0 {
				t.Fatalf("arguments %q refused with %v, arguments %v", args, call.ArgumentsErr, call.Arguments)
			}
			return
		}
		if !decodable || noCanonicalForm || !reflect.DeepEqual(call.Arguments, want) {
			t.Fatalf("arguments %v, want %v from %q (canon: %v)", call.Arguments, want, args, cerr)
		}
		// The arguments re-encode and read back unchanged (what adapters and
		// the input hash see).
		enc, err := json.Marshal(call.Arguments)
		if err != nil {
			t.Fatalf("arguments do not re-encode: %v", err)
		}
		if back, err := decodeUseNumber(enc); err != nil || !reflect.DeepEqual(back, call.Arguments) {
			t.Fatalf("re-encoded arguments %s read back as %v (err %v)", enc, back, err)
		}
	})
}

// decodeUseNumber decodes a JSON object with numbers as json.Number.
func decodeUseNumber(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data")
	}
	return m, nil
}

func FuzzToolsListCursor(f *testing.F) {
	const pageSize = 7
	h := &fakeHandler{}
	tr, err := NewHandler(Options{Authenticator: fakeAuth{}, Handler: h, Logger: zap.NewNop(), PageSize: pageSize})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(tr.Close)
	p := principals[tokAlice]
	for _, s := range []string{"", encodeCursor(0), encodeCursor(7), encodeCursor(14), encodeCursor(119), encodeCursor(1 << 40),
		"dG9vbHM6LTE" /* tools:-1 */, "dG9vbHM6KzE0" /* tools:+14 */, "dG9vbHM6MDc" /* tools:07 */, "dG9vbHM6MTR",
		"dG9vbHM6MTQ=", "not a cursor", "dG9vbHM6", "eA", "!!"} {
		f.Add(s, uint16(120))
	}
	f.Add(encodeCursor(3), uint16(3))
	f.Add(encodeCursor(4), uint16(3))
	f.Fuzz(func(t *testing.T, cursor string, n uint16) {
		nTools := int(n % 300)
		off, err := decodeCursor(cursor)
		if err != nil {
			if gateway.ErrorCodeOf(err) != gateway.EInvalid {
				t.Fatalf("cursor %q refused with %v, want EInvalid", cursor, err)
			}
		} else if off < 0 || cursor != "" && encodeCursor(off) != cursor {
			t.Fatalf("cursor %q decodes to %d, which encodes as %q", cursor, off, encodeCursor(off))
		}
		h.setTools(nTools, nil)
		params, _ := json.Marshal(map[string]string{"cursor": cursor})
		res, lerr := tr.listTools(context.Background(), &session{}, &p, params)
		if err != nil || off > nTools {
			if lerr == nil || gateway.ErrorCodeOf(lerr) != gateway.EInvalid {
				t.Fatalf("cursor %q (offset %d, err %v) over %d tools answered %v, %v; want EInvalid", cursor, off, err, nTools, res, lerr)
			}
			return
		}
		if lerr != nil {
			t.Fatalf("valid cursor %q (offset %d) over %d tools refused: %v", cursor, off, nTools, lerr)
		}
		// Following nextCursor from here lists every remaining tool once, in
		// order, in full pages but the last.
		next := off
		for {
			page := res.(*listToolsResult)
			end := min(next+pageSize, nTools)
			if len(page.Tools) != end-next {
				t.Fatalf("page at %d of %d tools has %d tools", next, nTools, len(page.Tools))
			}
			for i, tool := range page.Tools {
				if tool.Name != toolName(next+i) {
					t.Fatalf("page at %d: tool %d is %q, want %q", next, i, tool.Name, toolName(next+i))
				}
			}
			if end == nTools {
				if page.NextCursor != "" {
					t.Fatalf("last page at %d of %d tools has nextCursor %q", next, nTools, page.NextCursor)
				}
				return
			}
			if page.NextCursor != encodeCursor(end) {
				t.Fatalf("page at %d: nextCursor %q, want %q", next, page.NextCursor, encodeCursor(end))
			}
			params, _ := json.Marshal(map[string]string{"cursor": page.NextCursor})
			if res, lerr = tr.listTools(context.Background(), &session{}, &p, params); lerr != nil {
				t.Fatalf("nextCursor %q refused: %v", page.NextCursor, lerr)
			}
			next = end
		}
	})
}
