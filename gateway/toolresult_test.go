package gateway

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/mcpgate/mcpgate/gateway/internal/jsonw"
)

// sameAsMarshal fails t unless marshalValue(v) is json.Marshal(v), bytes
// and error alike.
func sameAsMarshal(t *testing.T, v any) {
	t.Helper()
	got, err := marshalValue(v)
	want, werr := json.Marshal(v)
	if !bytes.Equal(got, want) || (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
		t.Fatalf("marshalValue(%#v) = %q, %v; json.Marshal: %q, %v", v, got, err, want, werr)
	}
}

// marshalResult is what ToolResult.MarshalJSON wrote by reflection.
func marshalResult(r ToolResult) ([]byte, error) {
	sc, err := r.StructuredJSON()
	if err != nil || len(r.StructuredContent) == 0 {
		sc = nil
	}
	return json.Marshal(struct {
		Content           []map[string]any `json:"content"`
		StructuredContent json.RawMessage  `json:"structuredContent,omitempty"`
		IsError           bool             `json:"isError,omitempty"`
	}{r.Content, sc, r.IsError})
}

func TestMarshalValueIsMarshal(t *testing.T) {
	cycle := map[string]any{}
	cycle["self"] = cycle
	for _, v := range []any{
		nil, map[string]any(nil), []any(nil), map[string]any{}, []any{},
		map[string]any{"b": 1, "a": int64(-2), "c": uint8(3), "d": []string{"x"}, "e": struct{ N int }{4}, "f": float32(0.1)},
		map[string]any{"s": "a\xffb<&>\u2028\u2029\x00\x1f\t\"\\é😀"},
		[]any{json.Number(""), json.Number("-0.5e+10"), 1e21, 1e-7, 123456789.0, -0.0, 5e-324, math.MaxFloat64},
		json.Number("1 "), json.Number("0x1"), math.NaN(), math.Inf(-1), []any{math.Inf(1)}, cycle, deep(jsonw.MaxDepth + 3),
		map[string]any{"z": map[string]any{"y": []any{true, false, nil}}},
	} {
		sameAsMarshal(t, v)
	}
	for _, n := range []string{"0", "-0.0e-0", "12.5E+3", "1.", "1.e5", "-", "01", "1e", "1e+", ".5", "+1", "1x", "1.5.5", "-a"} {
		sameAsMarshal(t, json.Number(n))
	}
	for _, r := range []ToolResult{
		{}, {Content: []map[string]any{}}, {IsError: true, Content: []map[string]any{{"type": "text", "text": "<b>"}}},
		{StructuredContent: map[string]any{"n": json.Number("9007199254740993"), "x": []any{"a"}}},
		{StructuredContent: map[string]any{}, Content: []map[string]any{nil, {"bad": math.NaN()}}},
	} {
		got, err := r.MarshalJSON()
		want, werr := marshalResult(r)
		if !bytes.Equal(got, want) || (err == nil) != (werr == nil) {
			t.Errorf("MarshalJSON(%+v) = %q, %v; by reflection %q, %v", r, got, err, want, werr)
		}
	}
}

func deep(n int) any {
	var v any = "leaf"
	for range n {
		v = map[string]any{"k": []any{v}}
	}
	return v
}

// FuzzMarshalValue: for any JSON value decoded either way (float64 or
// json.Number numbers), marshalValue writes json.Marshal's bytes, and a
// result holding it encodes as it did by reflection.
func FuzzMarshalValue(f *testing.F) {
	for _, s := range []string{
		`{"apps":[{"id":"app-1","name":"<App> & co","builds":12,"ratio":0.25}],"count":20}`,
		`["\u2028\u2029\ud800","\u00e9\ud83d\ude00",1e21,1e-7,-0,1.5e300,123456789012345678]`,
		"{\"s\":\"\xff\xfe\",\"\xed\xa0\x80\":null,\"t\":true}", `{}`, `[]`, `null`, `"x"`, `0.1`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var plain any
		if json.Unmarshal(raw, &plain) != nil {
			return
		}
		sameAsMarshal(t, plain)
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var exact any
		if dec.Decode(&exact) != nil {
			return
		}
		sameAsMarshal(t, exact)
		obj, _ := exact.(map[string]any)
		r := ToolResult{Content: []map[string]any{{"type": "text", "text": string(raw)}, obj}, StructuredContent: obj}
		got, err := r.MarshalJSON()
		want, werr := marshalResult(r)
		if !bytes.Equal(got, want) || (err == nil) != (werr == nil) {
			t.Fatalf("MarshalJSON of %q = %q, %v; by reflection %q, %v", raw, got, err, want, werr)
		}
	})
}
