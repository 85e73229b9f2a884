package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/internal/jsontest"
	"github.com/mcpgate/mcpgate/gateway/mcp/jsonrpc"
)

// The envelope and params are read in one pass over the bytes
// (canon.Members). These references are how they were read before, with
// encoding/json maps; FuzzParseUnchanged holds the two readings equal,
// errors included, so no reply changes by a byte. The one change since:
// a member read that appears more than once is refused (issue 22, item
// 14), which referenceRepeated finds with encoding/json's tokenizer.

func referenceDecodeParams(params json.RawMessage, v any) error {
	if len(params) == 0 || string(params) == "null" {
		return nil
	}
	if params[0] != '{' {
		return notObject(jsonKind(params[0]))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params, &obj); err != nil {
		return err
	}
	rv := reflect.ValueOf(v).Elem()
	var names []string
	for i := range rv.NumField() {
		name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
		if name != "-" {
			names = append(names, name)
		}
	}
	if rep := jsontest.RepeatedMember(params, names); rep != "" {
		return jsonrpc.RepeatedMember(rep)
	}
	for i := range rv.NumField() {
		name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
		raw, ok := obj[name]
		if !ok || name == "" || name == "-" {
			continue
		}
		if err := json.Unmarshal(raw, rv.Field(i).Addr().Interface()); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				te.Field = strings.TrimSuffix(name+"."+te.Field, ".")
			}
			return err
		}
	}
	return nil
}

// callParamsShape is parseCallParams' params struct, with a skipped field
// and one no member can fill.
type callParamsShape struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      map[string]any  `json:"_meta"`
	Skipped   string          `json:"-"`
	Untagged  string
}

type metaShape struct {
	Meta map[string]json.RawMessage `json:"_meta"`
	ID   json.RawMessage            `json:"requestId"`
}

// FuzzParseUnchanged holds decodeParams to its reference reading
// (jsonrpc's FuzzParseUnchanged does the envelope, on the same seeds).
func FuzzParseUnchanged(f *testing.F) {
	for _, s := range append([]string{benchCall}, jsontest.ParseSeeds[1:]...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var gc, wc callParamsShape
		if err, werr := decodeParams(raw, &gc), referenceDecodeParams(raw, &wc); !jsontest.SameError(err, werr) || !reflect.DeepEqual(gc, wc) {
			t.Fatalf("decodeParams(%q) = %+v, %v; want %+v, %v", raw, gc, err, wc, werr)
		}
		var gm, wm metaShape
		if err, werr := decodeParams(raw, &gm), referenceDecodeParams(raw, &wm); !jsontest.SameError(err, werr) || !reflect.DeepEqual(gm, wm) {
			t.Fatalf("decodeParams(%q) = %+v, %v; want %+v, %v", raw, gm, err, wm, werr)
		}
	})
}

// FuzzEncodeUnchanged: a tool result reply is written, byte for byte, as
// json.Marshal writes the response, whatever its id and text.
func FuzzEncodeUnchanged(f *testing.F) {
	for _, s := range [][2]string{{`42`, "ok"}, {`"a-1"`, "<b>&"}, {`"a b"`, "\u2028"}, {`-1.5e3`, "\xff"}, {`"<"`, ""}, {`"\u00e9"`, "x"}, {"\"\xe2\x80\xa8\"", "y"}} {
		f.Add([]byte(s[0]), s[1], false)
	}
	f.Fuzz(func(t *testing.T, id []byte, text string, isError bool) {
		if len(id) == 0 {
			id = nil // no id: null
		} else if _, err := jsonrpc.ParseID(id); err != nil || !json.Valid(id) || len(bytes.TrimSpace(id)) != len(id) {
			return // not an id a request could carry (ReadMembers hands values over without the space around them)
		}
		res := &gateway.ToolResult{Content: []map[string]any{{"type": "text", "text": text}}, IsError: isError,
			StructuredContent: map[string]any{"text": text, "n": json.Number("9007199254740993")}}
		resp := jsonrpc.Response{JSONRPC: "2.0", ID: id, Result: res}
		want, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		if got := (&Transport{}).encode(context.Background(), resp); !bytes.Equal(got, want) {
			t.Fatalf("reply\n got %s\nwant %s", got, want)
		}
	})
}

// TestReadBodyBytes: the body is read whole whatever its declared length
// (exact, shorter, longer, unknown), as io.ReadAll reads it, errors too.
func TestReadBodyBytes(t *testing.T) {
	body := strings.Repeat("x", 1000)
	for _, length := range []int64{1000, 0, 1, 999, 1001, 5000, -1} {
		got, err := readBodyBytes(strings.NewReader(body), length, 4096)
		if err != nil || string(got) != body {
			t.Errorf("declared %d: read %d bytes, %v", length, len(got), err)
		}
	}
	broken := io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(errors.New("reset")))
	if got, err := readBodyBytes(broken, 10, 4096); err == nil || string(got) != "abc" {
		t.Errorf("a failing body read as %q, %v", got, err)
	}
}
