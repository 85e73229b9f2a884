package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
)

// decode reads r's body (at most MaxBodyBytes) into dst, a pointer to a
// struct or map. The body must be one JSON object; unknown fields are
// rejected by name, listing the accepted ones.
func (h *handler) decode(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return invalid("request body is larger than %d bytes; send a smaller JSON object", tooBig.Limit)
		}
		return invalid("request body could not be read; send it again")
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return invalid("request body is empty; send a JSON object")
	}
	if trimmed[0] != '{' {
		return invalid("request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err, dst)
	}
	if err := dec.Decode(&json.RawMessage{}); err != io.EOF {
		return invalid("request body holds more than one JSON value; send exactly one object")
	}
	return nil
}

// decodeError explains a json decoding failure in terms of the body.
func decodeError(err error, dst any) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return invalid("request body is not valid JSON (error at byte %d); send a JSON object", syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("request body ends in the middle of a JSON value; send a complete object")
	case errors.As(err, &typ) && typ.Field != "":
		return invalid("field %q must be %s, not %s", typ.Field, jsonKind(typ.Type), typ.Value)
	case errors.As(err, &typ):
		return invalid("values in this object must be %s, not %s", jsonKind(typ.Type), typ.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return invalid("unknown field %s; accepted fields: %s", clip(name), strings.Join(fieldNames(dst), ", "))
	}
	return invalid("request body could not be decoded: %s", clip(err.Error()))
}

// jsonKind names the JSON shape expected for a Go type.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// fieldNames lists the json names of dst's struct fields.
func fieldNames(dst any) []string {
	t := reflect.TypeOf(dst)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	names := make([]string, 0, t.NumField())
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// optional is a JSON field that tells "absent" from "null" from a value,
// for fields where null has a meaning of its own (e.g. profile_id: null
// clears the default profile).
type optional[T any] struct {
	Set   bool // the field was present
	Null  bool // the field was null
	Value T
}

// UnmarshalJSON records presence; encoding/json calls it for null too.
func (o *optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Null = true
		return nil
	}
	return json.Unmarshal(b, &o.Value)
}
